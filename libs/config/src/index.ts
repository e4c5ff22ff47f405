export * from './api-env';
export * from './load-env';
export * from './redis-env';
export * from './secret-env';
export * from './worker-env';
export * from './log-levels';
export * from './metrics-token';
export * from './shutdown-deadline';
