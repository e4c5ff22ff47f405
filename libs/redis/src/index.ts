export * from './redis-connections';
