import type { Multipart } from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import { Readable } from 'node:stream';
import { OpenAiError } from '../errors/openai-error';
import { isFilePurpose } from './file-object';
import type { FilePurpose } from './file-object';
import type { ReceivedBody } from './files.service';

/** The purposes a client may upload; files of other purposes are the service's own (`batch_output`). */
const UPLOAD_PURPOSES: readonly FilePurpose[] = ['batch'];
const MAX_FILENAME_LENGTH = 512;

export interface UploadForm {
  purpose: FilePurpose;
  received: ReceivedBody;
}

/** How the form's parts reach storage; FilesService.receive and discard in the API. */
export interface UploadSink {
  receive(body: Readable, filename: string): Promise<ReceivedBody>;
  discard(received: ReceivedBody): Promise<void>;
}

const FORM_FIELDS = 'Send the file as multipart/form-data with the fields `file` (the file) and `purpose` (`batch`).';

/** What @fastify/multipart and busboy report, in OpenAI's shape and this API's words. */
export function toUploadError(error: unknown): OpenAiError {
  if (error instanceof OpenAiError) return error;
  switch ((error as { code?: string } | undefined)?.code) {
    case 'FST_REQ_FILE_TOO_LARGE':
      return OpenAiError.tooLarge('The file is larger than this service accepts.', 'file');
    case 'FST_FILES_LIMIT':
      return OpenAiError.invalidRequest('Send one file per upload.', 'file');
    case 'FST_PARTS_LIMIT':
    case 'FST_FIELDS_LIMIT':
    case 'FST_PROTO_VIOLATION':
      return OpenAiError.invalidRequest(`The form has fields this API does not take. ${FORM_FIELDS}`);
    case 'FST_INVALID_MULTIPART_CONTENT_TYPE':
      return OpenAiError.invalidRequest(FORM_FIELDS);
    default:
      // Malformed multipart data, or a body cut short (FST_MP_PREMATURE_CLOSE).
      return OpenAiError.invalidRequest(`The request body is not a complete multipart/form-data form. ${FORM_FIELDS}`);
  }
}

/** The file part's bytes, with any failure of the form underneath them reported as a 400. */
function fileBody(file: Readable): Readable {
  return Readable.from(
    (async function* () {
      try {
        for await (const chunk of file) yield chunk as Buffer;
      } catch (error) {
        throw toUploadError(error);
      }
    })(),
    { objectMode: false },
  );
}

function uploadPurpose(value: unknown, truncated: boolean): FilePurpose {
  if (!truncated && UPLOAD_PURPOSES.some((purpose) => purpose === value)) return value as FilePurpose;
  const named = typeof value === 'string' && value.length <= 64 ? `'${value}'` : 'that value';
  const why = isFilePurpose(value)
    ? `files of purpose ${named} are not supported here; upload batch input files with purpose 'batch'.`
    : `expected 'batch', but got ${named}.`;
  throw OpenAiError.invalidRequest(`Invalid value for 'purpose': ${why}`, 'purpose', 'invalid_value');
}

/**
 * Reads an upload's form as it arrives: `purpose` and one `file`, in either order. The file is
 * streamed into storage (checked as a batch input file) as soon as it comes, before `purpose`
 * may be known; when the form then turns out to be wrong, the stored body is discarded. A file
 * that fails its checks is reported as such even if a `purpose` after it would also be wrong.
 *
 * On any refusal the rest of the form is no longer parsed: the request is unpiped from the
 * parser, and the 413/400 goes out once the rest of the upload has been read and thrown away
 * (http/oversized-upload.ts), so that clients still uploading receive it.
 */
export async function readUploadForm(request: FastifyRequest, maxBytes: number, sink: UploadSink): Promise<UploadForm> {
  if (!request.isMultipart()) throw OpenAiError.invalidRequest(FORM_FIELDS);
  let purpose: FilePurpose | undefined;
  let received: ReceivedBody | undefined;
  let current: Multipart | undefined;
  /** Failures while storing are the storage's (a 500), not the form's; the form's own arrive as OpenAiErrors. */
  let storing = false;
  try {
    // busboy stops a file at one byte over the limit; the JSONL check refuses that byte with its line number.
    const parts = request.parts({ limits: { fileSize: maxBytes + 1, files: 1, fields: 4, parts: 6, fieldSize: 1024, fieldNameSize: 128 } });
    for await (const part of parts) {
      current = part;
      if (part.fieldname === 'purpose' && part.type === 'field') {
        purpose = uploadPurpose(part.value, part.valueTruncated);
      } else if (part.fieldname === 'file' && part.type === 'file') {
        if (part.filename.length > MAX_FILENAME_LENGTH)
          throw OpenAiError.invalidRequest(`The file name is longer than ${MAX_FILENAME_LENGTH} characters.`, 'file');
        storing = true;
        received = await sink.receive(fileBody(part.file), part.filename || 'file');
        storing = false;
      } else if (part.fieldname === 'file') {
        throw OpenAiError.invalidRequest('`file` must be a file: a form part with a filename.', 'file');
      } else {
        throw OpenAiError.invalidRequest(`Unrecognized request argument supplied: ${part.fieldname}`, part.fieldname);
      }
    }
  } catch (error) {
    if (current?.type === 'file') current.file.destroy();
    request.raw.unpipe();
    if (received) await sink.discard(received);
    throw storing ? error : toUploadError(error);
  }
  if (!received) throw OpenAiError.invalidRequest(`Missing required parameter: 'file'. ${FORM_FIELDS}`, 'file');
  if (!purpose) {
    await sink.discard(received);
    throw OpenAiError.invalidRequest(`Missing required parameter: 'purpose'. ${FORM_FIELDS}`, 'purpose');
  }
  return { purpose, received };
}
