import { callsAllowed, parallelCallsAllowed } from '@app/contracts';
import type { ToolOptions } from '@app/contracts';
import { callsGrammar, exactTokens } from '@app/grammar';
import type { CallSyntax, SyntaxSpelling } from '@app/grammar';
import type { ChatModelFunctions, ChatWrapper, GbnfJsonSchema, LlamaModel, LlamaText } from 'node-llama-cpp' with { 'resolution-mode': 'import' };
import { MAX_PARALLEL_CALLS } from '../llama-tool-calls';

/** llama.cpp's grammar trigger of the kind "a word in the text" (COMMON_GRAMMAR_TRIGGER_TYPE_WORD). */
const TRIGGER_WORD = 1;

/** A chat template's marker as the text llama-server streams for it (a marker it opens by itself has none). */
export const markText = (mark: string | LlamaText | object | undefined): string =>
  typeof mark === 'string' ? mark : mark !== undefined && 'values' in mark ? mark.toString() : '';

/**
 * How the model's chat template writes a call (node-llama-cpp's settings for it), as text, and
 * how the calls' grammar spells the suffix that closes one: as the exact tokens the model's
 * tokenizer makes of it (special tokens parsed), as node-llama-cpp writes it. A grammar of text
 * alone lets the model spell a marker such as `</tool_call>` a character at a time, which a model
 * reads as something else: the tiny model then went on with another call (14 of 50 seeds)
 * instead of ending its turn.
 */
export function callSyntax(chatWrapper: ChatWrapper, model: LlamaModel): { syntax: CallSyntax; parallel: boolean; spell: SyntaxSpelling } {
  const { call, parallelism } = chatWrapper.settings.functions;
  return {
    syntax: {
      prefix: markText(call.prefix),
      paramsPrefix: markText(call.paramsPrefix),
      suffix: markText(call.suffix),
      betweenCalls: markText(parallelism?.call.betweenCalls),
    },
    parallel: parallelism !== undefined,
    spell: exactTokens((text) => model.tokenize(text, true).map((id) => ({ id, text: model.detokenize([id], true) }))),
  };
}

/** What a job's tools ask of one generation: the functions its prompt shows, and the request fields that enforce the calls. */
export interface OfferedCalls {
  functions: ChatModelFunctions;
  /** tool_choice `required` or a named function: the answer is calls only, the first call's prefix ending the prompt. */
  mustCall: boolean;
  /** The calls' grammar: from the first token when they must be made, else from the call prefix on (lazy). */
  fields: { grammar: string; grammar_lazy?: true; grammar_triggers?: Array<{ type: number; value: string }> };
}

/**
 * The functions the model may call now (none, all, or the one `tool_choice` names), shown to it
 * with their schemas as sent, and their arguments enforced by the project's grammar in the
 * template's call syntax.
 */
export function offeredCalls(tools: ToolOptions | undefined, { syntax, parallel, spell }: ReturnType<typeof callSyntax>): OfferedCalls | undefined {
  if (!callsAllowed(tools)) return undefined;
  const { choice } = tools;
  const offered = choice.type === 'function' ? tools.definitions.filter((tool) => tool.name === choice.name) : tools.definitions;
  const functions: ChatModelFunctions = Object.fromEntries(
    offered.map((tool) => [
      tool.name,
      { ...(tool.description !== undefined ? { description: tool.description } : {}), params: tool.parameters as GbnfJsonSchema },
    ]),
  );
  const maxCalls = parallel && parallelCallsAllowed(tools) ? MAX_PARALLEL_CALLS : 1;
  // A call that must be made starts in the prompt, as on the llama engine: the model does not spend tokens spelling its prefix.
  const mustCall = choice.type !== 'auto';
  const grammar = callsGrammar(
    offered.map((tool) => ({ name: tool.name, schema: tool.parameters })),
    syntax,
    { maxCalls, prefixGiven: mustCall, spell },
  );
  return {
    functions,
    mustCall,
    fields: mustCall ? { grammar } : { grammar, grammar_lazy: true, grammar_triggers: [{ type: TRIGGER_WORD, value: syntax.prefix }] },
  };
}
