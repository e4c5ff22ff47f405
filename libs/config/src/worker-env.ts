import { ArrayNotEmpty, IsBoolean, IsIn, IsInt, IsString, IsUrl, Matches, Max, Min, ValidateIf } from 'class-validator';
import { CommaList, EnvBoolean, EnvInteger } from './env-transforms';
import { MetricsTokenEnv } from './metrics-token';
import { RedisEnv } from './redis-env';
import { NoUrlCredentials, SecretEnv } from './secret-env';

/**
 * A worker process (`npm run start:worker`, the `worker` and `worker-cuda` images): one model's
 * queue, one engine.
 * @title Worker
 */
export class WorkerEnv extends RedisEnv {
  /** The name clients ask for; the worker serves that model's queue. */
  @Matches(/^[A-Za-z0-9][A-Za-z0-9._\-/]{0,127}$/, { message: 'must be 1-128 of [A-Za-z0-9._-/]' })
  MODEL_NAME = 'tiny-chat';

  /**
   * GGUF file to load (`npm run model` makes the tiny one; point it at any other GGUF to serve a
   * real model).
   */
  @IsString()
  MODEL_PATH = 'models/tiny-chat.gguf';

  /**
   * Sequences generated at once in one llama.cpp context (continuous batching); also the number of
   * jobs the worker takes at once. Raise it while `llm_worker_inter_token_latency_seconds` stays
   * acceptable.
   */
  @EnvInteger()
  @IsInt()
  @Min(1)
  @Max(256)
  PARALLEL_SEQUENCES = 4;

  /**
   * Sequences (jobs) beyond PARALLEL_SEQUENCES that take jobs only from the model's express lane:
   * requests of API keys under their fair share (FAIR_SHARE_EXPRESS on the API), so a light key
   * starts at once while a backlogged key holds every other sequence. An idle express sequence
   * costs nothing; a busy one shares the batch. 0: none, the worker does not read the lane.
   */
  @EnvInteger()
  @IsInt()
  @Min(0)
  @Max(16)
  EXPRESS_SEQUENCES = 0;

  /**
   * BullMQ consumers sharing the worker's slots (never more than the slots). One consumer takes jobs
   * one Redis round trip after another, which a busy process makes slow; several fill free slots
   * sooner when requests arrive together (time to first token at 100 concurrent streams: p50 136 →
   * 72 ms in `npm run bench -- --quick`). Each holds one more Redis connection. `ENGINE=openai`
   * workers keep one: a job such a worker puts back while its upstream is down must go to another
   * worker, not to one of its own idle consumers.
   */
  @EnvInteger()
  @IsInt()
  @Min(1)
  @Max(64)
  QUEUE_CONSUMERS = 4;

  /**
   * CPU threads for llama.cpp. Its threads spin-wait: never give it more threads than free cores
   * (oversubscribing slows it down badly). On a GPU this matters little.
   */
  @EnvInteger()
  @IsInt()
  @Min(1)
  @Max(1024)
  ENGINE_THREADS = 1;

  /**
   * CPUs to keep llama.cpp's work on, a Linux CPU list (`1`, `2-15`): the engine's threads run
   * there (Node's thread pool, the engine thread), the worker's main thread (Redis, BullMQ,
   * publishing tokens) and V8's garbage-collection helpers on the CPUs the worker may use besides,
   * so that neither interrupts the other midway through a token. Give the rest of the host (API, Redis) those other CPUs too
   * (`taskset`, a container's `cpuset`). Needs no more ENGINE_THREADS than CPUs, Linux and
   * util-linux's `taskset`. Empty: wherever the kernel puts them
   * (docs/operations.md#capacity-and-sizing). With `ENGINE=llama-server`, the server's process
   * runs there.
   */
  @ValidateIf((env: WorkerEnv) => env.ENGINE_CPUS !== '')
  @Matches(/^\d+(-\d+)?(,\d+(-\d+)?)*$/, { message: 'must be a CPU list such as 1, 2-15 or 0,4-7' })
  ENGINE_CPUS = '';

