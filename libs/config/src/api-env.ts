import { ArrayMaxSize, ArrayNotEmpty, IsBoolean, IsIn, IsInt, IsString, IsUrl, Matches, Max, Min, MinLength, ValidateIf } from 'class-validator';
import { Transform } from 'class-transformer';
import { availableParallelism } from 'node:os';
import { CommaList, EnvBoolean, EnvInteger } from './env-transforms';
import { parseMcpServers } from './mcp-servers-env';
import type { McpServerRegistration } from './mcp-servers-env';
import { MetricsTokenEnv } from './metrics-token';
import { RedisEnv } from './redis-env';
import { SecretEnv } from './secret-env';

export type { McpServerRegistration } from './mcp-servers-env';
export { HTTP_HEADER_NAME, HTTP_HEADER_VALUE, MCP_SERVER_LABEL } from './mcp-servers-env';

/** An MCP_ALLOWED_SERVERS entry: an http(s) URL prefix without user-info, `*`, or a host (`*.` for its subdomains) with an optional port. */
const MCP_ALLOWED_SERVER =
  /^(https?:\/\/[^\s@/?#]+(\/[^\s?#]*)?|\*|(\*\.)?[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?(:\d{1,5})?|\[[0-9A-Fa-f:.]+\](:\d{1,5})?)$/;

/**
 * The API process (`npm run start:api`, the `api` image): HTTP, admission, the queues' producer
 * side, stored completions, files and batches.
 * @title API
 */
export class ApiEnv extends RedisEnv {
  /** HTTP port (`0` picks a free one). */
  @EnvInteger()
  @IsInt()
  @Min(0)
  @Max(65535)
  PORT = 8080;

  /** Interface to listen on. */
  @IsString()
  HOST = '0.0.0.0';

  /**
   * Comma-separated keys accepted as `Authorization: Bearer <key>`. Keys are compared in constant
   * time and never echoed or logged.
   * @default — (required)
   */
  @SecretEnv()
  @CommaList()
  @ArrayNotEmpty({ message: 'must list at least one API key' })
  @IsString({ each: true })
  @Matches(/^\S{8,}$/, { each: true, message: 'each key must be at least 8 characters without spaces' })
  API_KEYS: string[] = [];

  /**
   * Comma-separated model names this API accepts; each has its own queue, served by its workers. A
   * model a live worker announces is served too (see docs/operations.md, "Adding a model"); list it
   * here as well if requests should be accepted, and wait in the queue, while no worker is up.
   */
  @CommaList()
  @ArrayNotEmpty({ message: 'must list at least one model' })
  @Matches(/^[A-Za-z0-9][A-Za-z0-9._\-/]{0,127}$/, { each: true, message: 'each model name must be 1-128 of [A-Za-z0-9._-/]' })
  MODELS: string[] = ['tiny-chat'];

  /**
   * Processes serving the one port, each with its own Redis connections, under a supervisor that
   * replaces one that dies and drains them all on SIGTERM; `1` runs a single process with no
   * supervisor. The default is the cores Node sees (`os.availableParallelism`: the CPU affinity and
   * a container's CPU limit, but the whole host when a container has only a CPU request): set it
   * where a container has no limit (the Kubernetes manifests and Compose use `1` and scale
   * replicas).
   * @default the core count (at most 256)
   */
  @EnvInteger()
  @IsInt()
  @Min(1)
  @Max(256)
  API_PROCESSES = Math.min(availableParallelism(), 256);

  /** Largest accepted request body (413 `request_too_large` beyond). */
  @EnvInteger()
  @IsInt()
  @Min(1024)
  BODY_LIMIT_BYTES = 1024 * 1024;

  /**
   * How long a client may take to send its whole request, headers and body (408 beyond; `0` = no
   * limit). Uploads to `/v1/files` are bounded by it too: raise it for large files over slow links.
   */
  @EnvInteger()
  @IsInt()
  @Min(0)
  REQUEST_TIMEOUT_MS = 30_000;

  /**
   * Jobs that may wait per model; beyond it 503 `queue_full` with `Retry-After`, before anything is
   * queued. Counts interactive requests only (not batch lines), wherever they wait: the model's
   * queue, the workers' own queues (affinity), the express lane, and taken by a busy worker.
   */
  @EnvInteger()
  @IsInt()
  @Min(1)
  MAX_WAITING_JOBS = 1000;

  /**
   * How long a request waits for a worker to start its job; then the job is withdrawn and the answer
   * is 503 `no_capacity`.
   */
  @EnvInteger()
  @IsInt()
  @Min(100)
  MAX_QUEUE_WAIT_MS = 30_000;

  /**
   * Prefix-cache affinity: a conversation's next turn goes to the queue of the worker that served
   * it last (its sequences hold the conversation) while that worker is alive and not backed up.
   * What a dead or draining worker's own queue holds moves to the shared queue (retried there, as
   * a stalled job of the shared queue is). `false`: every job goes to the shared queue.
   */
  @EnvBoolean()
  @IsBoolean()
  AFFINITY = true;

  /** How long a job waits on its chosen worker's own queue before it moves to the model's shared queue. */
  @EnvInteger()
  @IsInt()
  @Min(10)
  AFFINITY_WAIT_MS = 1000;

  /** How long a key → worker entry lives after the last job of that key started there. */
  @EnvInteger()
  @IsInt()
  @Min(1000)
  AFFINITY_TTL_MS = 600_000;

  /**
   * Requests per API key per window, shared by all API instances through Redis; 429
   * `rate_limit_exceeded` beyond; `0` = no limit.
   */
  @EnvInteger()
  @IsInt()
  @Min(0)
  RATE_LIMIT_RPM = 0;

  /**
   * Tokens (prompt + answer) per API key per window; `0` = no limit. Reserved from an estimate on
   * admission, corrected with the real usage. A request refused for its tokens takes none, and one
   * that fails before any output gives its estimate back; a refused request still counts toward
   * RATE_LIMIT_RPM, as at OpenAI.
   */
  @EnvInteger()
  @IsInt()
  @Min(0)
  RATE_LIMIT_TPM = 0;

  /** The rate-limit window; OpenAI's limits are per minute. */
  @EnvInteger()
  @IsInt()
  @Min(1)
  RATE_LIMIT_WINDOW_SECONDS = 60;

  /**
   * On SIGTERM, how long open requests may still run before they end with a `shutting_down` error.
   * The process exits with code 1 if its shutdown still waits on something (Redis unreachable) 5 s
   * past this.
   */
  @EnvInteger()
  @IsInt()
  @Min(0)
  SHUTDOWN_DRAIN_MS = 30_000;

  /** How long a completion created with `store: true` stays retrievable; then it is gone (404). */
  @EnvInteger()
  @IsInt()
  @Min(1)
  STORE_TTL_SECONDS = 7 * 24 * 3600;

  /**
   * Stored completions kept per API key; storing one more drops the oldest, once its job is queued
   * (a request refused with `queue_full` stores nothing and drops nothing).
   */
  @EnvInteger()
  @IsInt()
  @Min(1)
  STORE_MAX_PER_KEY = 10_000;

  /**
   * Responses WebSocket connections (`GET /v1/responses` upgraded) one API key may hold open on
   * one API instance; the upgrade beyond is answered 429 `websocket_connections_exceeded`.
   */
  @EnvInteger()
  @IsInt()
  @Min(1)
  RESPONSES_WS_MAX_CONNECTIONS_PER_KEY = 32;

  /**
   * How long a Responses WebSocket connection lives (OpenAI: 60 minutes); then the client gets an
   * `error` event `websocket_connection_limit_reached` (after the response it is running) and the
   * connection is closed.
   */
  @EnvInteger()
  @IsInt()
  @Min(1000)
  RESPONSES_WS_CONNECTION_LIMIT_MS = 3_600_000;

  /** How often a Responses WebSocket is pinged; a peer that has not answered by the next ping is dropped. */
  @EnvInteger()
  @IsInt()
  @Min(100)
  RESPONSES_WS_PING_INTERVAL_MS = 30_000;

  /**
   * How long after its last event a stored completion's stream can still be resumed (its event log's
   * lifetime).
   */
  @EnvInteger()
  @IsInt()
  @Min(1)
  RESUME_WINDOW_SECONDS = 600;

  /**
   * Events kept per event log (about one per 5 ms of output); a longer answer's log is trimmed from
   * its start and can no longer be resumed.
   */
  @EnvInteger()
  @IsInt()
  @Min(100)
  RESUME_MAX_EVENTS = 50_000;

  /**
   * A stored stream whose client left goes on generating this long, waiting for a resume on any
   * instance; then it is cancelled.
   */
  @EnvInteger()
  @IsInt()
  @Min(1000)
  RESUME_GRACE_MS = 30_000;

  /**
   * Comma-separated secrets (at least 32 characters each) that seal the `compaction` items of
   * `POST /v1/responses/compact`: the first seals, every one opens, so a secret is rotated by
   * putting a new one first and dropping the old once its items have aged out. Set it alike on every
   * API instance.
   * @default — (one secret generated on first start and kept in Redis for every instance)
   */
  @SecretEnv()
  @CommaList()
  @IsString({ each: true })
  @MinLength(32, { each: true, message: 'each secret must be at least 32 characters' })
  COMPACTION_KEYS: string[] = [];

  /**
   * Comma-separated keys (of API_KEYS) whose requests may use `service_tier: "priority"`; other keys
   * asking for it are served (and answered) as `default`.
   * @default — (nobody)
   */
  @SecretEnv()
  @CommaList()
  @IsString({ each: true })
  PRIORITY_TIER_KEYS: string[] = [];

  /**
   * Fair share between API keys within each service tier: a virtual token counter per key (VTC) in
   * Redis orders waiting requests, so a key with a backlog cannot hold back a lighter key for long.
   * Off by default: with it on, interactive jobs wait in the queue's prioritized set instead of
   * its wait list, so autoscalers that read the wait list (the KEDA triggers in deploy/) must read
   * `llm_api_queue_prioritized_jobs` instead; set it alike on every API instance.
   */
  @EnvBoolean()
  @IsBoolean()
  FAIR_SHARE = false;

  /**
   * Comma-separated `key=weight` pairs (keys of API_KEYS): a key of weight 2 is served about twice
   * the tokens of a key of weight 1 while both wait. Keys not listed weigh 1.
   * @default — (every key weighs 1)
   */
  @SecretEnv()
  @CommaList()
  @IsString({ each: true })
  @Matches(/^\S+=(\d{1,3}(\.\d{1,3})?)$/, { each: true, message: 'each entry must be key=weight, a weight from 0.001 to 999' })
  FAIR_SHARE_WEIGHTS: string[] = [];

  /**
   * With FAIR_SHARE: a job of a key under its fair share (its counter at or below the virtual time,
   * so nothing of it waits ahead), when no job of a higher tier waits, goes to the model's express lane, which only the workers' express
   * sequences take (EXPRESS_SEQUENCES on the worker), so it need not wait for a backlogged key's
   * running job to end. A job not started there within FAIR_SHARE_EXPRESS_WAIT_MS moves to the
   * shared queue, keeping its place in its tier. Flex, detached (stored) and batch jobs never take
   * it. Off by default: it helps only where workers hold express sequences.
   */
  @EnvBoolean()
  @IsBoolean()
  FAIR_SHARE_EXPRESS = false;

  /** How long a job waits on the express lane before it moves to the model's shared queue. */
  @EnvInteger()
  @IsInt()
  @Min(10)
  FAIR_SHARE_EXPRESS_WAIT_MS = 500;

  /**
   * Whether this instance coordinates batches: validates their files, follows their lines, writes
   * their results (any number of instances may; each batch is coordinated by one at a time). `false`
   * also drops the two Redis connections of the coordinator's BullMQ worker.
   */
  @EnvBoolean()
  @IsBoolean()
  BATCH_COORDINATOR = true;

  /**
   * What `completion_window: "24h"` gives a batch: past it, the batch ends `expired` with what
   * finished.
   */
  @EnvInteger()
  @IsInt()
  @Min(1)
  BATCH_COMPLETION_WINDOW_SECONDS = 24 * 3600;

  /**
   * How long a batch's record and its lines' outcomes stay in Redis after it was created (its output
   * files stay until deleted).
   */
  @EnvInteger()
  @IsInt()
  @Min(60)
  BATCH_RETENTION_SECONDS = 30 * 24 * 3600;

  /**
   * Lines of one batch in its model's queue at a time; more are fed as they end, so a 200 MiB input
   * never sits in Redis whole.
   */
  @EnvInteger()
  @IsInt()
  @Min(2)
  BATCH_FEED_WINDOW = 1000;

  /** The most verbose level printed; also the level of the JSON request log (`log` = pino's `info`). */
  @IsIn(['fatal', 'error', 'warn', 'log', 'debug', 'verbose'])
  LOG_LEVEL = 'log';

  /** User name for Bull Board at `/admin/queues` (HTTP Basic). */
  @Matches(/^[^:\s]{1,64}$/, { message: 'must be 1-64 characters without spaces or colons' })
  ADMIN_USER = 'admin';

  /**
   * Password for Bull Board. While it is empty, `/admin/queues` is not served at all. (`npm start`
   * generates one and prints it.)
   * @default — (Bull Board off)
   */
  @SecretEnv()
  @ValidateIf((env: ApiEnv) => env.ADMIN_PASSWORD !== '')
  @IsString()
  @MinLength(12, { message: 'must be at least 12 characters (or unset, which disables Bull Board)' })
  ADMIN_PASSWORD = '';

  /**
   * When set, `GET /metrics` answers only `Authorization: Bearer <METRICS_TOKEN>`; anything else
   * gets 401 `invalid_metrics_token` in OpenAI's error shape. Health probes stay open.
   * @default — (`/metrics` open)
   */
  @MetricsTokenEnv()
  METRICS_TOKEN = '';

  // Files API (/v1/files): limits of uploads and where file bodies are kept.

  /**
   * Where the bodies of files (`/v1/files`) are kept: `local` (a folder, FILES_DIR) or `s3` (a
   * bucket, FILES_S3_*). Their metadata is in Redis either way.
   */
  @IsIn(['local', 's3'])
  FILES_STORAGE: 'local' | 's3' = 'local';

  /**
   * The folder of file bodies with FILES_STORAGE=local, created on demand. Several API instances
   * need the same folder (a shared volume).
   */
  @IsString()
  @MinLength(1)
  FILES_DIR = './data/files';

  /**
   * Largest uploaded file (OpenAI's batch input limit); 413 naming `file` beyond. Uploads are
   * bounded by REQUEST_TIMEOUT_MS too: raise it for large files over slow links.
   */
  @EnvInteger()
  @IsInt()
  @Min(1)
  FILES_MAX_BYTES = 200 * 1024 * 1024;

  /**
   * Most requests (non-empty lines) in an uploaded batch input file (OpenAI's batch limit); 400
   * naming `file` and the first line too many.
   */
  @EnvInteger()
  @IsInt()
  @Min(1)
  FILES_MAX_LINES = 50_000;

  /**
   * The bucket of file bodies (objects `files/<file id>`), required with FILES_STORAGE=s3. It must
   * exist. Credentials come from the AWS SDK's default chain (`AWS_ACCESS_KEY_ID` /
   * `AWS_SECRET_ACCESS_KEY`, a profile, an instance or pod role).
   * @default — (required with `FILES_STORAGE=s3`)
   */
  @ValidateIf((env: ApiEnv) => env.FILES_STORAGE === 's3')
  @Matches(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, { message: 'must name an S3 bucket (3-63 of a-z, 0-9, dots and hyphens) when FILES_STORAGE=s3' })
  FILES_S3_BUCKET = '';

  /**
   * An S3-compatible endpoint (MinIO: `http://minio:9000`); empty for AWS's own in FILES_S3_REGION.
   * Against one, the SDK sends checksums only where S3 requires them, as not every such server
   * accepts its default CRC32 trailers.
   * @default — (AWS)
   */
  @ValidateIf((env: ApiEnv) => env.FILES_S3_ENDPOINT !== '')
  @IsUrl({ require_tld: false, require_protocol: true, protocols: ['http', 'https'] }, { message: 'must be an http:// or https:// URL' })
  FILES_S3_ENDPOINT = '';

  /** The bucket's region. */
  @IsString()
  @MinLength(1)
  FILES_S3_REGION = 'us-east-1';

  /** `true` addresses buckets as `endpoint/bucket` instead of `bucket.endpoint` (MinIO needs it). */
  @EnvBoolean()
  @IsBoolean()
  FILES_S3_FORCE_PATH_STYLE = false;

  // Remote MCP servers (the Responses `mcp` tool): where this service may connect for its clients,
  // and how much it spends on each server. docs/mcp.md has the threat model.

  /**
   * Comma-separated MCP servers a request may name by `server_url`: URL prefixes
   * (`https://mcp.example.com/`, matched on whole path segments) or hosts (`mcp.example.com`,
   * `*.example.com` for its subdomains, `127.0.0.1:4010` for one port, `*` for any host), over
   * http or https. Empty: no request may name a server by URL. A private, loopback or link-local
   * address is reached only through an entry naming its host exactly, never through a wildcard;
   * the Redis this API uses, never.
   * @default — (no server by URL)
   */
  @CommaList()
  @Matches(MCP_ALLOWED_SERVER, { each: true, message: 'each entry must be an http(s):// URL prefix without credentials, a host, *.domain, host:port or *' })
  MCP_ALLOWED_SERVERS: string[] = [];

  /**
   * MCP servers the operator registers, as JSON: `[{"label": "docs", "url": "https://…",
   * "headers": {"Authorization": "Bearer …"}}]`. A request naming a `server_label` alone gets that
   * server with these headers; they are reachable whatever MCP_ALLOWED_SERVERS says, their hosts
   * included (the operator named them).
   * @default — (none)
   */
  @SecretEnv()
  @Transform(({ value }: { value: unknown }) => parseMcpServers(value))
  @ArrayMaxSize(256, {
    message:
      'must be a JSON array (at most 256) of {"label", "url", "headers"} with unique labels of [A-Za-z0-9_-], http(s) URLs without credentials, string headers',
  })
  MCP_SERVERS: McpServerRegistration[] = [];

  /** How long listing a server's tools, or one tool call, may take, connecting included (`http_error` 504 beyond). */
  @EnvInteger()
  @IsInt()
  @Min(100)
  MCP_CALL_TIMEOUT_MS = 30_000;

  /** Largest body of one answer from an MCP server, counted as it arrives (`http_error` 413 beyond). */
  @EnvInteger()
  @IsInt()
  @Min(1024)
  MCP_MAX_RESULT_BYTES = 1024 * 1024;

  /** Tools kept of one server's listing; the rest are left out. */
  @EnvInteger()
  @IsInt()
  @Min(1)
  MCP_MAX_TOOLS_PER_SERVER = 128;

  /** `mcp` tools one request may give (400 beyond). */
  @EnvInteger()
  @IsInt()
  @Min(1)
  MCP_MAX_SERVERS_PER_REQUEST = 8;

  /** MCP tool calls the service makes for one response, at most. */
  @EnvInteger()
  @IsInt()
  @Min(1)
  MCP_MAX_CALLS_PER_RESPONSE = 16;

  /** How long a server's tool listing is reused, per server URL and headers (`0`: list it for every request). */
  @EnvInteger()
  @IsInt()
  @Min(0)
  MCP_LIST_CACHE_MS = 60_000;
}
