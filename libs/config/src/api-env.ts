import { ArrayNotEmpty, IsIn, IsInt, IsString, Matches, Max, Min } from 'class-validator';
import { CommaList, EnvInteger } from './env-transforms';
import { RedisEnv } from './redis-env';

export class ApiEnv extends RedisEnv {
  @EnvInteger()
  @IsInt()
  @Min(0)
  @Max(65535)
  PORT = 8080;

  @IsString()
  HOST = '0.0.0.0';

  /** Comma-separated keys accepted as `Authorization: Bearer <key>`. */
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

  /** Largest accepted request body. */
  @EnvInteger()
  @IsInt()
  @Min(1024)
  BODY_LIMIT_BYTES = 1024 * 1024;

  @IsIn(['fatal', 'error', 'warn', 'log', 'debug', 'verbose'])
  LOG_LEVEL = 'log';
}
