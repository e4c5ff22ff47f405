import { OpenAiError } from '../errors/openai-error';

export type ListOrder = 'asc' | 'desc';

/** OpenAI's cursor page parameters, read strictly from a query string: anything else is a 400 naming it. */
export interface CursorQuery {
  after?: string;
  limit: number;
  order: ListOrder;
  model?: string;
  /** `metadata[key]=value` pairs, all of which must match. */
  metadata: Record<string, string>;
}

const MAX_LIMIT = 100;

/** OpenAI's cursor page: what every list of this API answers (chat completions, files, batches, messages). */
export interface CursorPage<T extends { id: string }> {
  object: 'list';
  data: T[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

export function cursorPage<T extends { id: string }>(data: T[], hasMore: boolean): CursorPage<T> {
  return { object: 'list', data, first_id: data.at(0)?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: hasMore };
}

/** `accepts` names the filters the list has; `order` absent means a fixed order (the default). */
export function parseCursorQuery(
  query: Record<string, unknown>,
  accepts: { model?: boolean; metadata?: boolean; order?: boolean },
  defaultOrder: ListOrder = 'asc',
): CursorQuery {
  const parsed: CursorQuery = { limit: 20, order: defaultOrder, metadata: {} };
  for (const [name, value] of Object.entries(query)) {
    if (typeof value !== 'string') throw OpenAiError.invalidRequest(`'${name}' may be given once, as a string.`, name, 'invalid_value');
    const metadataKey = /^metadata\[(.+)\]$/.exec(name)?.[1];
    if (metadataKey !== undefined && accepts.metadata === true) {
      parsed.metadata[metadataKey] = value;
    } else if (name === 'after') {
      parsed.after = value;
    } else if (name === 'limit') {
      const limit = /^\d+$/.test(value) ? Number(value) : NaN;
      if (!(limit >= 1 && limit <= MAX_LIMIT)) throw OpenAiError.invalidRequest(`'limit' must be an integer from 1 to ${MAX_LIMIT}.`, 'limit', 'invalid_value');
      parsed.limit = limit;
    } else if (name === 'order' && accepts.order === true) {
      if (value !== 'asc' && value !== 'desc') throw OpenAiError.invalidRequest(`'order' must be 'asc' or 'desc'.`, 'order', 'invalid_value');
      parsed.order = value;
    } else if (name === 'model' && accepts.model === true) {
      parsed.model = value;
    } else {
      throw OpenAiError.invalidRequest(`Unrecognized request argument supplied: ${name}`, name, 'unknown_parameter');
    }
  }
  return parsed;
}
