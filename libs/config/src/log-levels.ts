import type { LogLevel } from '@nestjs/common';

const ORDER: LogLevel[] = ['fatal', 'error', 'warn', 'log', 'debug', 'verbose'];

/** Nest takes the list of levels to print; LOG_LEVEL names the most verbose one. */
export function logLevelsUpTo(level: string): LogLevel[] {
  const last = ORDER.indexOf(level as LogLevel);
  return ORDER.slice(0, last < 0 ? ORDER.indexOf('log') + 1 : last + 1);
}
