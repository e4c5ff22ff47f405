/**
 * `npm run bench:oversized -- [--tries=20] [--size=8388608] [--url=http://127.0.0.1:8080/v1 --key=sk-...]`
 *
 * Does a real client that sends a body over BODY_LIMIT_BYTES receive the 413? Each client
 * (plain fetch, the `openai` package, node:http with `Expect: 100-continue`) posts a chat
 * request of `size` bytes `tries` times, one after another; the outcomes are counted (the
 * status received, or the error the client reported instead) and timed. Without --url it
 * starts its own Redis and API (from dist/; no worker is needed: nothing reaches a queue).
 */
import OpenAI from 'openai';
import { request } from 'node:http';
import { startRedisServer } from '../../tools/local-stack/redis-server';
import type { LocalRedis } from '../../tools/local-stack/redis-server';
import { startApi } from '../../tools/local-stack/services';
import type { RunningApi } from '../../tools/local-stack/services';
import { numberOption, optionValue } from '../common/command-line';
import { summarize } from '../common/stats';

const TRIES = numberOption('tries', 20);
const SIZE = numberOption('size', 8 * 1024 * 1024);
const MODEL = 'tiny-chat';

type Outcome = string;

/** A client's failure as it reports it: the error class, and the socket error under it when there is one. */
function describe(error: unknown): Outcome {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? (error.cause as Error & { code?: string }) : undefined;
  return `${error.constructor.name}${cause ? ` (${cause.code ?? cause.message})` : ''}`;
}

function chatBody(size: number): string {
  const frame = JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: '' }] });
  return frame.replace('"content":""', `"content":"${'x'.repeat(Math.max(0, size - frame.length))}"`);
}

function viaFetch(url: string, key: string, body: string): () => Promise<Outcome> {
  return async () => {
    const response = await fetch(`${url}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body,
    });
    await response.text();
    return String(response.status);
  };
}

function viaOpenAi(url: string, key: string, content: string): () => Promise<Outcome> {
  const client = new OpenAI({ baseURL: url, apiKey: key, maxRetries: 0, timeout: 30_000 });
  return async () => {
    try {
      await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content }] });
      return '200';
    } catch (error) {
      if (error instanceof OpenAI.APIError && error.status !== undefined) return String(error.status);
      throw error;
    }
  };
}

/** node:http with `Expect: 100-continue`, as curl sends for large bodies: the body goes only after `100 Continue`. */
function viaExpectContinue(url: string, key: string, body: string): () => Promise<Outcome> {
  return () =>
    new Promise((resolve, reject) => {
      const req = request(`${url}/chat/completions`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body)),
          expect: '100-continue',
        },
      });
      req.on('continue', () => req.end(body));
      req.on('response', (response) => {
        response.resume();
        response.on('end', () => resolve(String(response.statusCode)));
      });
      req.on('error', reject);
      req.flushHeaders();
    });
}

async function measure(name: string, send: () => Promise<Outcome>): Promise<void> {
  const outcomes = new Map<Outcome, number>();
  const times: number[] = [];
  for (let i = 0; i < TRIES; i++) {
    const start = performance.now();
    const outcome = await send().catch(describe);
    times.push(performance.now() - start);
    outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
  }
  const received = outcomes.get('413') ?? 0;
  const { p50, max } = summarize(times);
  const counts = [...outcomes].map(([outcome, count]) => `${outcome} ×${count}`).join(', ');
  console.log(`${name.padEnd(22)} 413 received ${received}/${TRIES}   ${counts}   p50 ${p50.toFixed(0)} ms, max ${max.toFixed(0)} ms`);
}

async function main(): Promise<void> {
  let redis: LocalRedis | undefined;
  let api: RunningApi | undefined;
  let url = optionValue('url');
  let key = optionValue('key') ?? '';
  if (!url) {
    redis = await startRedisServer({});
    key = 'sk-bench-oversized-0123456789';
    api = await startApi({ redisUrl: redis.url, apiKeys: [key], models: [MODEL] });
    url = api.baseUrl;
  }
  try {
    const body = chatBody(SIZE);
    const content = 'x'.repeat(SIZE);
    console.log(`${TRIES} tries per client, body ${(SIZE / 1024 / 1024).toFixed(1)} MiB, against ${url}`);
    await measure('fetch (undici)', viaFetch(url, key, body));
    await measure('openai (v7)', viaOpenAi(url, key, content));
    await measure('node:http expect-100', viaExpectContinue(url, key, body));
  } finally {
    await api?.process.stop();
    await redis?.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
