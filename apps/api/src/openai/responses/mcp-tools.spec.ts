import { plainToInstance } from 'class-transformer';
import type { McpServer, McpToolInfo } from '../../mcp/mcp-types';
import { CreateResponseDto } from './responses-request.dto';
import { toChatMessages, toResponseJob } from './responses-job.mapper';
import type { ConversationItem } from './response-items';
import { mcpServerTools } from './mcp-tools';
import { mcpResultText } from './mcp-items';
import { MAX_MESSAGE_CHARS } from '../common/request-limits';
import type { McpOffer } from './mcp-tools';
import { ResponseOutput } from './responses-formatter';
import type { ResponseEventFrame } from './responses-formatter';

const tool = (name: string, readOnly = false): McpToolInfo => ({
  name,
  description: `The ${name} tool`,
  input_schema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] },
  annotations: readOnly ? { readOnlyHint: true } : null,
});
const resolved = (tool: Record<string, unknown>): McpServer => ({
  label: String(tool.server_label),
  url: String(tool.server_url),
  headers: { authorization: 'Bearer secret' },
  registered: false,
});
const mcp = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  type: 'mcp',
  server_label: 'docs',
  server_url: 'https://mcp.example.com/mcp',
  authorization: 'secret',
  ...extra,
});
const question: ConversationItem = { type: 'message', id: 'msg_q', role: 'user', content: [{ type: 'input_text', text: 'q' }], status: 'completed' };
const request = (body: Record<string, unknown>): CreateResponseDto => plainToInstance(CreateResponseDto, { model: 'm', input: 'q', ...body });

function offers(tools: Array<Record<string, unknown>>, listed: McpToolInfo[]): McpOffer[] {
  return mcpServerTools(tools, resolved).map((server) => ({
    index: server.index,
    label: server.label,
    tools: listed.filter(server.allowed),
    needsApproval: server.needsApproval,
    echo: server.echo,
  }));
}

describe('mcp tools of a request', () => {
  it('filters allowed tools by name or read-only hint, and needs approval unless told otherwise', () => {
    const listed = [tool('read', true), tool('write')];
    const [byName] = offers([mcp({ allowed_tools: ['write'] })], listed);
    expect(byName.tools.map((offered) => offered.name)).toEqual(['write']);
    expect(byName.needsApproval(listed[1])).toBe(true);
    const [readOnly] = offers([mcp({ allowed_tools: { read_only: true }, require_approval: { never: { read_only: true } } })], listed);
    expect(readOnly.tools.map((offered) => offered.name)).toEqual(['read']);
    expect(readOnly.needsApproval(listed[0])).toBe(false);
    const [never] = offers([mcp({ require_approval: 'never' })], listed);
    expect(listed.map(never.needsApproval)).toEqual([false, false]);
    const [some] = offers([mcp({ require_approval: { always: { tool_names: ['write'] } } })], listed);
    expect(listed.map(some.needsApproval)).toEqual([false, true]);
  });

  it('echoes the tool without its credentials, and refuses two servers of one label', () => {
    const [offer] = offers([mcp({ headers: { 'x-key': 'secret' } })], []);
    expect(JSON.stringify(offer.echo)).not.toContain('secret');
    expect(offer.echo).toMatchObject({ type: 'mcp', server_label: 'docs', headers: null, require_approval: 'always' });
    expect(() => offers([mcp(), mcp()], [])).toThrow(expect.objectContaining({ param: 'tools[1].server_label' }) as Error);
  });

  it("offers the server's tools as functions, forces one by tool_choice, and maps the call's name back", () => {
    const tools = [mcp({ require_approval: 'never' })];
    const body = request({ tools, tool_choice: { type: 'mcp', server_label: 'docs', name: 'look.up' } });
    const { job, settings } = toResponseJob(body, [question], 0, 'resp_1', 0, 1000, undefined, undefined, offers(tools, [tool('look.up'), tool('other')]));
    expect(job.options.tools?.definitions.map((definition) => definition.name)).toEqual(['look_up', 'other']);
    expect(job.options.tools?.choice).toEqual({ type: 'function', name: 'look_up' });
    expect(settings.calledAs?.look_up).toEqual({ name: 'look.up', mcp: { server: 'docs', approval: false } });
    expect(settings.tools).toEqual([expect.objectContaining({ type: 'mcp', server_label: 'docs' })]);
    const unknown = request({ tools, tool_choice: { type: 'mcp', server_label: 'docs', name: 'nope' } });
    expect(() => toResponseJob(unknown, [question], 0, 'resp_1', 0, 1000, undefined, undefined, offers(tools, [tool('other')]))).toThrow(
      expect.objectContaining({ param: 'tool_choice.name' }) as Error,
    );
    // Without its offer (no gateway listed it), an mcp tool is refused, never dropped.
    expect(() => toResponseJob(request({ tools }), [question], 0, 'resp_1', 0, 1000)).toThrow(
      expect.objectContaining({ param: 'tools[0].server_url' }) as Error,
    );
  });

  it('shows the model a call with its output, and a declined request as declined', () => {
    const items: ConversationItem[] = [
      { type: 'message', id: 'msg_1', role: 'user', content: [{ type: 'input_text', text: 'q' }], status: 'completed' },
      { type: 'mcp_list_tools', id: 'mcpl_1', server_label: 'docs', tools: [], error: null },
      {
        type: 'mcp_call',
        id: 'mcp_1',
        server_label: 'docs',
        name: 'look',
        arguments: '{}',
        output: 'found',
        error: null,
        status: 'completed',
        approval_request_id: null,
      },
      { type: 'mcp_approval_request', id: 'mcpr_1', server_label: 'docs', name: 'look', arguments: '{"a":1}' },
      { type: 'mcp_approval_response', id: 'mcpa_1', approval_request_id: 'mcpr_1', approve: false, reason: 'no' },
    ];
    expect(toChatMessages(null, items, 0).slice(1)).toEqual([
      { role: 'assistant', content: '', toolCalls: [{ id: 'mcp_1', name: 'look', arguments: '{}' }] },
      { role: 'tool', content: 'found', toolCallId: 'mcp_1' },
      { role: 'assistant', content: '', toolCalls: [{ id: 'mcpr_1', name: 'look', arguments: '{"a":1}' }] },
      { role: 'tool', content: 'The user declined to run this tool: no', toolCallId: 'mcpr_1' },
    ]);
  });
});

