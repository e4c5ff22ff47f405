import type { JobInputOf } from '@app/contracts';
import { OpenAiError } from '../../errors/openai-error';
import { MAX_MESSAGE_CHARS } from '../common/request-limits';
import type { RerankDocument, RerankRequestDto } from './rerank-request.dto';

/** A document's text, whichever shape it came in. */
export const documentText = (document: RerankDocument): string => (typeof document === 'string' ? document : document.text);

/** The `rank` job a rerank request becomes; no documents, or an empty or overlong one, is refused naming it. */
export function toRankJob(request: RerankRequestDto, id: string, acceptedAt: number, maxQueueWaitMs: number): JobInputOf<'rank'> {
  const documents = request.documents.map(documentText);
  if (documents.length === 0) throw OpenAiError.invalidRequest(`'documents' must hold at least one document.`, 'documents', 'invalid_value');
  for (const [index, text] of documents.entries()) {
    const param = `documents[${index}]`;
    if (text.length === 0) throw OpenAiError.invalidRequest(`'${param}' is empty: every document must hold text.`, param, 'invalid_value');
    if (text.length > MAX_MESSAGE_CHARS)
      throw OpenAiError.invalidRequest(`'${param}' is longer than ${MAX_MESSAGE_CHARS} characters.`, param, 'string_above_max_length');
  }
  return {
    kind: 'rank',
    id,
    model: request.model,
    options: { query: request.query, documents },
    schedule: { acceptedAt, startDeadline: acceptedAt + maxQueueWaitMs },
  };
}
