/**
 * The engine's public module (`@app/worker/engine`): what benchmarks and tests load to run the
 * worker's own engine in-process, without the worker around it.
 */
export { ContextLengthExceededError, GenerationAbortedError } from './inference-engine';
export type { EmbeddingRequest, GenerationRequest, InferenceEngine } from './inference-engine';
export { LlamaCppEngine } from './llama-cpp.engine';
export { plainDecodeSteps, shareDecodeSteps } from './llama-batching';
export type { LlamaCppEngineOptions } from './llama-cpp.engine';
export { ThreadedEngine } from './thread/threaded-engine';
export { LlamaServerProcess, llamaServerBinary } from './llama-server/llama-server-process';
export { LlamaServerEngine } from './llama-server/llama-server.engine';
export { readServerSentEvents } from './upstream/server-sent-events';
export { SyntheticEngine, syntheticToken } from './synthetic.engine';
export { StopSequences } from './stop-sequences';
export { allowedCpus, keepEngineOnCpus, parseCpuList } from './engine-cpus';
