/**
 * Acceptance check for what issue 10 needs from the tiny model, run through
 * node-llama-cpp (real llama.cpp, CPU): JSON-schema and free JSON grammars
 * always give parseable, schema-valid JSON; the chat template resolves to a
 * wrapper with function calling; with tools offered some seeds call a tool on
 * their own and the others answer in words; a forced call always calls.
 * Exits 1 when any check fails.
 *
 *   npx tsx tools/tiny-model/check-structured-output.ts [--model models/tiny-chat.gguf] [--seeds 20]
 */
import Ajv from 'ajv';
import { parseArgs } from 'node:util';
import type { ChatHistoryItem, ChatModelFunctions, ChatWrapper, GbnfJsonSchema, LlamaText } from 'node-llama-cpp';

const SCHEMA = {
  type: 'object',
  properties: {
    name: { type: 'string' },
    age: { type: 'integer' },
    score: { type: 'number' },
    ok: { type: 'boolean' },
    colour: { enum: ['red', 'green', 'light blue'] },
    address: { type: 'object', properties: { city: { type: 'string' }, zip: { type: 'integer' } } },
    tags: { type: 'array', items: { type: 'string' } },
    points: { type: 'array', items: { type: 'object', properties: { x: { type: 'number' }, y: { type: 'number' } } } },
    maybe: { type: ['string', 'null'] },
  },
} as const satisfies GbnfJsonSchema;

const FUNCTIONS = {
  get_weather: { description: 'Weather for a city', params: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } } } },
  get_time: { description: 'Time in a zone', params: { type: 'object', properties: { zone: { enum: ['utc', 'cet'] } } } },
} as const satisfies ChatModelFunctions;

/** node-llama-cpp has no "must call" option: a wrapper that enters function calling before the first token. */
function forceFirstCall(inner: ChatWrapper, toText: typeof LlamaText): ChatWrapper {
  const forced: ChatWrapper = Object.create(inner) as ChatWrapper;
  forced.generateContextState = (options) => {
    const { contextText, stopGenerationTriggers } = inner.generateContextState(options);
    const inject = toText(inner.settings.functions.call.prefix);
    return { contextText, stopGenerationTriggers, noPrefixTrigger: { type: 'functionCall', inject } };
  };
  return forced;
}

async function main(): Promise<void> {
  const nodeLlamaCpp = await import('node-llama-cpp');
  const { getLlama, LlamaChat, resolveChatWrapper } = nodeLlamaCpp;
  const { values } = parseArgs({ options: { model: { type: 'string', default: 'models/tiny-chat.gguf' }, seeds: { type: 'string', default: '20' } } });
  const seeds = Number(values.seeds);
  const failures: string[] = [];
  const check = (ok: boolean, what: string): void => {
    console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
    if (!ok) failures.push(what);
  };

  const llama = await getLlama({ gpu: false, maxThreads: 1 });
  const model = await llama.loadModel({ modelPath: values.model ?? 'models/tiny-chat.gguf' });
  const context = await model.createContext({ threads: 1, sequences: 2, contextSize: 4096 });
  const chatWrapper = resolveChatWrapper(model);
  const prefix = nodeLlamaCpp.LlamaText(chatWrapper.settings.functions.call.prefix).toString();
  check(
    chatWrapper.wrapperName === 'JinjaTemplate' && prefix.includes('<tool_call>'),
    `wrapper ${chatWrapper.wrapperName}, call prefix ${JSON.stringify(prefix)}`,
  );

  const chat = new LlamaChat({ contextSequence: context.getSequence(), chatWrapper });
  const question: ChatHistoryItem[] = [
    { type: 'user', text: 'Tell me about the rabbit.' },
    { type: 'model', response: [] },
  ];
  const runs = [{ temperature: 0, seed: 0 }, ...Array.from({ length: seeds }, (_, i) => ({ temperature: 1, seed: i + 1 }))];

  const ajv = new Ajv({ strict: false });
  const validate = ajv.compile({ ...SCHEMA, required: Object.keys(SCHEMA.properties), additionalProperties: false });
  const schemaGrammar = await llama.createGrammarForJsonSchema(SCHEMA);
  const jsonGrammar = await llama.getGrammarFor('json');
  let valid = 0;
  let objects = 0;
  let shown = false;
  for (const { temperature, seed } of runs) {
    const bySchema = await chat.generateResponse(question, { maxTokens: 600, temperature, seed, topK: 0, grammar: schemaGrammar });
    await chat.sequence.clearHistory();
    const free = await chat.generateResponse(question, { maxTokens: 600, temperature, seed, topK: 0, grammar: jsonGrammar });
    await chat.sequence.clearHistory();
    try {
      if (validate(JSON.parse(bySchema.response))) valid++;
    } catch {
      console.log(`  seed ${seed}: not JSON: ${bySchema.response.slice(0, 120)}`);
    }
    try {
      const parsed: unknown = JSON.parse(free.response);
      if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) objects++;
    } catch {
      console.log(`  seed ${seed}: not JSON: ${free.response.slice(0, 120)}`);
    }
    if (!shown && temperature > 0) {
      console.log(`  e.g. ${bySchema.response}\n       ${free.response}`);
      shown = true;
    }
  }
  check(valid === runs.length, `JSON schema grammar: ${valid}/${runs.length} parse and validate`);
  check(objects === runs.length, `json grammar: ${objects}/${runs.length} are JSON objects`);

  const withTools: ChatHistoryItem[] = [
    { type: 'user', text: 'What is the weather in Paris?' },
    { type: 'model', response: [] },
  ];
  let calls = 0;
  let texts = 0;
  for (let seed = 1; seed <= seeds; seed++) {
    const res = await chat.generateResponse(withTools, { maxTokens: 200, temperature: 1, seed, topK: 0, functions: FUNCTIONS, maxParallelFunctionCalls: 4 });
    await chat.sequence.clearHistory();
    if ((res.functionCalls?.length ?? 0) > 0) calls++;
    else if (/[a-z]{2,}/.test(res.response)) texts++;
  }
  check(calls > 0 && texts > 0 && calls + texts === seeds, `tools offered: ${calls} seeds called a tool, ${texts} answered in words`);

  let plainCalls = 0;
  for (let seed = 1; seed <= seeds; seed++) {
    const res = await chat.generateResponse(withTools, { maxTokens: 60, temperature: 1, seed, topK: 0 });
    await chat.sequence.clearHistory();
    if (res.response.includes('<tool_call>')) plainCalls++;
  }
  check(plainCalls === 0, `no tools offered: ${plainCalls} answers contain <tool_call>`);

  const forced = new LlamaChat({ contextSequence: context.getSequence(), chatWrapper: forceFirstCall(chatWrapper, nodeLlamaCpp.LlamaText) });
  let forcedCalls = 0;
  for (let seed = 1; seed <= seeds; seed++) {
    const res = await forced.generateResponse(withTools, { maxTokens: 200, temperature: 1, seed, topK: 0, functions: FUNCTIONS, maxParallelFunctionCalls: 1 });
    await forced.sequence.clearHistory();
    if (res.functionCalls?.length === 1) forcedCalls++;
  }
  check(forcedCalls === seeds, `forced call: ${forcedCalls}/${seeds} seeds made exactly one call`);

  await context.dispose();
  await model.dispose();
  await llama.dispose();
  if (failures.length > 0) process.exit(1);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
