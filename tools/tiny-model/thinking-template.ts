import type { GgufMetadata } from './gguf-writer';

/**
 * A reasoning variant of the tiny model's chat template, after Qwen3's: the assistant turn opens
 * with a `<think>` segment (thinking models such as DeepSeek-R1 and QwQ open it in the prompt),
 * `enable_thinking: false` closes it empty before the answer (what `reasoning_effort: "none"`
 * asks for), and an assistant message's `reasoning_content` is rendered inside it.
 * node-llama-cpp reads a thought segment from this template (JinjaTemplateChatWrapper), so what the
 * model generates after the opened `<think>` arrives as thought, not as the answer.
 *
 * The weights are the plain model's: it never writes `</think>` itself, so with thinking on the
 * whole answer is thought, and with it off the whole answer is content.
 */
export const THINKING_TEMPLATE = `{%- if messages[0]['role'] == 'system' %}
    {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}
{%- endif %}
{%- for message in messages %}
    {%- if message.role == "user" or (message.role == "system" and not loop.first) %}
        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}
    {%- elif message.role == "assistant" %}
        {%- set reasoning = message.reasoning_content if message.reasoning_content is string else '' %}
        {{- '<|im_start|>assistant\\n<think>\\n' + reasoning.strip('\\n') + '\\n</think>\\n\\n' + (message.content if message.content is string else '') + '<|im_end|>\\n' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n<think>\\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '\\n</think>\\n\\n' }}
    {%- endif %}
{%- endif %}
`;

/** The model's metadata with the thinking template in place of its own. */
export function withThinkingTemplate(metadata: GgufMetadata): GgufMetadata {
  return metadata.map(([key, value]) => (key === 'tokenizer.chat_template' ? [key, { type: 'string', value: THINKING_TEMPLATE }] : [key, value]));
}
