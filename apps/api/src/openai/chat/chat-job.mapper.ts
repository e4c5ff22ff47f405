import type { GenerateJobInput, JsonValue, LogprobsOptions, PromptCachePolicy, ResponseFormat, ToolChoice, ToolOptions } from '@app/contracts';
import { OpenAiError } from '../../errors/openai-error';
import type { ChatCompletionRequestDto } from './chat-request.dto';
import { toChatMessages } from '../common/chat-messages';
import { breakpointOffsets } from '../common/message-content.validator';
import { stopList } from '../common/stop-sequences.validator';
import { logitBiasList } from '../common/field-validators';
import { generationJob, samplingSeed } from '../common/generation-job';
import { checkedSchema } from '../common/schema-checks';

const invalid = (message: string, param: string): OpenAiError => OpenAiError.invalidRequest(message, param, 'invalid_value');

function toolOptions(request: ChatCompletionRequestDto): ToolOptions | undefined {
  const { tools, tool_choice: choice } = request;
  if (!tools || tools.length === 0) {
    if (choice !== undefined && choice !== 'none') throw invalid(`'tool_choice' is only allowed when 'tools' are specified.`, 'tool_choice');
    return undefined;
  }
  const names = new Set<string>();
  const definitions = tools.map(({ function: fn }, index) => {
    const param = `tools[${index}].function`;
    if (names.has(fn.name)) throw invalid(`Two tools are named '${fn.name}'.`, `${param}.name`);
    names.add(fn.name);
    const parameters = (fn.parameters ?? { type: 'object', properties: {} }) as JsonValue;
    if ((parameters as { type?: unknown }).type !== 'object')
      throw invalid(`A function's parameters must be a JSON Schema of type 'object'.`, `${param}.parameters`);
    return {
      name: fn.name,
      description: fn.description,
      parameters: checkedSchema(parameters, `${param}.parameters`, fn.strict === true, 'invalid_function_parameters'),
    };
  });
  let toolChoice: ToolChoice;
  if (choice === undefined || choice === 'auto') toolChoice = { type: 'auto' };
  else if (choice === 'none' || choice === 'required') toolChoice = { type: choice };
  else {
    if (!names.has(choice.function.name)) throw invalid(`'tool_choice' names '${choice.function.name}', which is not among the tools.`, 'tool_choice');
    toolChoice = { type: 'function', name: choice.function.name };
  }
  return { definitions, choice: toolChoice, parallel: request.parallel_tool_calls ?? true };
}

function responseFormat(request: ChatCompletionRequestDto): ResponseFormat {
  const format = request.response_format;
  if (!format || format.type === 'text') return { type: 'text' };
  if (format.type === 'json_object') return { type: 'json_object' };
  const { name, schema, strict } = format.json_schema;
  return { type: 'json_schema', name, schema: checkedSchema((schema ?? {}) as JsonValue, 'response_format', strict === true, 'invalid_json_schema') };
}

function maxTokens(request: ChatCompletionRequestDto): number | undefined {
  const { max_tokens: legacy, max_completion_tokens: current } = request;
  if (legacy !== undefined && current !== undefined && legacy !== current) {
    throw OpenAiError.invalidRequest('max_tokens and max_completion_tokens disagree; send only max_completion_tokens.', 'max_tokens', 'invalid_value');
  }
  return current ?? legacy;
}

/** `logprobs` and `top_logprobs` as OpenAI reads them: the count only together with `logprobs: true`. */
function logprobsOptions(request: ChatCompletionRequestDto): LogprobsOptions | undefined {
  if (request.top_logprobs !== undefined && request.logprobs !== true) throw invalid(`'top_logprobs' requires 'logprobs' to be true.`, 'top_logprobs');
  if (request.logprobs !== true) return undefined;
  return { top: request.top_logprobs ?? 0 };
}

/** OpenAI's prompt caching as the worker keeps prompts: absent for the default (the whole conversation). */
function promptCachePolicy(request: ChatCompletionRequestDto): PromptCachePolicy | undefined {
  const implicit = request.prompt_cache_options?.mode !== 'explicit';
  // Every earlier breakpoint marks a prefix of the latest one, which is kept with it.
  const breakpoint = request.messages
    .flatMap(({ content }, message) => (content ? breakpointOffsets(content).map((offset) => ({ message, offset })) : []))
    .at(-1);
  if (implicit && !breakpoint) return undefined;
  return { implicit, ...(breakpoint ? { breakpoint } : {}) };
}

/** A validated request becomes the job a worker runs, with OpenAI's defaults filled in. */
export function toChatJob(request: ChatCompletionRequestDto, completionId: string, acceptedAt: number, maxQueueWaitMs: number): GenerateJobInput {
  return generationJob({
    id: completionId,
    request,
    tools: toolOptions(request),
    responseFormat: responseFormat(request),
    logprobs: logprobsOptions(request),
    promptCache: promptCachePolicy(request),
    messages: toChatMessages(request.messages),
    sampling: {
      maxTokens: maxTokens(request),
      stop: stopList(request.stop),
      seed: samplingSeed(request.seed),
      logitBias: logitBiasList(request.logit_bias),
    },
    choices: request.n,
    reasoningEffort: request.reasoning_effort,
    conflictParams: { format: 'response_format', logprobs: 'logprobs' },
    acceptedAt,
    maxQueueWaitMs,
  });
}
