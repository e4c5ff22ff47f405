import { parallelCallsAllowed } from '@app/contracts';
import type { ChatMessage, ResponseFormat, SamplingParams, ToolChoice } from '@app/contracts';
import type OpenAI from 'openai';
import type { GenerationRequest } from '../inference-engine';

type ChatCompletionParams = OpenAI.Chat.ChatCompletionCreateParamsStreaming;
type CompletionParams = OpenAI.CompletionCreateParamsStreaming;

/**
 * The sampling settings in OpenAI's names, those left at OpenAI's defaults too, so the upstream
 * cannot apply defaults of its own (vLLM reads a model's generation_config otherwise).
 * `max_tokens` rather than `max_completion_tokens`, which older vLLM, TGI and llama.cpp servers ignore.
 */
function samplingFields(sampling: SamplingParams) {
  return {
    temperature: sampling.temperature,
    top_p: sampling.topP,
    frequency_penalty: sampling.frequencyPenalty,
    presence_penalty: sampling.presencePenalty,
    seed: sampling.seed,
    ...(sampling.maxTokens !== undefined ? { max_tokens: sampling.maxTokens } : {}),
    ...(sampling.stop.length > 0 ? { stop: sampling.stop } : {}),
    ...(sampling.logitBias?.length ? { logit_bias: Object.fromEntries(sampling.logitBias.map(({ token, bias }) => [String(token), bias])) } : {}),
  };
}

export function toUpstreamMessage(message: ChatMessage): OpenAI.Chat.ChatCompletionMessageParam {
  switch (message.role) {
    case 'system':
    case 'user':
      return { role: message.role, content: message.content };
    case 'tool':
      return { role: 'tool', content: message.content, tool_call_id: message.toolCallId };
    case 'assistant': {
      // What it thought, where reasoning models' servers read it back (not in OpenAI's own types).
      const reasoning = message.reasoning ? { reasoning_content: message.reasoning } : {};
      if (!message.toolCalls?.length) return { role: 'assistant', content: message.content, ...reasoning };
      return {
        ...reasoning,
        role: 'assistant',
        // OpenAI's own shape for a turn that only called: no text at all rather than an empty one.
        content: message.content === '' ? null : message.content,
        tool_calls: message.toolCalls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } })),
      };
    }
  }
}

function toUpstreamToolChoice(choice: ToolChoice): OpenAI.Chat.ChatCompletionToolChoiceOption {
  return choice.type === 'function' ? { type: 'function', function: { name: choice.name } } : choice.type;
}

function toUpstreamResponseFormat(format: ResponseFormat): ChatCompletionParams['response_format'] {
  switch (format.type) {
    case 'text':
      return undefined;
    case 'json_object':
      return { type: 'json_object' };
    case 'json_schema':
      return { type: 'json_schema', json_schema: { name: format.name, schema: format.schema, strict: true } };
  }
}

/** The upstream chat request for one job: every option the job carries, in OpenAI's names, streamed with usage. */
export function toUpstreamRequest(
  model: string,
  { messages, sampling, tools, responseFormat, logprobs, thinking }: Omit<GenerationRequest, 'signal' | 'output'>,
): ChatCompletionParams {
  const responseFormatParam = responseFormat && toUpstreamResponseFormat(responseFormat);
  return {
    model,
    messages: messages.map(toUpstreamMessage),
    stream: true,
    stream_options: { include_usage: true },
    ...samplingFields(sampling),
    ...(tools
      ? {
          tools: tools.definitions.map((tool) => ({
            type: 'function' as const,
            function: { name: tool.name, ...(tool.description !== undefined ? { description: tool.description } : {}), parameters: tool.parameters },
          })),
          tool_choice: toUpstreamToolChoice(tools.choice),
          parallel_tool_calls: parallelCallsAllowed(tools),
        }
      : {}),
    ...(responseFormatParam ? { response_format: responseFormatParam } : {}),
    ...(logprobs ? { logprobs: true, top_logprobs: logprobs.top } : {}),
    // Thinking off, as OpenAI names it (vLLM, llama.cpp's server and this service read it).
    ...(thinking === false ? { reasoning_effort: 'none' as const } : {}),
  };
}

/** The upstream legacy completions request for one plain prompt (`/v1/completions`): its prompt, echo and suffix, streamed with usage. */
export function toUpstreamCompletionRequest(model: string, { prompt, sampling, logprobs }: Omit<GenerationRequest, 'signal' | 'output'>): CompletionParams {
  const [input] = prompt!.inputs;
  return {
    model,
    prompt: input,
    stream: true,
    stream_options: { include_usage: true },
    ...samplingFields(sampling),
    ...(prompt!.echo ? { echo: true } : {}),
    ...(prompt!.suffix !== undefined ? { suffix: prompt!.suffix } : {}),
    ...(logprobs ? { logprobs: logprobs.top } : {}),
  };
}
