export * from './redis-connections';
export * from './redis-target';
export * from './transactions';
export * from './redis-health';
export * from './redis-connection-providers';
