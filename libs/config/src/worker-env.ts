import { IsIn, IsInt, IsString, Matches, Max, Min } from 'class-validator';
import { EnvInteger } from './env-transforms';
import { RedisEnv } from './redis-env';

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

  /** GPU backend for llama.cpp: `auto` uses CUDA or Vulkan when present, `false` forces the CPU. */
  @IsIn(['auto', 'cuda', 'vulkan', 'metal', 'false'])
  GPU = 'auto';

  /** Name under which this worker reports in events and logs; defaults to host and pid. */
  @IsString()
  WORKER_ID = '';

  @IsIn(['fatal', 'error', 'warn', 'log', 'debug', 'verbose'])
  LOG_LEVEL = 'log';
}
