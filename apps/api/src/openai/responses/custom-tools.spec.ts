import type { OutputPart } from '@app/contracts';
import { plainToInstance } from 'class-transformer';
import { CustomInputReader, customCallInput } from './custom-tools';
import { ResponseOutput } from './responses-formatter';
import type { ResponseEventFrame } from './responses-formatter';
import { toChatMessages, toResponseJob } from './responses-job.mapper';
import { CreateResponseDto } from './responses-request.dto';
import type { OpenAiError } from '../../errors/openai-error';

const RESPONSE_ID = 'resp_0mwxabcdefghijklmnopqrst';

const mapped = (body: Record<string, unknown>) =>
  toResponseJob(
    plainToInstance(CreateResponseDto, { model: 'm', input: 'hi', ...body }),
    [{ type: 'message', id: 'msg_1', role: 'user', content: [{ type: 'input_text', text: 'hi' }], status: 'completed' }],
    0,
    RESPONSE_ID,
    0,
    1000,
  );

const refusal = (body: Record<string, unknown>): OpenAiError => {
  try {
    mapped(body);
  } catch (error) {
    return error as OpenAiError;
  }
  throw new Error('not refused');
};

describe('CustomInputReader', () => {
  it("gives the input's decoded text as the arguments stream, an escape held back until whole", () => {
    const reader = new CustomInputReader();
    const chunks = ['{"in', 'put": "a', '\\', 'nb\\u00', 'e9', '\\"c', '"}'];
    expect(chunks.map((chunk) => reader.feed(chunk))).toEqual(['', 'a', '', '\nb', 'é', '"c', '']);
  });

  it('reads the whole input back from complete arguments, and nothing from cut ones', () => {
    expect(customCallInput('{"input":"*** Begin Patch\\n"}')).toBe('*** Begin Patch\n');
    expect(customCallInput('{"input":"cut')).toBeUndefined();
  });
});

describe('custom tools in the mapper', () => {
  it('offers a custom tool as a function of one string, its regex enforced on the whole input', () => {
    const { job, settings } = mapped({
      tools: [{ type: 'custom', name: 'digits', description: 'Some digits.', format: { type: 'grammar', syntax: 'regex', definition: '[0-9]+' } }],
      tool_choice: { type: 'custom', name: 'digits' },
    });
    expect(job.options.tools?.definitions).toEqual([
      {
        name: 'digits',
        description: 'Some digits.',
        parameters: { type: 'object', properties: { input: { type: 'string', pattern: '^(?:[0-9]+)$' } }, required: ['input'], additionalProperties: false },
      },
    ]);
    expect(job.options.tools?.choice).toEqual({ type: 'function', name: 'digits' });
    expect(settings.tools).toEqual([
      { type: 'custom', name: 'digits', description: 'Some digits.', format: { type: 'grammar', syntax: 'regex', definition: '[0-9]+' } },
    ]);
    expect(settings.calledAs).toEqual({ digits: { name: 'digits', custom: true } });
  });

  it("gives a Lark grammar to the model in the description, the input free text, and offers a namespace's custom tools", () => {
    const { job, settings } = mapped({
      tools: [
        { type: 'custom', name: 'apply_patch', format: { type: 'grammar', syntax: 'lark', definition: 'start: "x"' } },
        { type: 'namespace', name: 'mcp__edit', tools: [{ type: 'custom', name: 'apply_patch' }] },
      ],
    });
    const [top, member] = job.options.tools?.definitions ?? [];
    expect(top.description).toContain('start: "x"');
    expect(top.parameters).toEqual({ type: 'object', properties: { input: { type: 'string' } }, required: ['input'], additionalProperties: false });
    expect(member.name).toBe('mcp__edit_apply_patch');
    expect(settings.calledAs?.[member.name]).toEqual({ name: 'apply_patch', namespace: 'mcp__edit', custom: true });
  });

  it('refuses a regex no grammar expresses, and a malformed format, naming the field', () => {
    expect(refusal({ tools: [{ type: 'custom', name: 'x', format: { type: 'grammar', syntax: 'regex', definition: '(?=a)b' } }] }).param).toBe(
      'tools[0].format.definition',
    );
    expect(refusal({ tools: [{ type: 'custom', name: 'x', format: { type: 'grammar', syntax: 'ebnf', definition: 'a' } }] }).param).toBe(
      'tools[0].format.syntax',
    );
    expect(refusal({ tools: [{ type: 'custom', name: 'x' }], tool_choice: { type: 'custom', name: 'y' } }).param).toBe('tool_choice');
  });

  it('refuses a remote MCP server, which nothing here can reach, naming its server_url', () => {
    expect(refusal({ tools: [{ type: 'web_search' }, { type: 'mcp', server_label: 'x', server_url: 'https://mcp.example' }] })).toMatchObject({
      status: 400,
      param: 'tools[1].server_url',
      code: 'unsupported_value',
    });
  });

  it('shows a replayed custom call to the model as a call of its input, and its output as the answer', () => {
    const messages = toChatMessages(
      null,
      [
        { type: 'message', id: 'msg_1', role: 'user', content: [{ type: 'input_text', text: 'q' }], status: 'completed' },
        { type: 'custom_tool_call', id: 'ctc_1', call_id: 'call_1', name: 'apply_patch', input: 'patch', status: 'completed' },
        { type: 'custom_tool_call_output', id: 'ctco_1', call_id: 'call_1', output: 'done', status: 'completed' },
      ],
      0,
    );
    expect(messages.slice(1)).toEqual([
      { role: 'assistant', content: '', toolCalls: [{ id: 'call_1', name: 'apply_patch', arguments: '{"input":"patch"}' }] },
      { role: 'tool', content: 'done', toolCallId: 'call_1' },
    ]);
  });
});

describe('custom tool calls in the output', () => {
  it('streams a custom call as custom_tool_call_input events of the decoded input', () => {
    const frames: ResponseEventFrame[] = [];
    const output = new ResponseOutput(
      RESPONSE_ID,
      { logprobs: false, reasoning: { effort: null, summary: null }, calledAs: { apply_patch: { name: 'apply_patch', custom: true } } },
      (frame) => frames.push(frame),
    );
    const parts: OutputPart[] = [
      { type: 'tool_call', choice: 0, index: 0, id: 'call_1', name: 'apply_patch', arguments: '{"input": "a\\n' },
      { type: 'tool_call', choice: 0, index: 0, arguments: 'b"}' },
    ];
    output.add(parts);
    const items = output.finish(false);
    const events = frames.map((frame) => JSON.parse(frame.data) as Record<string, unknown>);
    expect(events.map((event) => event.type)).toEqual([
      'response.output_item.added',
      'response.custom_tool_call_input.delta',
      'response.custom_tool_call_input.delta',
      'response.custom_tool_call_input.done',
      'response.output_item.done',
    ]);
    expect(events.slice(1, 4).map((event) => event.delta ?? event.input)).toEqual(['a\n', 'b', 'a\nb']);
    expect(events[0].item).toEqual({
      type: 'custom_tool_call',
      id: 'ctc_0mwxabcdefghijklmnopqrst0',
      call_id: 'call_1',
      name: 'apply_patch',
      input: '',
      status: 'in_progress',
    });
    expect(items).toEqual([
      { type: 'custom_tool_call', id: 'ctc_0mwxabcdefghijklmnopqrst0', call_id: 'call_1', name: 'apply_patch', input: 'a\nb', status: 'completed' },
    ]);
  });
});
