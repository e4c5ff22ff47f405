import type { JobKind } from '@app/contracts';
import type { ChatWrapper, Llama, LlamaCompletion, LlamaContext, LlamaContextSequence, LlamaModel } from 'node-llama-cpp' with { 'resolution-mode': 'import' };
import { shareDecodeSteps } from './llama-batching';
import { isEmbeddingModel, LlamaEmbedder } from './llama-embeddings';
import { isRankingModel, LlamaRanker } from './llama-ranking';
import { logitBias } from './llama-sampling';
import type { LogitBias } from './llama-sampling';
import type { SequenceChats } from './llama-sequences';
import { mustCallWrapper } from './llama-tool-calls';
import { LlamaToolGrammars } from './llama-tool-grammars';

export interface LlamaCppEngineOptions {
  modelPath: string;
  parallelSequences: number;
  threads: number;
  contextSize: number;
  /** The worker's GPU setting; `'false'` is the CPU. */
  gpu: 'auto' | 'cuda' | 'vulkan' | 'metal' | 'false';
  /** Keep the shared start of prompts in the sequences (PROMPT_CACHE; on when absent). */
  promptCache?: boolean;
  /** A generative model serves embeddings too (EMBEDDINGS); an embedding model serves only them. */
  embeddings?: boolean;
  /** Embedding contexts (EMBEDDING_CONTEXTS; 1 when absent). */
  embeddingContexts?: number;
  /** Where the engine says which backend and device it got. */
  log?: (message: string) => void;
}

/** What the engine runs on: a llama.cpp backend, one model, and what serves each kind of job it runs. */
export interface LoadedLlama {
  llama: Llama;
  model: LlamaModel;
  /** What the model serves: an embedding model (a pooling type in its file) only `embed`, a reranker only `rank`. */
  kinds: JobKind[];
  /** Present when it serves `generate`. */
  chat?: LoadedChat;
  /** Present when it serves `embed`. */
  embedder?: LlamaEmbedder;
  /** Present when it serves `rank`. */
  ranker?: LlamaRanker;
}

/** What generating takes: one context with a pair of chats per sequence. */
export interface LoadedChat {
  context: LlamaContext;
  chatWrapper: ChatWrapper;
  chats: SequenceChats[];
  tokenBias: LogitBias;
  toolGrammars: LlamaToolGrammars;
  /** A plain-prompt completer on one of the context's sequences (node-llama-cpp's LlamaCompletion, which loads only by dynamic import). */
  newCompletion: (sequence: LlamaContextSequence) => LlamaCompletion;
}

/**
 * What llama.cpp warns at every input an embedding context evaluates (it computes the outputs
 * pooling needs whatever node-llama-cpp marked): a line per input in the worker's log, saying nothing.
 */
const EMBEDDING_OUTPUTS_NOTE = 'embeddings required but some input tokens were not marked as outputs';

/**
 * Gets the llama.cpp backend the options ask for and loads onto it, then hands what was loaded to
 * `start` (the engine's constructor): a failure anywhere after the backend came lets go of it.
 */
export async function loadLlama<Engine>(options: LlamaCppEngineOptions, start: (loaded: LoadedLlama) => Engine): Promise<Engine> {
  // node-llama-cpp is ESM-only with top-level await, so it cannot be require()d from CommonJS.
  const { getLlama, LlamaLogLevel } = await import('node-llama-cpp');
  const llama = await getLlama({
    gpu: options.gpu === 'false' ? false : options.gpu,
    build: 'never',
    logLevel: LlamaLogLevel.warn,
    logger: (level, message) => {
      if (message.includes(EMBEDDING_OUTPUTS_NOTE)) return;
      (level === LlamaLogLevel.warn ? console.warn : console.error)(message.trimEnd());
    },
    maxThreads: options.threads,
  }).catch((error: unknown) => {
    // An explicit backend that cannot be had is an error at boot, never a silent CPU fallback.
    const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    throw new Error(`GPU=${String(options.gpu)}: no usable llama.cpp build for that backend on this machine (${reason})`);
  });
  // A load that fails lets go of llama.cpp: the thread it ran on ends next, and ending a thread
  // that still holds llama.cpp aborts the process.
  return loadOnto(llama, options)
    .then(start)
    .catch(async (error: unknown) => {
      await llama.dispose();
      throw error;
    });
}

