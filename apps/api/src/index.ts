/**
 * The API's public module (`@app/api`): the pieces tests and benchmarks drive directly (stored
 * files, batch keys and states, the waiting limit). Everything else is the API's own.
 */
export { isFinished, lineCompletionId, batchKeys } from './batches/batch-object';
export { newFileId } from './files/file-object';
export type { FileRecord } from './files/file-object';
export { FileRecords } from './files/file-records';
export { FilesService } from './files/files.service';
export { LocalFileStorage } from './files/local-file-storage';
export { WaitingLimit } from './pipeline/waiting-limit';
export type { ModelRegistry } from './models/model-registry';
export { ConversationStore, conversationKeys } from './openai/responses/conversation-store';
export type { ConversationRecord } from './openai/responses/conversation-store';
export { ConversationLocks } from './openai/responses/conversation-locks';
export { LoopStepLogs, LoopTakenOver } from './openai/responses/mcp-loop-steps';
