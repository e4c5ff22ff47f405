import { OpenAiError } from '../../errors/openai-error';
import { validateBody } from '../../request-pipes';
import type { BatchLineDoor } from '../common/batch-line-door';
import { ChatCompletionFormatter } from './chat-formatter';
import { PROMPT_PARAM } from './chat-replies';
import { toChatJob } from './chat-job.mapper';
import { ChatCompletionRequestDto } from './chat-request.dto';

/**
 * The chat door's lines in a batch: a body checked as `POST /v1/chat/completions` checks a
 * request (the same pipes, DTO and mapper); an answer as the `chat.completion` it would have got.
 * A batch answers whole bodies: `stream` and `store` are refused by name.
 */
export const chatBatchLines: BatchLineDoor = {
  url: '/v1/chat/completions',
  promptParam: PROMPT_PARAM,

  async lineJob(body, requestId, acceptedAt, startDeadline) {
    const request = await validateBody(body, ChatCompletionRequestDto);
    if (request.stream === true)
      throw OpenAiError.invalidRequest('A batch answers whole bodies: stream is not supported in a batch line.', 'stream', 'unsupported_parameter');
    if (request.store === true)
      throw OpenAiError.invalidRequest('store is not supported in a batch line; its answers are in the output file.', 'store', 'unsupported_parameter');
    const job = toChatJob(request, requestId, acceptedAt, 0);
    return { ...job, schedule: { ...job.schedule, startDeadline } };
  },

  answerBody(answer, requestId, body, created) {
    const formatter = new ChatCompletionFormatter(requestId, String(body.model), created, false, body.logprobs === true);
    return formatter.completion(answer.parts, answer, typeof body.n === 'number' ? body.n : 1);
  },
};
