import { ArrayNotEmpty, IsBoolean, IsIn, IsInt, IsString, IsUrl, Matches, Max, Min, MinLength, ValidateIf } from 'class-validator';
import { availableParallelism } from 'node:os';
import { CommaList, EnvBoolean, EnvInteger } from './env-transforms';
import { MetricsTokenEnv } from './metrics-token';
import { RedisEnv } from './redis-env';
import { SecretEnv } from './secret-env';

export class ApiEnv extends RedisEnv {
  @EnvInteger()
  @IsInt()
  @Min(0)
  @Max(65535)
  PORT = 8080;

  @IsString()
  HOST = '0.0.0.0';

  /** Comma-separated keys accepted as `Authorization: Bearer <key>`. */
  @SecretEnv()
  @CommaList()
  @ArrayNotEmpty({ message: 'must list at least one API key' })
  @IsString({ each: true })
  @Matches(/^\S{8,}$/, { each: true, message: 'each key must be at least 8 characters without spaces' })
  API_KEYS: string[] = [];

  /** Comma-separated model names this API accepts; each has a queue served by its workers. */
  @CommaList()
  @ArrayNotEmpty({ message: 'must list at least one model' })
  @Matches(/^[A-Za-z0-9][A-Za-z0-9._\-/]{0,127}$/, { each: true, message: 'each model name must be 1-128 of [A-Za-z0-9._-/]' })
  MODELS: string[] = ['tiny-chat'];

  /**
   * Processes serving the one port, each with its own Redis connections: by default the cores
   * Node sees (os.availableParallelism: the CPU affinity and a container's CPU limit, but the
   * whole host when a container has no limit). 1 runs no supervisor.
   */
  @EnvInteger()
  @IsInt()
  @Min(1)
  @Max(256)
  API_PROCESSES = Math.min(availableParallelism(), 256);

  /** Largest accepted request body. */
  @EnvInteger()
  @IsInt()
  @Min(1024)
  BODY_LIMIT_BYTES = 1024 * 1024;

  /** How long a client may take to send its whole request (headers and body); 408 beyond, 0 = no limit. */
  @EnvInteger()
  @IsInt()
  @Min(0)
  REQUEST_TIMEOUT_MS = 30_000;

  /** Jobs that may wait per model; beyond it requests get 503 with Retry-After before anything is queued. */
  @EnvInteger()
  @IsInt()
  @Min(1)
  MAX_WAITING_JOBS = 1000;

  /** How long a request waits for a worker to start its job before it gets 503. */
  @EnvInteger()
  @IsInt()
  @Min(100)
  MAX_QUEUE_WAIT_MS = 30_000;

  /** Requests each API key may make per rate-limit window, across all API instances; 0 = no limit. */
  @EnvInteger()
  @IsInt()
  @Min(0)
  RATE_LIMIT_RPM = 0;

  /** Tokens (prompt plus answer) each API key may use per rate-limit window; 0 = no limit. */
  @EnvInteger()
  @IsInt()
  @Min(0)
  RATE_LIMIT_TPM = 0;

  /** The rate-limit window; OpenAI's limits are per minute. */
  @EnvInteger()
  @IsInt()
  @Min(1)
  RATE_LIMIT_WINDOW_SECONDS = 60;

  /** On SIGTERM, how long open requests may still run before they are ended with an error. */
  @EnvInteger()
  @IsInt()
  @Min(0)
  SHUTDOWN_DRAIN_MS = 30_000;

  /** How long a completion created with `store: true` stays retrievable. */
  @EnvInteger()
  @IsInt()
  @Min(1)
  STORE_TTL_SECONDS = 7 * 24 * 3600;

  /** Stored completions kept per API key; storing one more drops the oldest. */
  @EnvInteger()
  @IsInt()
  @Min(1)
  STORE_MAX_PER_KEY = 10_000;

  /** How long after its last event a stored completion's stream can still be resumed. */
  @EnvInteger()
  @IsInt()
  @Min(1)
  RESUME_WINDOW_SECONDS = 600;

  /** Events kept per resumable stream (about one per 5 ms of output); older ones are trimmed. */
  @EnvInteger()
  @IsInt()
  @Min(100)
  RESUME_MAX_EVENTS = 50_000;