describe("an MCP call's result as the model reads it", () => {
  it('is its output, its error, or an output longer than a message cut with a note', () => {
    expect(mcpResultText({ output: 'found', error: null })).toBe('found');
    expect(mcpResultText({ output: null, error: { type: 'http_error', code: 504, message: 'timed out' } })).toBe('Error (http_error 504): timed out');
    const long = mcpResultText({ output: 'x'.repeat(MAX_MESSAGE_CHARS + 10), error: null });
    expect(long).toHaveLength(MAX_MESSAGE_CHARS);
    expect(long).toMatch(/\[The output was cut here/);
  });
});

describe('ResponseOutput with MCP items', () => {
  const calledAs = { look: { name: 'look', mcp: { server: 'docs', approval: false } }, ask: { name: 'ask', mcp: { server: 'docs', approval: true } } };
  const settings = { logprobs: false, reasoning: { effort: null, summary: null }, calledAs };

  it('streams a list, a call made between turns, and an approval request as OpenAI does', () => {
    const frames: ResponseEventFrame[] = [];
    const output = new ResponseOutput('resp_0mwxabcdefghijklmnopqrst', settings, (frame) => frames.push(frame));
    output.addListTools('docs', [tool('look')], null);
    output.add([{ type: 'tool_call', choice: 0, index: 0, id: 'call_1', name: 'look', arguments: '{"message":' }]);
    output.add([{ type: 'tool_call', choice: 0, index: 0, arguments: '"x"}' }]);
    output.closeTurn();
    const [pending] = output.pendingMcpCalls();
    expect(pending).toMatchObject({ server: 'docs', name: 'look', arguments: '{"message":"x"}' });
    expect(output.waitsOnClient()).toBe(false);
    output.settleMcpCall(pending.id, { output: 'Echo: x' });
    expect(output.pendingMcpCalls()).toEqual([]);
    output.add([{ type: 'tool_call', choice: 0, index: 0, id: 'call_2', name: 'ask', arguments: '{}' }]);
    const items = output.finish(false);
    expect(output.waitsOnClient()).toBe(true);
    expect(frames.map((frame) => frame.event)).toEqual([
      'response.output_item.added',
      'response.mcp_list_tools.in_progress',
      'response.mcp_list_tools.completed',
      'response.output_item.done',
      'response.output_item.added',
      'response.mcp_call.in_progress',
      'response.mcp_call_arguments.delta',
      'response.mcp_call_arguments.delta',
      'response.mcp_call_arguments.done',
      'response.mcp_call.completed',
      'response.output_item.done',
      'response.output_item.added',
      'response.output_item.done',
    ]);
    expect(items).toEqual([
      expect.objectContaining({ type: 'mcp_list_tools', server_label: 'docs' }),
      expect.objectContaining({ type: 'mcp_call', id: expect.stringMatching(/^mcp_/) as string, output: 'Echo: x', status: 'completed', error: null }),
      expect.objectContaining({ type: 'mcp_approval_request', id: expect.stringMatching(/^mcpr_/) as string, name: 'ask', arguments: '{}' }),
    ]);
  });

  it('gives up calls beyond the bound as incomplete, and a failed call as failed', () => {
    const output = new ResponseOutput('resp_0mwxabcdefghijklmnopqrst', settings);
    output.add([{ type: 'tool_call', choice: 0, index: 0, id: 'call_1', name: 'look', arguments: '{}' }]);
    output.add([{ type: 'tool_call', choice: 0, index: 1, id: 'call_2', name: 'look', arguments: '{}' }]);
    output.closeTurn();
    const [first] = output.pendingMcpCalls();
    output.settleMcpCall(first.id, { error: { type: 'http_error', code: 504, message: 'timed out' } });
    output.abandonMcpCalls();
    expect(output.snapshot()).toEqual([
      expect.objectContaining({ status: 'failed', error: { type: 'http_error', code: 504, message: 'timed out' } }),
      expect.objectContaining({ status: 'incomplete', output: null }),
    ]);
  });
});
