import type { FilePurpose } from './file-object';

/**
 * Redis key names of the Files API. They work on a Redis Cluster: a file's metadata is under
 * the file's own hash tag, and an owner's indexes share the owner's tag, so one MULTI updates
 * them all. Written by every API instance: never change these names once shipped.
 */

/** Hash of one file's metadata: owner, filename, bytes, purpose, created_at. */
export const fileKey = (id: string): string => `files:{${id}}`;

/** Sorted set of the owner's file ids in creation order (see file-records.ts). */
export const ownerFilesKey = (owner: string): string => `files:{owner:${owner}}:all`;

/** The same, for the owner's files of one purpose (`GET /v1/files?purpose=`). */
export const ownerPurposeFilesKey = (owner: string, purpose: FilePurpose): string => `files:{owner:${owner}}:purpose:${purpose}`;