  /** A resumable stream whose client left is generated on for this long, waiting for a resume; then cancelled. */
  @EnvInteger()
  @IsInt()
  @Min(1000)
  RESUME_GRACE_MS = 30_000;

  /**
   * Comma-separated API keys (of API_KEYS) whose requests may use `service_tier: "priority"`;
   * other keys asking for it are served (and answered) as `default`.
   */
  @SecretEnv()
  @CommaList()
  @IsString({ each: true })
  PRIORITY_TIER_KEYS: string[] = [];

  /** Whether this instance coordinates batches (validates their files, follows their lines, writes their results). */
  @EnvBoolean()
  @IsBoolean()
  BATCH_COORDINATOR = true;

  /** What `completion_window: "24h"` gives a batch: past it, the batch ends `expired` with what finished. */
  @EnvInteger()
  @IsInt()
  @Min(1)
  BATCH_COMPLETION_WINDOW_SECONDS = 24 * 3600;

  /** How long a batch's record and line outcomes are kept after it was created (its files stay until deleted). */
  @EnvInteger()
  @IsInt()
  @Min(60)
  BATCH_RETENTION_SECONDS = 30 * 24 * 3600;

  /** Lines of one batch queued at a time; more are fed as they end, so a big file never sits in Redis whole. */
  @EnvInteger()
  @IsInt()
  @Min(2)
  BATCH_FEED_WINDOW = 1000;

  @IsIn(['fatal', 'error', 'warn', 'log', 'debug', 'verbose'])
  LOG_LEVEL = 'log';

  /** User name for the operators' pages (Bull Board at /admin/queues), sent with HTTP Basic auth. */
  @Matches(/^[^:\s]{1,64}$/, { message: 'must be 1-64 characters without spaces or colons' })
  ADMIN_USER = 'admin';

  /** Password for the operators' pages; while it is empty, Bull Board is not served at all. */
  @SecretEnv()
  @ValidateIf((env: ApiEnv) => env.ADMIN_PASSWORD !== '')
  @IsString()
  @MinLength(12, { message: 'must be at least 12 characters (or unset, which disables Bull Board)' })
  ADMIN_PASSWORD = '';

  /** When set, GET /metrics needs `Authorization: Bearer <METRICS_TOKEN>` (401 otherwise). */
  @MetricsTokenEnv()
  METRICS_TOKEN = '';

  // Files API (/v1/files): limits of uploads and where file bodies are kept.

  /** Where file bodies go: `local` (a folder, FILES_DIR) or `s3` (a bucket, FILES_S3_*). Metadata is in Redis either way. */
  @IsIn(['local', 's3'])
  FILES_STORAGE: 'local' | 's3' = 'local';

  /** The folder of file bodies when FILES_STORAGE=local; created on demand. */
  @IsString()
  @MinLength(1)
  FILES_DIR = './data/files';

  /** Largest uploaded file in bytes (OpenAI's batch input limit, 200 MB). */
  @EnvInteger()
  @IsInt()
  @Min(1)
  FILES_MAX_BYTES = 200 * 1024 * 1024;

  /** Most requests (non-empty lines) in an uploaded batch input file (OpenAI's batch limit). */
  @EnvInteger()
  @IsInt()
  @Min(1)
  FILES_MAX_LINES = 50_000;

  /** The bucket of file bodies; required when FILES_STORAGE=s3. */
  @ValidateIf((env: ApiEnv) => env.FILES_STORAGE === 's3')
  @Matches(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, { message: 'must name an S3 bucket (3-63 of a-z, 0-9, dots and hyphens) when FILES_STORAGE=s3' })
  FILES_S3_BUCKET = '';

  /** An S3-compatible endpoint (MinIO: http://minio:9000); empty for AWS's own in FILES_S3_REGION. */
  @ValidateIf((env: ApiEnv) => env.FILES_S3_ENDPOINT !== '')
  @IsUrl({ require_tld: false, require_protocol: true, protocols: ['http', 'https'] }, { message: 'must be an http:// or https:// URL' })
  FILES_S3_ENDPOINT = '';

  @IsString()
  @MinLength(1)
  FILES_S3_REGION = 'us-east-1';

  /** Address buckets as endpoint/bucket rather than bucket.endpoint (MinIO needs it). */
  @EnvBoolean()
  @IsBoolean()
  FILES_S3_FORCE_PATH_STYLE = false;
}