  /**
   * Tokens per sequence (prompt and answer), capped at the model's training context. With
   * `ENGINE=openai`: what the worker announces as its context; set it to the upstream's
   * (`--max-model-len`, `--ctx-size`). The upstream still decides: a prompt it cannot fit is its 400
   * `context_length_exceeded`.
   */
  @EnvInteger()
  @IsInt()
  @Min(256)
  CONTEXT_SIZE = 4096;

  /**
   * llama.cpp's prompt cache: when a job ends its sequence keeps the start of its prompt that other
   * requests share (the template's start, the system messages and the tool definitions: the prompt
   * up to the first message that is not a system message), and a job goes to the idle sequence that
   * holds the most of its prompt, which is then not evaluated again; between the choices of a
   * request with `n` > 1 it keeps the whole prompt, and a conversation up to its latest
   * `prompt_cache_breakpoint`. A job that no idle sequence holds a start of goes to an empty one,
   * else to the one sharing the most with it. `usage.prompt_tokens_details.cached_tokens` says how
   * many tokens the first choice found held (the worker's `llm_worker_cached_prompt_tokens_total`
   * counts every choice's). A 3,000-token system prompt: first token after 11 ms instead of 129 ms
   * on the tiny model; later turns of a conversation marked with breakpoints, 40 ms instead of 98 ms
   * (`npm run bench:prompt-cache`). `false` evaluates every prompt whole.
   */
  @EnvBoolean()
  @IsBoolean({ message: 'must be true or false' })
  PROMPT_CACHE = true;

  /**
   * Whether a generative model also serves `POST /v1/embeddings` (its pooled, or last token's,
   * vectors). An embedding model (a GGUF with a pooling type) serves embeddings and nothing else,
   * and a reranker (rank pooling and a classifier head) only `POST /v1/rerank`, whatever this says. For `ENGINE=openai`, see UPSTREAM_KINDS.
   */
  @EnvBoolean()
  @IsBoolean({ message: 'must be true or false' })
  EMBEDDINGS = false;

  /**
   * llama.cpp contexts that embed at once, each one input at a time with ENGINE_THREADS threads:
   * the inputs of one request, and of every request on the worker, wait in one line for them
   * (node-llama-cpp's embedding context evaluates one sequence, so one context embeds one input
   * at a time). More contexts help where the cost per input is mostly fixed (a small model: the
   * tiny one embeds 678/s with 2 contexts against 452/s with 1) and cost as many threads again;
   * a model of a real shape gains nothing from a second context on a 2-core machine (`npm run
   * bench -- --only=embeddings`): give that one context more ENGINE_THREADS instead. A reranker
   * scores its documents on as many ranking contexts, one document at a time each.
   */
  @EnvInteger()
  @IsInt()
  @Min(1)
  @Max(64)
  EMBEDDING_CONTEXTS = 1;

  /**
   * llama.cpp's backend: `auto` uses CUDA or Vulkan when present and the CPU otherwise; `cuda`,
   * `vulkan`, `metal`, or `false` for CPU only (docs/gpu.md).
   */
  @IsIn(['auto', 'cuda', 'vulkan', 'metal', 'false'])
  GPU: 'auto' | 'cuda' | 'vulkan' | 'metal' | 'false' = 'auto';

  /**
   * A generation running longer is stopped and answered with a `generation_timeout` error. On
   * SIGTERM the worker exits with code 1 if its shutdown still waits on something (Redis
   * unreachable) 5 s past this.
   */
  @EnvInteger()
  @IsInt()
  @Min(1000)
  MAX_GENERATION_MS = 300_000;

  /**
   * Job lock time (renewed at half of it while a job runs). A killed worker's jobs go back to the
   * queue for another worker after about this long.
   */
  @EnvInteger()
  @IsInt()
  @Min(1000)
  JOB_LOCK_MS = 5000;

