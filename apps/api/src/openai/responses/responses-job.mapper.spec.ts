import { plainToInstance } from 'class-transformer';
import { clientAffinityKey } from '../../pipeline/affinity-key';
import { CreateResponseDto } from './responses-request.dto';
import { toChatMessages, toResponseJob } from './responses-job.mapper';
import type { ConversationItem } from './response-items';

const user = (text: string): ConversationItem => ({
  type: 'message',
  id: `msg_${text}`,
  role: 'user',
  content: [{ type: 'input_text', text }],
  status: 'completed',
});
const answer = (text: string): ConversationItem => ({
  type: 'message',
  id: `msg_${text}`,
  role: 'assistant',
  content: [{ type: 'output_text', text, annotations: [], logprobs: [] }],
  status: 'completed',
});
const call = (id: string): ConversationItem => ({ type: 'function_call', id: `fc_${id}`, call_id: id, name: 'f', arguments: '{}', status: 'completed' });
const thought = (text: string, where: 'content' | 'summary' = 'content'): ConversationItem =>
  where === 'content'
    ? { type: 'reasoning', id: `rs_${text}`, summary: [], content: [{ type: 'reasoning_text', text }] }
    : { type: 'reasoning', id: `rs_${text}`, summary: [{ type: 'summary_text', text }] };

describe('toChatMessages with reasoning items', () => {
  it("gives a reasoning item's text (content, else summary) to the assistant turn that follows it", () => {
    expect(toChatMessages(null, [user('q'), thought('hmm'), answer('a'), user('r')], 0)).toEqual([
      { role: 'user', content: 'q' },
      { role: 'assistant', content: 'a', reasoning: 'hmm' },
      { role: 'user', content: 'r' },
    ]);
    expect(toChatMessages(null, [user('q'), thought('hmm', 'summary'), answer('a')], 0)[1]).toEqual({ role: 'assistant', content: 'a', reasoning: 'hmm' });
  });

  it('starts a new assistant turn for a call that follows a thought, and joins calls without one', () => {
    const messages = toChatMessages(null, [user('q'), answer('a'), thought('then'), call('c1'), call('c2')], 0);
    expect(messages.slice(1)).toEqual([
      { role: 'assistant', content: 'a' },
      {
        role: 'assistant',
        content: '',
        reasoning: 'then',
        toolCalls: [
          { id: 'c1', name: 'f', arguments: '{}' },
          { id: 'c2', name: 'f', arguments: '{}' },
        ],
      },
    ]);
  });

  it('drops a thought no assistant item follows, and one with only encrypted content', () => {
    const encrypted: ConversationItem = { type: 'reasoning', id: 'rs_x', summary: [], encrypted_content: 'opaque' };
    expect(toChatMessages(null, [thought('lost'), user('q'), encrypted, answer('a')], 0)).toEqual([
      { role: 'user', content: 'q' },
      { role: 'assistant', content: 'a' },
    ]);
  });
});

describe('toResponseJob: the affinity key', () => {
  const affinityKeyOf = (body: object, continuedKey?: string) =>
    toResponseJob(plainToInstance(CreateResponseDto, { model: 'm', ...body }), [user('Who pours the tea?')], 0, 'resp_1', 1_000, 30_000, continuedKey).job
      .schedule.affinityKey;

  it("is the request's prompt_cache_key, before the key of the response it continues", () => {
    expect(affinityKeyOf({ prompt_cache_key: 'conversation-7' }, 'key:earlier')).toBe(clientAffinityKey('conversation-7'));
  });

  it("is the continued response's key when the request gives none", () => {
    expect(affinityKeyOf({ previous_response_id: 'resp_0' }, 'key:earlier')).toBe('key:earlier');
  });

  it('is left to the placement (a hash of the conversation start) without either', () => {
    expect(affinityKeyOf({})).toBeUndefined();
  });
});

