import { plainToInstance } from 'class-transformer';
import type { ClassConstructor } from 'class-transformer';
import { validateSync } from 'class-validator';
import type { ValidationError } from 'class-validator';
import { isSecretEnv, maskUrlCredentials } from './secret-env';

/** Raised at boot when an environment variable is missing or malformed; names every bad one. */
export class InvalidEnvironmentError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid environment:\n  ${problems.join('\n  ')}`);
    this.name = 'InvalidEnvironmentError';
  }
}

/** Names the variable and what is wrong; shows the value only when it is no secret, and a URL without its credentials. */
function describe(error: ValidationError, config: object): string {
  const reasons = Object.values(error.constraints ?? {}).join('; ');
  if (isSecretEnv(config, error.property)) return `${error.property}: ${reasons} (value not shown: it is a secret)`;
  return `${error.property}: ${reasons} (got ${maskUrlCredentials(JSON.stringify(error.value))})`;
}

/**
 * Reads one environment DTO from `env`, applying its defaults and conversions, and validates it.
 * This is the only place that reads environment variables: the rest of the code receives typed
 * config objects.
 */
export function loadEnv<T extends object>(envClass: ClassConstructor<T>, env: NodeJS.ProcessEnv = process.env): T {
  // Every variable has a default in its class, so a fresh instance names exactly the variables to read.
  const names = Object.keys(new envClass());
  const given = Object.fromEntries(names.filter((name) => env[name] !== undefined && env[name] !== '').map((name) => [name, env[name]]));
  const config = plainToInstance(envClass, given, { exposeDefaultValues: true });
  const errors = validateSync(config, { whitelist: false, forbidUnknownValues: true });
  if (errors.length > 0) throw new InvalidEnvironmentError(errors.map((error) => describe(error, config)));
  return config;
}
