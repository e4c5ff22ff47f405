import { isRecord } from '@app/contracts';
import type { JsonValue, ToolDefinition } from '@app/contracts';
import { checkedSchema } from '../common/schema-checks';
import { invalid } from './item-fields';

/** A custom tool's `format` as the Response object echoes it. */
export type CustomToolFormat = { type: 'text' } | { type: 'grammar'; syntax: 'regex' | 'lark'; definition: string };

/** A `custom` tool as the Response object echoes it. */
export interface CustomToolEcho {
  type: 'custom';
  name: string;
  description?: string;
  format: CustomToolFormat;
}

/** The one argument a custom tool is offered with: the model writes its free-form input as this JSON string. */
export const CUSTOM_INPUT = 'input';

/**
 * A regex grammar as the whole input must match it. OpenAI's grammars match the whole input, a
 * JSON Schema `pattern` anywhere: one already anchored at both ends is kept, another is wrapped.
 */
function wholeInputPattern(definition: string): string {
  const anchored = definition.startsWith('^') && definition.endsWith('$') && !definition.endsWith('\\$');
  return anchored ? definition : `^(?:${definition})$`;
}

function customFormat(format: unknown, param: string): CustomToolFormat {
  if (format === undefined || format === null) return { type: 'text' };
  if (!isRecord(format)) throw invalid(`'${param}' must be an object.`, param);
  if (format.type === 'text') return { type: 'text' };
  if (format.type !== 'grammar') throw invalid(`'${param}.type' must be 'text' or 'grammar'.`, `${param}.type`);
  const { syntax, definition } = format;
  if (syntax !== 'regex' && syntax !== 'lark') throw invalid(`'${param}.syntax' must be 'regex' or 'lark'.`, `${param}.syntax`);
  if (typeof definition !== 'string' || definition === '') throw invalid(`'${param}.definition' must be a non-empty string.`, `${param}.definition`);
  return { type: 'grammar', syntax, definition };
}

/**
 * A custom tool (Codex's `apply_patch`, a client's own grammar tool) as the engine can offer it:
 * a function of one string argument, `input`, that the call's free-form text is written into.
 * A `regex` grammar is enforced on that string by the project's regex grammar (a pattern it cannot
 * express is a 400 naming the definition); a `lark` grammar is given to the model in the tool's
 * description and the input is free text, since no Lark translation exists here (README).
 */
export function customTool(tool: Record<string, unknown>, name: string, param: string): { definition: ToolDefinition; echo: CustomToolEcho } {
  const { description } = tool;
  if (description !== undefined && description !== null && typeof description !== 'string')
    throw invalid(`'${param}.description' must be a string.`, `${param}.description`);
  const format = customFormat(tool.format, `${param}.format`);
  const input: Record<string, JsonValue> = { type: 'string' };
  if (format.type === 'grammar' && format.syntax === 'regex') input.pattern = wholeInputPattern(format.definition);
  const schema: JsonValue = { type: 'object', properties: { [CUSTOM_INPUT]: input }, required: [CUSTOM_INPUT], additionalProperties: false };
  const lark = format.type === 'grammar' && format.syntax === 'lark' ? `\nThe input follows this Lark grammar:\n${format.definition}` : '';
  const text = `${typeof description === 'string' ? description : ''}${lark}`;
  const definition: ToolDefinition = {
    name,
    ...(text === '' ? {} : { description: text }),
    parameters: checkedSchema(schema, `${param}.format.definition`, true, 'invalid_value'),
  };
  const echo: CustomToolEcho = { type: 'custom', name, ...(typeof description === 'string' ? { description } : {}), format };
  return { definition, echo };
}

/** The arguments a replayed custom call is shown to the model with. */
export const customCallArguments = (input: string): string => JSON.stringify({ [CUSTOM_INPUT]: input });

/** A custom call's input from its complete arguments, or undefined when they are not one (a call cut short). */
export function customCallInput(args: string): string | undefined {
  try {
    const parsed: unknown = JSON.parse(args);
    return isRecord(parsed) && typeof parsed[CUSTOM_INPUT] === 'string' ? parsed[CUSTOM_INPUT] : undefined;
  } catch {
    return undefined;
  }
}

const ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };

/**
 * Reads a custom call's input out of its arguments as they stream (`{"input": "…`), so the
 * client gets `custom_tool_call_input.delta` events of the input's own text: each `feed` returns
 * the text decoded since the last, holding back an escape sequence until it is whole.
 */
export class CustomInputReader {
  private raw = '';
  private at = -1;
  private ended = false;

  feed(chunk: string): string {
    this.raw += chunk;
    if (this.at < 0) {
      const opening = /"input"\s*:\s*"/.exec(this.raw);
      if (!opening) return '';
      this.at = opening.index + opening[0].length;
    }
    let text = '';
    while (!this.ended && this.at < this.raw.length) {
      const char = this.raw[this.at];
      if (char === '"') {
        this.ended = true;
        break;
      }
      if (char !== '\\') {
        text += char;
        this.at++;
        continue;
      }
      const escape = this.raw[this.at + 1];
      if (escape === undefined) break;
      if (escape === 'u') {
        const hex = this.raw.slice(this.at + 2, this.at + 6);
        if (hex.length < 4) break;
        text += String.fromCharCode(parseInt(hex, 16));
        this.at += 6;
      } else {
        text += ESCAPES[escape] ?? escape;
        this.at += 2;
      }
    }
    return text;
  }
}
