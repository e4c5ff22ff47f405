/**
 * Manual acceptance check: generates a tiny model and runs it through
 * node-llama-cpp (real llama.cpp) on the CPU, printing tokenization, the
 * resolved chat wrapper, sampled answers and throughput.
 *
 *   npx tsx tools/tiny-model/try-model.ts [--corpus alice|fables] [--out /tmp/tiny-try.gguf]
 */
import { parseArgs } from 'node:util';
// node-llama-cpp is ESM with top-level await, so this CommonJS project can only load it via import().
import type { ChatHistoryItem, Token } from 'node-llama-cpp';
import { makeTinyModel } from '../make-tiny-model';
import { buildBigramModel } from './bigram-model';
import { isCorpusName } from './corpus';
import { writeGguf } from './gguf-writer';

const SAMPLE_RUNS = 40;
const SHOWN_RUNS = 6;
const MAX_TOKENS = 300;
/** Sentences made only of words from each corpus, plus text outside both. */
const TOKENIZE_SAMPLES = {
  alice: ['Alice was beginning to get very tired.', 'The Rabbit ran across the field, and she fell!'],
  fables: ['The Lion was so tickled at the idea.', 'Little friends may prove great friends, said the Mouse.'],
} as const;
const FOREIGN_SAMPLE = 'Héllo 🙂 zebra';

async function main(): Promise<void> {
  const { getLlama, LlamaChat, resolveChatWrapper } = await import('node-llama-cpp');
  const { values } = parseArgs({
    options: { corpus: { type: 'string', default: 'alice' }, out: { type: 'string' } },
  });
  const corpus = values.corpus ?? 'alice';
  if (!isCorpusName(corpus)) throw new Error(`unknown corpus ${corpus}`);
  const name = corpus === 'fables' ? 'tiny-fables' : 'tiny-chat';

  // (6) generation time: build + serialise in memory, then the cached CLI path.
  let t0 = performance.now();
  const bytes = writeGguf(buildBigramModel({ name, corpus }));
  const buildMs = performance.now() - t0;
  const made = makeTinyModel({ name, corpus, out: values.out ?? `/tmp/${name}.gguf` });
  console.log(`model: ${made.path}, ${bytes.length} bytes, built in ${buildMs.toFixed(0)} ms (written: ${made.written})`);

  const llama = await getLlama({ gpu: false });
  const model = await llama.loadModel({ modelPath: made.path });
  const context = await model.createContext({ threads: 1, sequences: 1 });
  console.log(`token ids: bos ${model.tokens.bos}, eos ${model.tokens.eos}, eot ${model.tokens.eot}; context ${context.contextSize}`);

  // (1) one token per word.
  for (const text of [...TOKENIZE_SAMPLES[corpus], FOREIGN_SAMPLE]) {
    const tokens = model.tokenize(text);
    const pieces = tokens.map((t) => JSON.stringify(model.detokenize([t])));
    const words = text.split(/\b/).filter((w) => /\w|[.,!?]/.test(w)).length;
    const roundTrip = model.detokenize(tokens) === text;
    console.log(`tokenize ${JSON.stringify(text)} -> ${tokens.length} tokens (${words} words/marks), round-trip ${roundTrip}: ${pieces.join(' ')}`);
  }
  const special = model.tokenize('<|im_start|>user\nHi<|im_end|>', true);
  console.log(`special tokens parse: ${special.join(',')}`);

  // (2) chat wrapper.
  const chatWrapper = resolveChatWrapper(model);
  console.log(`resolveChatWrapper -> ${chatWrapper.constructor.name} (${chatWrapper.wrapperName})`);

  const chat = new LlamaChat({ contextSequence: context.getSequence(), chatWrapper });
  const history: ChatHistoryItem[] = [
    { type: 'system', text: 'You are a helpful assistant.' },
    { type: 'user', text: 'Tell me a story.' },
    { type: 'model', response: [] },
  ];
  const run = async (temperature: number, seed: number, maxTokens: number) => {
    const tokens: Token[] = [];
    const chunks: string[] = [];
    const start = performance.now();
    const res = await chat.generateResponse(history, {
      maxTokens,
      temperature,
      seed,
      onToken: (chunk) => tokens.push(...chunk),
      onTextChunk: (text) => chunks.push(text),
    });
    if (chunks.join('') !== res.response) throw new Error('streamed text differs from the response');
    return { res, tokens: tokens.length, ms: performance.now() - start };
  };

  // (3) sampled answers.
  let totalTokens = 0;
  let totalMs = 0;
  const lengths: number[] = [];
  let eosCount = 0;
  for (let seed = 1; seed <= SAMPLE_RUNS; seed++) {
    const { res, tokens, ms } = await run(1, seed, MAX_TOKENS);
    totalTokens += tokens;
    totalMs += ms;
    lengths.push(tokens);
    if (res.metadata.stopReason === 'eogToken') eosCount++;
    if (seed <= SHOWN_RUNS) {
      console.log(`seed ${seed}: ${tokens} tokens, stop=${res.metadata.stopReason}: ${JSON.stringify(res.response)}`);
    }
  }
  lengths.sort((a, b) => a - b);
  const pct = (q: number) => lengths[Math.min(lengths.length - 1, Math.floor(q * lengths.length))];
  console.log(
    `temperature 1, ${SAMPLE_RUNS} seeds: ${eosCount} ended by EOS within ${MAX_TOKENS} tokens, ` +
      `${lengths.filter((n) => n <= 120).length} within 120; tokens min ${lengths[0]} / median ${pct(0.5)} / ` +
      `p90 ${pct(0.9)} / max ${lengths[lengths.length - 1]}`,
  );

  // A second turn reuses the context and still answers.
  const followUp = await chat.generateResponse(
    [...history.slice(0, -1), { type: 'model', response: ['Alice was very tired.'] }, { type: 'user', text: 'And then?' }, { type: 'model', response: [] }],
    { maxTokens: 60, temperature: 1, seed: 42 },
  );
  console.log(`second turn: stop=${followUp.metadata.stopReason}: ${JSON.stringify(followUp.response)}`);

  // (4) greedy.
  const greedy = await run(0, 0, 40);
  console.log(`temperature 0: ${greedy.tokens} tokens, stop=${greedy.res.metadata.stopReason}: ${JSON.stringify(greedy.res.response)}`);

  // (5) throughput: a long sampled run plus the runs above.
  t0 = performance.now();
  let longTokens = 0;
  for (let seed = 100; longTokens < 2000; seed++) longTokens += (await run(1, seed, 500)).tokens;
  const longMs = performance.now() - t0;
  console.log(
    `throughput (threads: 1): ${((totalTokens / totalMs) * 1000).toFixed(0)} tokens/s over the sample runs, ` +
      `${((longTokens / longMs) * 1000).toFixed(0)} tokens/s over ${longTokens} more tokens`,
  );

  await context.dispose();
  await model.dispose();
  await llama.dispose();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
