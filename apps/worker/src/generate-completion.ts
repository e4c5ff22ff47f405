import { describeLogitBiasRefusal, isGenerationPart, logitBiasRefusal, requiredCapabilities } from '@app/contracts';
import type {
  CompletionErrorCode,
  CompletionJobData,
  CompletionResult,
  EmbeddingOptions,
  GenerationOptions,
  RankOptions,
  TokenizeOptions,
} from '@app/contracts';
import { CompletionExpiredError, describeFailure } from './completion-errors';
import { EngineUnavailableError, UnsupportedOptionError } from './engine/inference-engine';
import type { GenerationOutcome, InferenceEngine } from './engine/inference-engine';
import type { TokenEventPublisher } from './token-event-publisher';

/**
 * Attempts a job gets when its engine is unavailable before the first token (an upstream server
 * down or overloaded): the first and two more, each put back in the queue for any worker.
 */
export const UNAVAILABLE_ENGINE_ATTEMPTS = 3;

/** The job went back to the queue, unanswered, for another attempt (on whichever worker takes it). */
export class CompletionRequeuedError extends Error {
  constructor(options?: ErrorOptions) {
    super('The engine was unavailable before the first token; the job is back in the queue.', options);
    this.name = 'CompletionRequeuedError';
  }
}

/** Raised after the error event is out, so the queue records why the job failed. */
export class CompletionFailedError extends Error {
  constructor(
    readonly code: CompletionErrorCode,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'CompletionFailedError';
  }
}

export interface CompletionRun {
  workerId: string;
  /** 1 for the first attempt; more when the queue hands a dead worker's job to another. */
  attempt: number;
  signal: AbortSignal;
  /**
   * Puts the job back in the queue for another attempt, as if its worker had died; false when it
   * cannot (its lock is lost). Only used while nothing was sent but the `started` event.
   */
  requeue: () => Promise<boolean>;
}

/**
 * Admission refuses what the live engines cannot honour; a job that meets its engine only here
 * (queued while no worker was live, or a batch line) is checked against the same capabilities.
 */
function refuseWhatEngineCannotHonour(options: GenerationOptions, engine: InferenceEngine): void {
  const lacking = requiredCapabilities(options).find(({ capability }) => !engine.capabilities[capability]);
  if (lacking) throw new UnsupportedOptionError(engine.name, lacking.param);
  const refusal = logitBiasRefusal(options.sampling.logitBias, engine.capabilities);
  if (refusal) throw new UnsupportedOptionError(engine.name, 'logit_bias', describeLogitBiasRefusal(refusal));
}

/**
 * One result from `n` choices of each prompt: each prompt counted once (its first choice's count),
 * the answers' tokens summed (as OpenAI does).
 */
function combineChoices(outcomes: GenerationOutcome[], choicesPerPrompt: number): CompletionResult {
  const [first] = outcomes;
  if (outcomes.length === 1) return first;
  const completionTokens = outcomes.reduce((sum, outcome) => sum + outcome.usage.completion_tokens, 0);
  const promptTokens = outcomes.reduce((sum, outcome, index) => sum + (index % choicesPerPrompt === 0 ? outcome.usage.prompt_tokens : 0), 0);
  const reasoningTokens = outcomes.reduce((sum, outcome) => sum + (outcome.usage.completion_tokens_details?.reasoning_tokens ?? 0), 0);
  return {
    ...first,
    // The first choice's prompt is the one counted (and whatever of it was cached).
    usage: {
      ...first.usage,
      prompt_tokens: promptTokens,
      completion_tokens: completionTokens,
      total_tokens: promptTokens + completionTokens,
      ...(first.usage.completion_tokens_details ? { completion_tokens_details: { reasoning_tokens: reasoningTokens } } : {}),
    },
    choices: outcomes.map(({ text, toolCalls, finishReason }) => ({ text, ...(toolCalls ? { toolCalls } : {}), finishReason })),
  };
}

/** How far a job's run got: a job none of whose answers (choices) is complete yet may go back to the queue. */
interface RunProgress {
  answers: number;
}

/** The options of each prompt a job answers: its conversation, or each of its plain prompts alone. */
const eachPrompt = (options: GenerationOptions): GenerationOptions[] =>
  options.prompt ? options.prompt.inputs.map((input) => ({ ...options, prompt: { ...options.prompt!, inputs: [input] } })) : [options];

/**
 * `n` choices of each prompt are generated one after the other by any engine, each tagged with
 * its index (prompt p's choice c is `p * n + c`).
 */
