export * from './chat-message';
export * from './completion-job';
export * from './queue-names';
export * from './token-events';
export * from './worker-registry';
