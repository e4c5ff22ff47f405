import { validateBody } from '../../request-pipes';
import type { BatchLineDoor } from '../common/batch-line-door';
import { EmbeddingsFormatter } from './embeddings-formatter';
import { inputsOf, toEmbeddingJob } from './embeddings-job.mapper';
import { EmbeddingsRequestDto } from './embeddings-request.dto';
import { PROMPT_PARAM } from './embeddings-replies';

/**
 * The embeddings door's lines in a batch (OpenAI's Batch API takes `/v1/embeddings`): a body
 * checked as `POST /v1/embeddings` checks a request; an answer as the list it would have got.
 */
export const embeddingsBatchLines: BatchLineDoor = {
  url: '/v1/embeddings',
  promptParam: PROMPT_PARAM,

  async lineJob(body, requestId, acceptedAt, startDeadline) {
    const job = toEmbeddingJob(await validateBody(body, EmbeddingsRequestDto), requestId, acceptedAt, 0);
    return { ...job, schedule: { ...job.schedule, startDeadline } };
  },

  answerBody(answer, _requestId, body) {
    // The line was checked when it was queued: its body is a request the door took.
    const request = body as unknown as EmbeddingsRequestDto;
    const formatter = new EmbeddingsFormatter(request.model, inputsOf(request.input).length, request.encoding_format ?? 'float', request.normalize ?? true);
    return formatter.body(answer.parts, answer.usage);
  },
};
