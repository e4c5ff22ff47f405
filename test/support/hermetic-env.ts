import { ApiEnv, WorkerEnv } from '../../libs/config/src';

/**
 * The service's own settings (every variable the API and worker read), as their env classes name
 * them: a test gives the processes it starts the values it needs, and none of the shell's
 * (an operator's METRICS_TOKEN, API_KEYS, AFFINITY or REDIS_URL would change what they do).
 */
export function serviceVariables(): string[] {
  return [...new Set([...Object.keys(new ApiEnv()), ...Object.keys(new WorkerEnv())])];
}

/** Removes the service's settings from this process's environment, which every child inherits. */
export function scrubServiceEnv(env: NodeJS.ProcessEnv = process.env): void {
  for (const name of serviceVariables()) delete env[name];
}
