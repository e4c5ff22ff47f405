import { callsAllowed, newToolCallId } from '@app/contracts';
import type { OutputSink, ToolCall, ToolOptions } from '@app/contracts';
import type { ChatWrapper, LlamaChatResponseFunctionCallParamsChunk, LlamaText } from 'node-llama-cpp' with { 'resolution-mode': 'import' };
import type { LlamaToolGrammars } from './llama-tool-grammars';

/** Most calls one answer may make when parallel tool calls are allowed. */
export const MAX_PARALLEL_CALLS = 8;

/**
 * node-llama-cpp has no "must call" option (tool_choice `required` or one named function): the
 * same template, with the context state saying "enter function calling" before the first token.
 */
export function mustCallWrapper(inner: ChatWrapper, callPrefix: LlamaText): ChatWrapper {
  const wrapper = Object.create(inner) as ChatWrapper;
  wrapper.generateContextState = (options) => {
    const { contextText, stopGenerationTriggers } = inner.generateContextState(options);
    return { contextText, stopGenerationTriggers, noPrefixTrigger: { type: 'functionCall', inject: callPrefix } };
  };
  return wrapper;
}

/** The functions the model may call now (none, all, or the one `tool_choice` names), with their argument grammars. */
export function callableFunctions(tools: ToolOptions | undefined, toolGrammars: LlamaToolGrammars): ReturnType<LlamaToolGrammars['acquire']> | undefined {
  if (!callsAllowed(tools)) return undefined;
  const { choice } = tools;
  const offered = choice.type === 'function' ? tools.definitions.filter((tool) => tool.name === choice.name) : tools.definitions;
  return toolGrammars.acquire(offered);
}

/**
 * Turns node-llama-cpp's parameter chunks into tool-call parts as they are generated: the first
 * chunk of each call gets an id and the function's name, every chunk the next piece of the
 * arguments. It also keeps the whole calls for the job's result.
 */
export class ToolCallStream {
  readonly calls: ToolCall[] = [];
  /**
   * Whitespace at the end of what each call has generated so far, not yet sent: the grammar lets
   * the model pad after the arguments' closing brace, which OpenAI's calls never carry. It is sent
   * when more arguments follow (whitespace inside a string stays), dropped when the call ends.
   */
  private readonly heldWhitespace: string[] = [];

  constructor(private readonly output: OutputSink) {}

  onParamsChunk = ({
    callIndex,
    functionName,
    paramsChunk,
  }: Pick<LlamaChatResponseFunctionCallParamsChunk, 'callIndex' | 'functionName' | 'paramsChunk'>): void => {
    let call = this.calls[callIndex];
    const opening = call === undefined;
    call ??= this.calls[callIndex] = { id: newToolCallId(), name: functionName, arguments: '' };
    const pending = (this.heldWhitespace[callIndex] ?? '') + paramsChunk;
    const fragment = pending.trimEnd();
    this.heldWhitespace[callIndex] = pending.slice(fragment.length);
    call.arguments += fragment;
    if (!opening && fragment === '') return;
    this.output.write({
      type: 'tool_call',
      choice: 0,
      index: callIndex,
      ...(opening ? { id: call.id, name: call.name } : {}),
      arguments: fragment,
    });
  };
}
