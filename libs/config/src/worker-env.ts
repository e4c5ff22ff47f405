import { IsBoolean, IsIn, IsInt, IsString, IsUrl, Matches, Max, Min, ValidateIf } from 'class-validator';
import { EnvBoolean, EnvInteger } from './env-transforms';
import { MetricsTokenEnv } from './metrics-token';
import { RedisEnv } from './redis-env';
import { NoUrlCredentials, SecretEnv } from './secret-env';

export class WorkerEnv extends RedisEnv {
  /** The model name clients ask for; the worker serves that model's queue. */
  @Matches(/^[A-Za-z0-9][A-Za-z0-9._\-/]{0,127}$/, { message: 'must be 1-128 of [A-Za-z0-9._-/]' })
  MODEL_NAME = 'tiny-chat';

  /** Path of the GGUF file to load. */
  @IsString()
  MODEL_PATH = 'models/tiny-chat.gguf';

  /** Sequences generated in parallel in one context (continuous batching); also the job concurrency. */
  @EnvInteger()
  @IsInt()
  @Min(1)
  @Max(256)
  PARALLEL_SEQUENCES = 4;

  /**
   * BullMQ consumers sharing the engine's slots, each taking jobs on its own. One consumer takes
   * jobs one Redis round trip after another, which a busy process makes slow: several fill free
   * slots that much sooner when requests arrive together. Each holds one more Redis connection.
   * The openai engine keeps one: a job it puts back (upstream down) must go to another worker.
   */
  @EnvInteger()
  @IsInt()
  @Min(1)
  @Max(64)
  QUEUE_CONSUMERS = 4;

  /** CPU threads for llama.cpp. Its threads spin-wait, so oversubscribing cores slows it down badly. */
  @EnvInteger()
  @IsInt()
  @Min(1)
  @Max(1024)
  ENGINE_THREADS = 1;

  /** Context size in tokens of each sequence (prompt plus answer). */
  @EnvInteger()
  @IsInt()
  @Min(256)
  CONTEXT_SIZE = 4096;

  /**
   * llama.cpp: a sequence keeps the start its prompts share (the template's, system prompts, tool
   * definitions) when its job ends, and a job goes to the idle sequence that holds the most of its
   * prompt, which is then not evaluated again (reported as usage.prompt_tokens_details.cached_tokens).
   */
  @EnvBoolean()
  @IsBoolean({ message: 'must be true or false' })
  PROMPT_CACHE = true;

  /** GPU backend for llama.cpp: `auto` uses CUDA or Vulkan when present, `false` forces the CPU. */
  @IsIn(['auto', 'cuda', 'vulkan', 'metal', 'false'])
  GPU: 'auto' | 'cuda' | 'vulkan' | 'metal' | 'false' = 'auto';

  /** A generation running longer than this is stopped and answered with an error. */
  @EnvInteger()
  @IsInt()
  @Min(1000)
  MAX_GENERATION_MS = 300_000;

  /**
   * How long a job's lock lasts without renewal (renewed every half of it while the job runs).
   * When a worker dies, its jobs go back to the queue for another worker after about this long.
   */
  @EnvInteger()
  @IsInt()
  @Min(1000)
  JOB_LOCK_MS = 5000;

  /** Name under which this worker reports in events and logs; defaults to host and pid. */
  @IsString()
  WORKER_ID = '';

  @IsIn(['fatal', 'error', 'warn', 'log', 'debug', 'verbose'])
  LOG_LEVEL = 'log';

  /**
   * `llama` runs the model; `openai` streams each job from an OpenAI-compatible server (vLLM,
   * SGLang, TGI, llama.cpp's server); `synthetic` emits tokens at a set rate, for benchmarks only.
   */
  @IsIn(['llama', 'openai', 'synthetic'])
  ENGINE: 'llama' | 'openai' | 'synthetic' = 'llama';

  /** ENGINE=openai: the upstream server's OpenAI base URL, e.g. `http://vllm:8000/v1`. */
  @ValidateIf((env: WorkerEnv) => env.ENGINE === 'openai')
  @IsUrl({ protocols: ['http', 'https'], require_protocol: true, require_tld: false }, { message: 'must be an http(s) URL (required with ENGINE=openai)' })
  @Matches(/\/v1\/?$/, { message: 'must end in /v1' })
  @NoUrlCredentials('must not carry credentials (user:password@): put the key in UPSTREAM_API_KEY')
  UPSTREAM_BASE_URL = '';

  /** ENGINE=openai: the bearer key the upstream server expects; none is sent when empty. */
  @SecretEnv()
  @Matches(/^\S*$/, { message: 'must have no spaces or line breaks (it is sent as a bearer token)' })
  UPSTREAM_API_KEY = '';

  /** ENGINE=openai: the model name the upstream server serves; MODEL_NAME when empty. */
  @ValidateIf((_env: WorkerEnv, value: unknown) => value !== '')
  @Matches(/^\S{1,256}$/, { message: 'must be 1-256 characters without spaces' })
  UPSTREAM_MODEL = '';

  /** ENGINE=openai: requests sent to the upstream at once (the worker's job concurrency). */
  @EnvInteger()
  @IsInt()
  @Min(1)
  @Max(4096)
  UPSTREAM_MAX_CONCURRENCY = 16;

  /**
   * ENGINE=openai: how long the upstream may keep silent (for its response headers, then between
   * two chunks of the stream) before the request counts as failed. Before the first token such a
   * failure puts the job back in the queue for another worker.
   */
  @EnvInteger()
  @IsInt()
  @Min(100)
  @Max(3_600_000)
  UPSTREAM_TIMEOUT_MS = 60_000;

  /** Synthetic engine: tokens in each answer (fewer when max_tokens or a stop sequence ends it). */
  @EnvInteger()
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  SYNTHETIC_TOKENS = 64;

  /** Synthetic engine: milliseconds between two tokens; the first comes at once. */
  @EnvInteger()
  @IsInt()
  @Min(0)
  @Max(3_600_000)
  SYNTHETIC_TOKEN_INTERVAL_MS = 0;

  /** Synthetic engine: completions generated at once (the job concurrency). */
  @EnvInteger()
  @IsInt()
  @Min(1)
  @Max(100_000)
  SYNTHETIC_SLOTS = 1024;

  /** Port of the worker's own small HTTP server for /health/live, /health/ready and /metrics; `0` picks a free one. */
  @EnvInteger()
  @IsInt()
  @Min(0)
  @Max(65535)
  HEALTH_PORT = 9464;

  /** Interface the health and metrics server listens on. */
  @IsString()
  HEALTH_HOST = '0.0.0.0';

  /** When set, GET /metrics on HEALTH_PORT needs `Authorization: Bearer <METRICS_TOKEN>` (401 otherwise). */
  @MetricsTokenEnv()
  METRICS_TOKEN = '';

  /**
   * Whether finished jobs (kept for operators, shown by Bull Board) keep the request's messages
   * and the answer's text. When false, a job that ends keeps ids, sizes, timings, finish reason,
   * usage and error, and no contents.
   */
  @EnvBoolean()
  @IsBoolean({ message: 'must be true or false' })
  RETAIN_CONTENT = false;
}
