import { OpenAiError } from '../../errors/openai-error';
import { validateBody } from '../../request-pipes';
import type { BatchLineDoor } from '../common/batch-line-door';
import { TextCompletionFormatter } from './text-completion-formatter';
import { promptsOf, toTextCompletionJob } from './text-completion-job.mapper';
import { PROMPT_PARAM } from './text-completion-replies';
import { TextCompletionRequestDto } from './text-completion-request.dto';

/**
 * The legacy completions door's lines in a batch (OpenAI's Batch API takes `/v1/completions`): a
 * body checked as `POST /v1/completions` checks a request; an answer as the `text_completion` it
 * would have got. A batch answers whole bodies: `stream` is refused by name.
 */
export const textCompletionBatchLines: BatchLineDoor = {
  url: '/v1/completions',
  promptParam: PROMPT_PARAM,

  async lineJob(body, requestId, acceptedAt, startDeadline) {
    const request = await validateBody(body, TextCompletionRequestDto);
    if (request.stream === true)
      throw OpenAiError.invalidRequest('A batch answers whole bodies: stream is not supported in a batch line.', 'stream', 'unsupported_parameter');
    const job = toTextCompletionJob(request, requestId, acceptedAt, 0);
    return { ...job, schedule: { ...job.schedule, startDeadline } };
  },

  answerBody(answer, requestId, body, created) {
    // The line was checked when it was queued: its body is a request the door took.
    const request = body as unknown as TextCompletionRequestDto;
    const formatter = new TextCompletionFormatter(requestId, request.model, created, request.logprobs !== undefined && request.logprobs !== null, false);
    return formatter.completion(answer.parts, (request.n ?? 1) * promptsOf(request.prompt).length, answer);
  },
};