  /**
   * How long the own queue (prefix-cache affinity) of a worker that died or drained keeps its
   * finished jobs for operators, once the other workers have moved what waited or ran there to
   * the model's shared queue; then it is deleted. As long as the shared queue keeps completed jobs.
   */
  @EnvInteger()
  @IsInt()
  @Min(0)
  GONE_WORKER_QUEUE_KEEP_MS = 3_600_000;

  /**
   * Name of this worker in logs and on each job (`processedBy` in Bull Board).
   * @default host-pid
   */
  @IsString()
  WORKER_ID = '';

  /** The most verbose level printed. */
  @IsIn(['fatal', 'error', 'warn', 'log', 'debug', 'verbose'])
  LOG_LEVEL = 'log';

  /**
   * `llama` runs the model with llama.cpp in the worker (node-llama-cpp). `llama-server` runs it
   * with llama.cpp's own server, a child process the worker starts (LLAMA_SERVER_BIN) or one beside
   * it (LLAMA_SERVER_URL), spoken to through its native API (docs/operations.md, "llama.cpp's own
   * server as the engine"). `openai` runs no model itself: it streams each job from
   * an OpenAI-compatible server (vLLM, SGLang, TGI, llama.cpp's server, Ollama; docs/operations.md,
   * "Putting vLLM, SGLang, TGI or llama.cpp's server behind the queue"). `synthetic` runs no model:
   * it emits words at a fixed rate, for benchmarks of the service itself only (`npm run bench`);
   * never use it to serve.
   */
  @IsIn(['llama', 'llama-server', 'openai', 'synthetic'])
  ENGINE: 'llama' | 'llama-server' | 'openai' | 'synthetic' = 'llama';

  /**
   * `ENGINE=llama-server`: the `llama-server` binary the worker starts. `npm run llama-server:build`
   * builds it from the llama.cpp source node-llama-cpp ships, at `.llama-server/bin/llama-server`.
   * @default `.llama-server/bin/llama-server`, else `llama-server` on the PATH
   */
  @IsString()
  LLAMA_SERVER_BIN = '';

  /**
   * `ENGINE=llama-server`: a llama-server the operator runs beside the worker (a sidecar), started
   * with this worker's MODEL_PATH, `--parallel` at least its sequences; the worker then starts
   * none. Its base URL, without `/v1`.
   * @default — (the worker starts its own)
   */
  @ValidateIf((_env: WorkerEnv, value: unknown) => value !== '')
  @IsUrl({ protocols: ['http', 'https'], require_protocol: true, require_tld: false }, { message: 'must be an http(s) URL' })
  @NoUrlCredentials('must not carry credentials (user:password@)')
  LLAMA_SERVER_URL = '';

  /**
   * `ENGINE=openai`: the upstream server's OpenAI base URL, ending in `/v1` (`http://vllm:8000/v1`).
   * @default — (required with `ENGINE=openai`)
   */
  @ValidateIf((env: WorkerEnv) => env.ENGINE === 'openai')
  @IsUrl({ protocols: ['http', 'https'], require_protocol: true, require_tld: false }, { message: 'must be an http(s) URL (required with ENGINE=openai)' })
  @Matches(/\/v1\/?$/, { message: 'must end in /v1' })
  @NoUrlCredentials('must not carry credentials (user:password@): put the key in UPSTREAM_API_KEY')
  UPSTREAM_BASE_URL = '';

  /**
   * `ENGINE=openai`: the bearer key the upstream expects (vLLM's `--api-key`, llama-server's
   * `--api-key`); none is sent when empty.
   * @default — (none sent)
   */
  @SecretEnv()
  @Matches(/^\S*$/, { message: 'must have no spaces or line breaks (it is sent as a bearer token)' })
  UPSTREAM_API_KEY = '';

  /**
   * `ENGINE=openai`: the model name the upstream serves (`Qwen/Qwen2.5-7B-Instruct`), when clients
   * should use another name (MODEL_NAME).
   * @default `MODEL_NAME`
   */
  @ValidateIf((_env: WorkerEnv, value: unknown) => value !== '')
  @Matches(/^\S{1,256}$/, { message: 'must be 1-256 characters without spaces' })
  UPSTREAM_MODEL = '';

