import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, tool } from 'ai';
import Ajv from 'ajv';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { ValidateFunction } from 'ajv';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import OpenAI from 'openai';
import { zodFunction } from 'openai/helpers/zod';
import type { z } from 'zod';
import { STACK_API_KEY, STACK_MODEL, ServiceStack } from './support/service-stack';
import { ZOD_TOOLS } from './support/zod-tools';

/** A tool as the AI SDK's MCP client sends it (tools/mcp-tools/collect-mcp-tools.ts wrote the snapshot). */
interface CollectedTool {
  server: string;
  name: string;
  description?: string;
  parameters: Record<string, unknown>;
}

const collected = JSON.parse(readFileSync(resolve(__dirname, 'fixtures/mcp-tools.json'), 'utf8')) as CollectedTool[];

/** Draft-07 schemas (most servers) and 2020-12 ones (zod 4), each by its own validator, formats included. */
const draft7 = addFormats(new Ajv({ strict: false, validateFormats: true }));
const draft2020 = addFormats(new Ajv2020({ strict: false, validateFormats: true }));
const validatorFor = (schema: Record<string, unknown>): ValidateFunction =>
  (typeof schema.$schema === 'string' && schema.$schema.includes('2020-12') ? draft2020 : draft7).compile(schema);

/**
 * Real tool definitions: every tool of nine published MCP servers, and zod tools as the openai
 * package and the AI SDK write them, sent to the real llama.cpp worker with a call required.
 * Every tool is accepted, and every call's arguments satisfy the schema as sent, by ajv.
 */
