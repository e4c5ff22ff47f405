/**
 * The worker's public module (`@app/worker`): what tests and benchmarks may read of the worker
 * besides its engine (`@app/worker/engine`). Everything else is the worker's own.
 */
export { ENDED_BEFORE, withoutContent } from './job-retention';
export type { GenerationContentRemoved, RetainedJobData } from './job-retention';
