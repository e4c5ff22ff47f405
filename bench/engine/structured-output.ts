/**
 * `npm run bench:structured`: what constrained generation and log probabilities cost on the
 * worker's own engine. Tokens per second unconstrained, under a JSON-schema grammar, with a
 * forced tool call and with `logprobs` (top 5, scoring included), on the same model, prompt and
 * settings; and the time to first output unconstrained, and when a request's schema is new to
 * the worker (compiled) versus seen before (cached). Writes
 * bench/results/structured-output.json.
 *
 *   npm run bench:structured -- [--model models/tiny-chat.gguf] [--runs 20] [--max-tokens 128]
 */
import type { GenerationRequest } from '@app/worker/engine';
import { LlamaCppEngine } from '@app/worker/engine';
import { schemaGrammar } from '@app/grammar';
import type { GrammarSchema, JsonObject } from '@app/contracts';
import { mkdirSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { median } from '../common/stats';

const { values } = parseArgs({
  options: {
    model: { type: 'string', default: 'models/tiny-chat.gguf' },
    runs: { type: 'string', default: '20' },
    'max-tokens': { type: 'string', default: '128' },
  },
});
const runs = Number(values.runs);
const maxTokens = Number(values['max-tokens']);

function reduced(schema: JsonObject): GrammarSchema {
  const result = schemaGrammar(schema, { strict: true });
  if (!result.ok) throw new Error(`schema not supported: ${result.problem.message}`);
  return schema;
}

/** A schema like the ones applications send: nested objects, arrays, enums, numbers. */
const personSchema = (variant: number): GrammarSchema =>
  reduced({
    type: 'object',
    properties: {
      [`name${variant}`]: { type: 'string' },
      age: { type: 'integer' },
      colour: { enum: ['red', 'green', 'blue'] },
      address: { type: 'object', properties: { city: { type: 'string' }, zip: { type: 'integer' } }, required: ['city', 'zip'] },
      tags: { type: 'array', items: { type: 'string' } },
    },
    required: [`name${variant}`, 'age', 'colour', 'address', 'tags'],
    additionalProperties: false,
  });

type Mode = Pick<GenerationRequest, 'tools' | 'responseFormat' | 'logprobs'>;
const modes: Record<string, Mode> = {
  unconstrained: {},
  json_schema: { responseFormat: { type: 'json_schema', name: 'person', schema: personSchema(0) } },
  tool_required: {
    tools: { definitions: [{ name: 'save_person', parameters: personSchema(0) }], choice: { type: 'required' }, parallel: false },
  },
  logprobs_top5: { logprobs: { top: 5 } },
};

async function generate(engine: LlamaCppEngine, mode: Mode, seed: number): Promise<{ tokens: number; seconds: number; firstOutputMs: number }> {
  const startedAt = performance.now();
  let firstAt: number | undefined;
  const outcome = await engine.generate({
    messages: [{ role: 'user', content: 'Tell me about the rabbit.' }],
    sampling: { temperature: 1, topP: 1, maxTokens, stop: [], frequencyPenalty: 0, presencePenalty: 0, seed },
    signal: new AbortController().signal,
    output: { write: () => (firstAt ??= performance.now()) },
    ...mode,
  });
  const endedAt = performance.now();
  return { tokens: outcome.usage.completion_tokens, seconds: (endedAt - startedAt) / 1000, firstOutputMs: (firstAt ?? endedAt) - startedAt };
}

async function main(): Promise<void> {
  const engine = await LlamaCppEngine.load({ modelPath: values.model ?? '', parallelSequences: 1, threads: 1, contextSize: 4096, gpu: 'false' });
  try {
    await generate(engine, modes.unconstrained, 0); // warm-up
    const throughput: Record<string, { tokensPerSecond: number; medianTokens: number }> = {};
    const unconstrainedFirstOutput: number[] = [];
    for (const [name, mode] of Object.entries(modes)) {
      let tokens = 0;
      let seconds = 0;
      const counts: number[] = [];
      for (let run = 1; run <= runs; run++) {
        const result = await generate(engine, mode, run);
        tokens += result.tokens;
        seconds += result.seconds;
        counts.push(result.tokens);
        if (mode === modes.unconstrained) unconstrainedFirstOutput.push(result.firstOutputMs);
      }
      throughput[name] = { tokensPerSecond: Math.round(tokens / seconds), medianTokens: median(counts) };
    }
    // First output with a schema the worker has not compiled yet, then with the same schema again.
    const cold: number[] = [];
    const cached: number[] = [];
    for (let variant = 1; variant <= Math.min(runs, 10); variant++) {
      const mode: Mode = { responseFormat: { type: 'json_schema', name: 'person', schema: personSchema(variant) } };
      cold.push((await generate(engine, mode, variant)).firstOutputMs);
      cached.push((await generate(engine, mode, variant)).firstOutputMs);
    }
    const results = {
      model: values.model,
      runs,
      maxTokens,
      threads: 1,
      throughput,
      shareOfUnconstrained: Object.fromEntries(
        Object.keys(modes)
          .filter((name) => name !== 'unconstrained')
          .map((name) => [name, +(throughput[name].tokensPerSecond / throughput.unconstrained.tokensPerSecond).toFixed(3)]),
      ),
      firstOutputMs: {
        unconstrainedMedian: +median(unconstrainedFirstOutput).toFixed(2),
        newSchemaMedian: +median(cold).toFixed(2),
        cachedSchemaMedian: +median(cached).toFixed(2),
      },
      measuredAt: new Date().toISOString(),
    };
    mkdirSync('bench/results', { recursive: true });
    writeFileSync('bench/results/structured-output.json', `${JSON.stringify(results, null, 2)}\n`);
    console.log(JSON.stringify(results, null, 2));
  } finally {
    await engine.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