describe('MCP and zod tools', () => {
  let stack: ServiceStack;
  let client: OpenAI;

  beforeAll(async () => {
    // A context that holds a real server's schemas; four calls at a time.
    stack = await ServiceStack.start({ name: 'mcp-tools', parallelSequences: 4, workerEnv: { CONTEXT_SIZE: '32768' } });
    client = new OpenAI({ baseURL: stack.baseUrl, apiKey: STACK_API_KEY, maxRetries: 0, timeout: 120_000 });
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
  });

  /** Runs `work` over `items`, `limit` at a time. */
  async function inBatches<T, R>(items: T[], limit: number, work: (item: T, index: number) => Promise<R>): Promise<R[]> {
    const results: R[] = new Array<R>(items.length);
    let next = 0;
    await Promise.all(
      Array.from({ length: limit }, async () => {
        while (next < items.length) {
          const index = next++;
          results[index] = await work(items[index], index);
        }
      }),
    );
    return results;
  }

  async function callOnce(fn: OpenAI.FunctionDefinition, seed: number): Promise<{ arguments: string; finish: string }> {
    const completion = await client.chat.completions.create({
      model: STACK_MODEL,
      messages: [{ role: 'user', content: `Use ${fn.name}.` }],
      tools: [{ type: 'function', function: fn }],
      tool_choice: 'required',
      parallel_tool_calls: false,
      max_tokens: 2048,
      seed,
    });
    const [choice] = completion.choices;
    const call = choice.message.tool_calls?.[0];
    if (!call || call.type !== 'function') throw new Error(`${fn.name}: no call (finish_reason ${choice.finish_reason})`);
    return { arguments: call.function.arguments, finish: choice.finish_reason };
  }

  it(`accepts every collected MCP tool (${collected.length} from ${new Set(collected.map((tool) => tool.server)).size} servers) and answers each with valid arguments`, async () => {
    expect(collected.length).toBeGreaterThan(100);
    const failures = (
      await inBatches(collected, 4, async (mcpTool, index) => {
        const validate = validatorFor(mcpTool.parameters);
        const fn: OpenAI.FunctionDefinition = { name: mcpTool.name, description: mcpTool.description, parameters: mcpTool.parameters };
        try {
          const call = await callOnce(fn, index);
          const args: unknown = JSON.parse(call.arguments);
          return validate(args) && call.finish === 'tool_calls'
            ? undefined
            : `${mcpTool.server}/${mcpTool.name}: ${call.finish} ${draft7.errorsText(validate.errors)} ${call.arguments.slice(0, 300)}`;
        } catch (error) {
          return `${mcpTool.server}/${mcpTool.name}: ${error instanceof Error ? error.message : String(error)}`;
        }
      })
    ).filter((failure): failure is string => failure !== undefined);
    expect(failures).toEqual([]);
  }, 900_000);

  it("sends a whole server's tool list in one request, and the call chosen is valid", async () => {
    // Notion's 24 tools are about 69,000 tokens of definitions here, beyond any 32k context.
    for (const server of ['filesystem', 'playwright']) {
      const tools = collected.filter((candidate) => candidate.server === server);
      const completion = await client.chat.completions.create({
        model: STACK_MODEL,
        messages: [{ role: 'user', content: 'Do what you can.' }],
        tools: tools.map((mcpTool) => ({
          type: 'function' as const,
          function: { name: mcpTool.name, description: mcpTool.description, parameters: mcpTool.parameters },
        })),
        tool_choice: 'required',
        parallel_tool_calls: false,
        max_tokens: 1024,
        seed: 3,
      });
      const call = completion.choices[0].message.tool_calls?.[0];
      expect(call?.type).toBe('function');
      if (call?.type !== 'function') return;
      const chosen = tools.find((candidate) => candidate.name === call.function.name);
      expect(chosen).toBeDefined();
      const validate = validatorFor(chosen!.parameters);
      expect({ valid: validate(JSON.parse(call.function.arguments)), errors: validate.errors ?? null }).toEqual({ valid: true, errors: null });
      expect(completion.usage!.prompt_tokens).toBeGreaterThan(4096);
    }
  }, 300_000);

  it("answers zod tools from the openai package's zodFunction (strict) with arguments valid by ajv and by zod", async () => {
    // The helper itself refuses a z.record for strict mode (OpenAI's rule); the AI SDK test below sends it.
    const converted = Object.entries(ZOD_TOOLS).filter(([name]) => name !== 'set_labels');
    expect(() => zodFunction({ name: 'set_labels', parameters: ZOD_TOOLS.set_labels.schema })).toThrow(/additionalProperties/);
    for (const [name, { description, schema }] of converted) {
      const definition = zodFunction({ name, description, parameters: schema });
      for (const seed of [1, 2, 3]) {
        const call = await callOnce(definition.function, seed);
        const args: unknown = JSON.parse(call.arguments);
        const validate = validatorFor(definition.function.parameters as Record<string, unknown>);
        expect({ name, seed, valid: validate(args), errors: validate.errors ?? null }).toEqual({ name, seed, valid: true, errors: null });
        expect({ name, seed, zod: schema.safeParse(args).error?.message }).toEqual({ name, seed, zod: undefined });
      }
    }
  }, 300_000);

  it("answers the AI SDK's generateText with zod tools: every call parsed by the tool's own schema", async () => {
    const provider = createOpenAICompatible({ name: 'queued', baseURL: stack.baseUrl, apiKey: STACK_API_KEY, supportsStructuredOutputs: true });
    for (const [name, { description, schema }] of Object.entries(ZOD_TOOLS)) {
      const zodTool = tool({ description, inputSchema: schema as z.ZodType<Record<string, unknown>> });
      const result = await generateText({
        model: provider(STACK_MODEL),
        prompt: `Use ${name}.`,
        tools: { [name]: zodTool },
        toolChoice: 'required',
        maxOutputTokens: 2048,
        seed: 4,
        maxRetries: 0,
        // One call: with parallel calls the tiny model may repeat it until the token limit.
        providerOptions: { queued: { parallel_tool_calls: false } },
      });
      expect({ name, finish: result.finishReason }).toEqual({ name, finish: 'tool-calls' });
      expect(result.toolCalls.length).toBeGreaterThanOrEqual(1);
      for (const call of result.toolCalls) {
        expect({ name, zod: schema.safeParse(call.input).error?.message, input: call.input }).toEqual({ name, zod: undefined, input: call.input });
        expect({ name, invalid: 'invalid' in call ? call.invalid : false }).toEqual({ name, invalid: false });
      }
    }
  }, 300_000);
});