async function generateChoices(
  options: GenerationOptions,
  engine: InferenceEngine,
  events: TokenEventPublisher,
  signal: AbortSignal,
  progress: RunProgress,
): Promise<CompletionResult> {
  refuseWhatEngineCannotHonour(options, engine);
  const outcomes: GenerationOutcome[] = [];
  const choices = options.choices ?? 1;
  const prompts = eachPrompt(options);
  for (const [promptIndex, promptOptions] of prompts.entries()) {
    for (let answer = 0; answer < choices; answer++) {
      const choice = promptIndex * choices + answer;
      outcomes.push(
        await engine.generate({
          ...promptOptions,
          // Each choice samples with its own seed, so they differ, and a retry repeats them all.
          sampling: { ...options.sampling, seed: (options.sampling.seed + answer) >>> 0 },
          signal,
          output: choice === 0 ? events : { write: (part) => events.write(isGenerationPart(part) ? { ...part, choice } : part) },
          anotherChoiceFollows: answer < choices - 1,
        }),
      );
      progress.answers++;
      if (choices * prompts.length > 1) events.write({ type: 'choice_end', choice, finishReason: outcomes[choice].finishReason });
    }
  }
  return combineChoices(outcomes, choices);
}

/** The result of a job that writes no answer: what it evaluated is its usage. */
const evaluated = (promptTokens: number): CompletionResult => ({
  text: '',
  finishReason: 'stop',
  usage: { prompt_tokens: promptTokens, completion_tokens: 0, total_tokens: promptTokens },
});

/** One vector per input, as `embedding` parts; the inputs' tokens are the usage. */
async function embedInputs(options: EmbeddingOptions, engine: InferenceEngine, events: TokenEventPublisher, signal: AbortSignal): Promise<CompletionResult> {
  return evaluated((await engine.embed({ ...options, signal, output: events })).promptTokens);
}

/** One score per document, as `score` parts; the documents' tokens with the query are the usage. */
async function rankDocuments(options: RankOptions, engine: InferenceEngine, events: TokenEventPublisher, signal: AbortSignal): Promise<CompletionResult> {
  return evaluated((await engine.rank({ ...options, signal, output: events })).promptTokens);
}

/** Tokens of text or of a rendered conversation (a `tokens` part), or text of tokens (a `text` part); the tokens are the usage. */
async function tokenizeInput(options: TokenizeOptions, engine: InferenceEngine, events: TokenEventPublisher, signal: AbortSignal): Promise<CompletionResult> {
  const outcome = await engine.tokenize({ ...options, signal });
  const tokens = 'tokens' in outcome ? outcome.tokens.length : options.of === 'tokens' ? options.tokens.length : 0;
  events.write('tokens' in outcome ? { type: 'tokens', tokens: outcome.tokens } : { type: 'text', choice: 0, text: outcome.text });
  return evaluated(tokens);
}

/** Each kind's run. */
function runKind(
  job: CompletionJobData,
  engine: InferenceEngine,
  events: TokenEventPublisher,
  signal: AbortSignal,
  progress: RunProgress,
): Promise<CompletionResult> {
  if (job.kind === 'embed') return embedInputs(job.options, engine, events, signal);
  if (job.kind === 'rank') return rankDocuments(job.options, engine, events, signal);
  if (job.kind === 'tokenize') return tokenizeInput(job.options, engine, events, signal);
  return generateChoices(job.options, engine, events, signal, progress);
}

/**
 * The use case a job runs: run it with the engine, as its kind says, and stream what it
 * produces as events.
 */
export async function generateCompletion(
  job: CompletionJobData,
  engine: InferenceEngine,
  events: TokenEventPublisher,
  { workerId, attempt, signal, requeue }: CompletionRun,
): Promise<CompletionResult> {
  events.started(workerId);
  const progress: RunProgress = { answers: 0 };
  try {
    // A retry is awaited past the first deadline: the API restarts its wait when a worker dies.
    if (attempt === 1 && Date.now() > job.schedule.startDeadline) throw new CompletionExpiredError();
    const result = await runKind(job, engine, events, signal, progress);
    await events.finish({ type: 'end', finishReason: result.finishReason, usage: result.usage });
    return result;
  } catch (error) {
    // The client has seen nothing of this attempt: the next one is welcome at the API.
    if (error instanceof EngineUnavailableError && progress.answers === 0 && attempt < UNAVAILABLE_ENGINE_ATTEMPTS) {
      events.stopHeartbeats();
      if (await requeue()) throw new CompletionRequeuedError({ cause: error });
    }
    const failure = describeFailure(error, signal);
    await events.finish({ type: 'error', ...failure }).catch(() => undefined);
    throw new CompletionFailedError(failure.code, failure.message, { cause: error });
  }
}