/** What a model serves, as its file says (and EMBEDDINGS for a generative one). */
function kindsOf(model: LlamaModel, options: LlamaCppEngineOptions): JobKind[] {
  if (isRankingModel(model)) return ['rank'];
  if (isEmbeddingModel(model)) return ['embed'];
  return options.embeddings ? ['generate', 'embed'] : ['generate'];
}

/**
 * Loads the model onto a llama.cpp backend, with chats (a generative model), embedding contexts
 * (an embedding model, or EMBEDDINGS) or ranking contexts (a reranker).
 */
async function loadOnto(llama: Llama, options: LlamaCppEngineOptions): Promise<LoadedLlama> {
  const model = await llama.loadModel({ modelPath: options.modelPath });
  const vram = await llama.getVramState();
  const devices = await llama.getGpuDeviceNames();
  options.log?.(
    `llama.cpp backend ${llama.gpu === false ? 'cpu' : llama.gpu} (GPU=${String(options.gpu)})` +
      (devices.length > 0 ? `, devices ${devices.join(', ')}, VRAM ${(vram.total / 2 ** 30).toFixed(1)} GiB (${(vram.free / 2 ** 30).toFixed(1)} free)` : '') +
      `, ${model.gpuLayers} layers offloaded, ${options.threads} CPU threads`,
  );
  const kinds = kindsOf(model, options);
  const pool = { contexts: options.embeddingContexts ?? 1, threads: options.threads, contextSize: options.contextSize };
  const loaded: LoadedLlama = { llama, model, kinds };
  try {
    if (kinds.includes('generate')) loaded.chat = await loadChat(model, llama, options);
    // Contexts evaluating at once share the instance's threads: each context gets its own, or they take turns.
    if (kinds.includes('embed') || kinds.includes('rank')) llama.maxThreads = options.threads * (pool.contexts + (loaded.chat ? 1 : 0));
    if (kinds.includes('embed')) {
      loaded.embedder = await LlamaEmbedder.create(model, pool);
      options.log?.(`embeddings: ${pool.contexts} contexts of ${loaded.embedder.contextSize} tokens, vectors of ${model.embeddingVectorSize}`);
    }
    if (kinds.includes('rank')) {
      loaded.ranker = await LlamaRanker.create(model, pool);
      options.log?.(`ranking: ${pool.contexts} contexts of ${loaded.ranker.contextSize} tokens`);
    }
  } catch (error) {
    await loaded.chat?.context.dispose();
    await model.dispose();
    throw error;
  }
  return loaded;
}

/** The context of N sequences that generates, and its chats. */
async function loadChat(model: LlamaModel, llama: Llama, options: LlamaCppEngineOptions): Promise<LoadedChat> {
  const {
    LlamaChat: LlamaChatClass,
    LlamaCompletion: LlamaCompletionClass,
    LlamaText: toLlamaText,
    TokenBias: TokenBiasClass,
    resolveChatWrapper,
  } = await import('node-llama-cpp');
  const context = await model.createContext({
    sequences: options.parallelSequences,
    contextSize: Math.min(options.contextSize, model.trainContextSize),
    threads: { ideal: options.threads, min: options.threads },
  });
  // Resolving the chat template costs ~0.5 s: do it once per model, not once per job.
  // Tools go to LlamaChat with stand-ins for their schemas; the prompt shows the schemas as sent.
  const toolGrammars = LlamaToolGrammars.install(llama);
  const chatWrapper = toolGrammars.showingSchemas(resolveChatWrapper(model));
  const forcedWrapper = mustCallWrapper(chatWrapper, toLlamaText(chatWrapper.settings.functions.call.prefix));
  const chats = Array.from({ length: options.parallelSequences }, (_, position): SequenceChats => {
    const contextSequence = context.getSequence();
    return {
      position,
      free: new LlamaChatClass({ contextSequence, chatWrapper, autoDisposeSequence: false }),
      mustCall: new LlamaChatClass({ contextSequence, chatWrapper: forcedWrapper, autoDisposeSequence: false }),
    };
  });
  const sequences = chats.map(({ free }) => free.sequence);
  if (!shareDecodeSteps(context, sequences)) {
    options.log?.('node-llama-cpp changed inside: answers generating at once may take more passes, or wait to start, than they need');
  }
  const newCompletion = (contextSequence: LlamaContextSequence): LlamaCompletion => new LlamaCompletionClass({ contextSequence, autoDisposeSequence: false });
  return { context, chatWrapper, chats, tokenBias: logitBias(TokenBiasClass, model), toolGrammars, newCompletion };
}
