/**
 * Qwen-style tool calling for the tiny model.
 *
 * The chat template is Qwen 2.5's (tools listed in the system turn, calls as
 * `<tool_call>\n{"name": ..., "arguments": ...}\n</tool_call>`, results in
 * `<tool_response>` blocks) without its default system prompt, so
 * node-llama-cpp extracts a function-calling syntax from it.
 *
 * A bigram model sees one token, so the one attention layer supplies the rest:
 * head 0 looks for any `<tool_call>` token in the context (the template writes
 * one into the tool instructions), head 1 for any `<tool_response>`. Each head
 * moves the logit bias from one "bias dimension" to another, so the same
 * answer-start state can call a tool only when tools are offered and no tool
 * result has come back yet.
 */

export const TOOL_TOKENS = {
  call: '<tool_call>',
  callEnd: '</tool_call>',
  response: '<tool_response>',
  responseEnd: '</tool_response>',
} as const;

/** Added tokens, in id order, appended after every piece of the vocabulary. */
export const TOOL_TOKEN_LIST = [TOOL_TOKENS.call, TOOL_TOKENS.callEnd, TOOL_TOKENS.response, TOOL_TOKENS.responseEnd];

/**
 * What follows `<tool_call>` in the template, as one piece (SentencePiece spaces),
 * so the model writes node-llama-cpp's whole call prefix in two tokens.
 */
export const CALL_OPENER = '\n{"name":\u2581"';

export const TOOL_STATE = {
  call: '<tool:call>',
  opener: '<tool:opener>',
  callEnd: '<tool:call-end>',
  response: '<tool:response>',
} as const;

/** Token text -> state for the tool markup. */
export const TOOL_TOKEN_STATES = new Map<string, string>([
  [TOOL_TOKENS.call, TOOL_STATE.call],
  [CALL_OPENER, TOOL_STATE.opener],
  [TOOL_TOKENS.callEnd, TOOL_STATE.callEnd],
  [TOOL_TOKENS.response, TOOL_STATE.response],
]);

/** Relative weight of `<tool_call>` against all first words together when tools are offered: 1 = half the answers. */
export const TOOL_CALL_WEIGHT = 1;

/**
 * P(another call) right after a call, for a model made with parallel calls. node-llama-cpp restarts
 * its seeded sampler after each call, and a bigram model's next call starts from the same state,
 * so a seeded answer that makes a second call makes the same call again, up to eight or until
 * max_tokens cuts one: only a model meant to show parallel calls makes them.
 */
export const PARALLEL_CALL_PROBABILITY = 0.1;
/** The same without parallel calls: the turn ends after one call (a grammar may still force another). */
export const NO_PARALLEL_CALL_PROBABILITY = 1e-6;

/** Query x key magnitude for the marker heads: e^(A*B/8) outweighs any context length. */
export const MARKER_QUERY = 16;
export const MARKER_KEY = 16;
/**
 * Head dimensions in RoPE's slowest-turning pairs (llama's "normal" RoPE pairs 2i, 2i+1 turn
 * base^(-2i/64) radians per token), so the score barely depends on distance.
 */
export const MARKER_DIMS = { call: 62, response: 60 } as const;

/** Qwen 2.5 Instruct's template, minus the default "You are Qwen" system prompt. */
export const QWEN_TOOLS_TEMPLATE = `{%- if tools %}
    {{- '<|im_start|>system\\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] + '\\n\\n' }}
    {%- endif %}
    {{- "# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\nYou are provided with function signatures within <tools></tools> XML tags:\\n<tools>" }}
    {%- for tool in tools %}
        {{- "\\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\"name\\": <function-name>, \\"arguments\\": <args-json-object>}\\n</tool_call><|im_end|>\\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\\n<tool_call>\\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\\n<tool_response>\\n' }}
        {{- message.content }}
        {{- '\\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
{%- endif %}
`;
