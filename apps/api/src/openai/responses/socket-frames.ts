import { OpenAiError } from '../../errors/openai-error';
import { MAX_JSON_DEPTH, findDepthViolation } from '../../http/json-depth';

/** A `response.create` frame as the create use case takes it: the body of `POST /v1/responses`, and whether to generate. */
export interface CreateFrame {
  type: 'response.create';
  body: Record<string, unknown>;
  /** `false`: a warm-up that prepares the response's state and runs no model. */
  generate: boolean;
  /** The WebSocket lane (`stream_id`): a lane's responses run one after another, lanes side by side. */
  streamId?: string;
}

/** `response.steer`: input for a running response, which this service does not take (SteerRefusal). */
export interface SteerFrame {
  type: 'response.steer';
  previousResponseId: string;
  input: unknown;
}

/**
 * Codex's acknowledgement that it has handled a response (`{type: "response.processed",
 * response_id}`, sent on a reused connection after each turn): it expects no answer, and an
 * `error` event would be read as its next turn's failure.
 */
export interface ProcessedFrame {
  type: 'response.processed';
}

export type ClientFrame = CreateFrame | ProcessedFrame | SteerFrame;

/** What the WebSocket carries besides the create body; `stream` is implied (the Agents SDK still sends `stream: true`). */
const ENVELOPE = new Set(['type', 'generate', 'stream', 'stream_id']);

/** The longest `stream_id` taken (it is echoed on every event of its lane). */
export const MAX_STREAM_ID_LENGTH = 128;

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Reads one client frame: JSON text within the body limit of `POST /v1/responses`, nested no
 * deeper than a body may be, of type `response.create` (not asking for `background`, which OpenAI
 * does not serve over a WebSocket either; its `stream_id` lane apart from the body),
 * `response.steer`, or Codex's `response.processed`. Throws the OpenAiError the client gets as
 * an `error` event.
 */
export function readClientFrame(data: Buffer, isBinary: boolean, limitBytes: number): ClientFrame {
  if (data.byteLength > limitBytes) throw OpenAiError.tooLarge(`The frame is ${data.byteLength} bytes; at most ${limitBytes} bytes are accepted.`);
  if (isBinary) throw OpenAiError.invalidRequest('Frames must be JSON text, not binary.', null, 'invalid_frame');
  const text = data.toString('utf8');
  const violation = findDepthViolation(text);
  if (violation) {
    throw OpenAiError.invalidRequest(
      `The frame is nested too deeply: at most ${MAX_JSON_DEPTH} levels of arrays and objects are accepted.`,
      violation.field,
      'nesting_too_deep',
    );
  }
  let frame: unknown;
  try {
    frame = JSON.parse(text);
  } catch {
    throw OpenAiError.invalidRequest('The frame is not valid JSON.', null, 'invalid_json');
  }
  if (!isObject(frame)) throw OpenAiError.invalidRequest('A frame must be a JSON object with a `type`.', 'type', 'invalid_value');
  if (frame.type === 'response.processed') return { type: 'response.processed' };
  if (frame.type === 'response.steer') {
    if (typeof frame.previous_response_id !== 'string' || frame.previous_response_id === '') {
      throw OpenAiError.invalidRequest(`'previous_response_id' must name the response to steer.`, 'previous_response_id', 'invalid_value');
    }
    return { type: 'response.steer', previousResponseId: frame.previous_response_id, input: frame.input };
  }
  if (frame.type !== 'response.create') {
    const named = typeof frame.type === 'string' ? `'${frame.type}'` : 'missing';
    throw OpenAiError.invalidRequest(
      `Unsupported event type ${named}: this WebSocket accepts 'response.create' and 'response.steer' (and 'response.processed').`,
      'type',
      'unknown_event_type',
    );
  }
  if (frame.generate !== undefined && typeof frame.generate !== 'boolean') {
    throw OpenAiError.invalidRequest(`Invalid value for 'generate': expected a boolean.`, 'generate', 'invalid_type');
  }
  if (frame.background !== undefined && frame.background !== null && frame.background !== false) {
    throw OpenAiError.invalidRequest(`'background' is not supported in WebSocket mode.`, 'background', 'invalid_value');
  }
  const streamId = frame.stream_id;
  if (streamId !== undefined && streamId !== null && (typeof streamId !== 'string' || streamId === '' || streamId.length > MAX_STREAM_ID_LENGTH)) {
    throw OpenAiError.invalidRequest(`'stream_id' must be a string of 1 to ${MAX_STREAM_ID_LENGTH} characters.`, 'stream_id', 'invalid_value');
  }
  const body = Object.fromEntries(Object.entries(frame).filter(([name]) => !ENVELOPE.has(name)));
  return { type: 'response.create', body, generate: frame.generate !== false, ...(typeof streamId === 'string' ? { streamId } : {}) };
}