describe('toResponseJob: tool_choice', () => {
  const weather = { type: 'function', name: 'get_weather', parameters: { type: 'object', properties: {} } };
  const jobFor = (body: object) =>
    toResponseJob(plainToInstance(CreateResponseDto, { model: 'm', ...body }), [user('Who pours the tea?')], 0, 'resp_1', 1_000, 30_000);

  it("names 'tool_choice' as OpenAI does when the function it names is not among the tools", () => {
    let refusal: unknown;
    try {
      jobFor({ tools: [weather], tool_choice: { type: 'function', name: 'other' } });
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toMatchObject({ status: 400, param: 'tool_choice' });
  });
});

describe('toResponseJob: namespace tools (Codex sends each MCP server as one)', () => {
  const fn = (name: string) => ({ type: 'function', name, parameters: { type: 'object', properties: {} } });
  const jobFor = (tools: object[]) =>
    toResponseJob(plainToInstance(CreateResponseDto, { model: 'm', tools }), [user('Who pours the tea?')], 0, 'resp_1', 1_000, 30_000);

  it("offers each member under its own name where no other tool has it, else its namespace's, and maps calls back", () => {
    const { job, settings } = jobFor([
      fn('search'),
      { type: 'namespace', name: 'crm', description: 'The CRM', tools: [fn('search'), fn('lookup')] },
      { type: 'web_search' },
    ]);
    expect(job.options.tools?.definitions.map((tool) => tool.name)).toEqual(['search', 'crm_search', 'lookup']);
    expect(settings.calledAs).toEqual({ crm_search: { name: 'search', namespace: 'crm' }, lookup: { name: 'lookup', namespace: 'crm' } });
    expect(settings.tools.map((tool) => [tool.type, (tool as { name: string }).name])).toEqual([
      ['function', 'search'],
      ['namespace', 'crm'],
    ]);
  });

  it('keeps an offered name within 64 characters, and gives a replayed call the name the model knows', () => {
    const long = 'n'.repeat(40);
    const member = 'm'.repeat(40);
    const { job } = toResponseJob(
      plainToInstance(CreateResponseDto, { model: 'm', tools: [fn(member), { type: 'namespace', name: long, tools: [fn(member)] }] }),
      [
        user('q'),
        { type: 'function_call', id: 'fc_1', call_id: 'call_1', name: member, namespace: long, arguments: '{}', status: 'completed' },
        { type: 'function_call_output', id: 'fco_1', call_id: 'call_1', output: 'ok', status: 'completed' },
      ],
      0,
      'resp_1',
      1_000,
      30_000,
    );
    const offered = job.options.tools?.definitions[1].name ?? '';
    expect(offered.length).toBeLessThanOrEqual(64);
    expect(offered).not.toBe(member);
    const replayed = job.options.messages[1];
    expect(replayed.role === 'assistant' ? replayed.toolCalls?.[0].name : undefined).toBe(offered);
  });
});

describe('toChatMessages with replayed hosted-tool items', () => {
  const shellCall: ConversationItem = {
    type: 'local_shell_call',
    id: 'lsh_1',
    call_id: 'call_sh',
    action: { type: 'exec', command: ['ls'], env: {} },
    status: 'completed',
  };
  const shellOutput: ConversationItem = { type: 'local_shell_call_output', id: 'lsho_1', call_id: 'call_sh', output: 'README.md', status: 'completed' };
  const search: ConversationItem = { type: 'tool_search_call', id: 'tsc_1', call_id: 'tsc_1', arguments: { query: 'weather' }, status: 'completed' };
  const found: ConversationItem = { type: 'tool_search_output', id: 'tso_1', call_id: 'tsc_1', tools: [{ type: 'function', name: 'f' }], status: 'completed' };

  it('shows a shell call and a tool search as the calls and outputs they were', () => {
    expect(toChatMessages(null, [user('q'), shellCall, shellOutput, search, found, answer('a')], 0)).toEqual([
      { role: 'user', content: 'q' },
      { role: 'assistant', content: '', toolCalls: [{ id: 'call_sh', name: 'local_shell', arguments: '{"type":"exec","command":["ls"],"env":{}}' }] },
      { role: 'tool', content: 'README.md', toolCallId: 'call_sh' },
      { role: 'assistant', content: '', toolCalls: [{ id: 'tsc_1', name: 'tool_search', arguments: '{"query":"weather"}' }] },
      { role: 'tool', content: '[{"type":"function","name":"f"}]', toolCallId: 'tsc_1' },
      { role: 'assistant', content: 'a' },
    ]);
  });

  it('refuses an output that answers no earlier call, naming its call_id', () => {
    expect(() => toChatMessages(null, [user('q'), shellOutput], 0)).toThrow(expect.objectContaining({ status: 400, param: 'input[1].call_id' }) as Error);
  });
});