  /**
   * `ENGINE=openai`: requests this worker sends the upstream at once, its job concurrency. Match
   * what the upstream batches well (vLLM `--max-num-seqs`, llama-server `--parallel`), divided by
   * the workers in front of it.
   */
  @EnvInteger()
  @IsInt()
  @Min(1)
  @Max(4096)
  UPSTREAM_MAX_CONCURRENCY = 16;

  /**
   * `ENGINE=openai`: what the upstream model serves, comma-separated: `generate` (chat
   * completions, and plain prompts as its `/v1/completions`), `embed` (`/v1/embeddings`), `rank` (`/v1/rerank`, as vLLM and llama.cpp's
   * server serve it), `tokenize` (vLLM's `/tokenize` and `/detokenize`), or several. The worker announces these, the API refuses the others before
   * queueing, and the boot self-test runs each once against the upstream.
   */
  @CommaList()
  @ArrayNotEmpty({ message: 'must list at least one of generate, embed, rank, tokenize' })
  @IsIn(['generate', 'embed', 'rank', 'tokenize'], { each: true, message: 'each must be generate, embed, rank or tokenize' })
  UPSTREAM_KINDS: Array<'generate' | 'embed' | 'rank' | 'tokenize'> = ['generate'];

  /**
   * `ENGINE=openai`: longest silence allowed from the upstream, for its response headers, then
   * between two pieces of its stream. Before the first token a silent upstream counts as down (the
   * job goes to another worker); after it, the answer ends with an error. Allow for the prefill of
   * your longest prompt.
   */
  @EnvInteger()
  @IsInt()
  @Min(100)
  @Max(3_600_000)
  UPSTREAM_TIMEOUT_MS = 60_000;

  /** Synthetic engine: tokens per answer (fewer when `max_tokens` or a stop sequence ends it first). */
  @EnvInteger()
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  SYNTHETIC_TOKENS = 64;

  /** Synthetic engine: milliseconds between tokens; the first comes at once. */
  @EnvInteger()
  @IsInt()
  @Min(0)
  @Max(3_600_000)
  SYNTHETIC_TOKEN_INTERVAL_MS = 0;

  /** Synthetic engine: completions generated at once (the worker's job concurrency). */
  @EnvInteger()
  @IsInt()
  @Min(1)
  @Max(100_000)
  SYNTHETIC_SLOTS = 1024;

  /**
   * Port of the worker's own HTTP server for `/health/live`, `/health/ready` and `/metrics`; `0`
   * picks a free one (logged at start-up).
   */
  @EnvInteger()
  @IsInt()
  @Min(0)
  @Max(65535)
  HEALTH_PORT = 9464;

  /** Interface that server listens on. */
  @IsString()
  HEALTH_HOST = '0.0.0.0';

  /**
   * As the API's: when set, `/metrics` on HEALTH_PORT needs `Authorization: Bearer <METRICS_TOKEN>`
   * (401 otherwise); `/health/*` stay open.
   * @default — (`/metrics` open)
   */
  @MetricsTokenEnv()
  METRICS_TOKEN = '';

  /**
   * Whether finished jobs (kept for operators, shown by Bull Board) keep message contents and the
   * answer. `false`: once a job ends, answered or failed, its data keeps ids, sampling settings,
   * timings and each message's role and length (`options.messages: []`, and the retention's record
   * beside the command, `contentRemoved: {messages: [{role, characters}], characters, …}`); tools keep their names but lose descriptions and parameter
   * schemas, a `json_schema` response format keeps its name but not its schema, and stop strings are
   * dropped (their sizes are recorded in `contentRemoved`), and its return value keeps finish reason
   * and usage (`text: ""`, `contentRemoved: {characters}`); failure reasons stay. The answer's text
   * never reaches Redis. `true` keeps everything (what `npm start` sets).
   */
  @EnvBoolean()
  @IsBoolean({ message: 'must be true or false' })
  RETAIN_CONTENT = false;
}
