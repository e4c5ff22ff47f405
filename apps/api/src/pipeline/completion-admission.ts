import { Injectable } from '@nestjs/common';
import type { BeforeApplicationShutdown } from '@nestjs/common';
import { describeLogitBiasRefusal, logitBiasRefusal, requiredCapabilities } from '@app/contracts';
import type { CompletionJobInput, EmbeddingInput, GenerateJobInput, RequiredCapability, WorkerAnnouncement } from '@app/contracts';
import { OpenAiError } from '../errors/openai-error';
import { ModelRegistry } from '../models/model-registry';
import { ApiKeyRateLimits } from '../rate-limits/api-key-rate-limits';
import type { TokenReservation } from '../rate-limits/api-key-rate-limits';
import { CompletionQueues } from './completion-queues';
import type { CompletionQueue } from './completion-queues';
import { FairShare } from './fair-share';
import type { FairShareTicket } from './fair-share';

export const redisUnavailable = (): OpenAiError =>
  OpenAiError.unavailable('The service cannot reach its queue right now. Please retry shortly.', 'service_unavailable', 2);
export const shuttingDown = (): OpenAiError => OpenAiError.unavailable('This server is shutting down. Please retry.', 'shutting_down', 1);

/** An admitted request: its queue, and what it took from its key's budget. */
export interface Admission {
  readonly queue: CompletionQueue;
  readonly tokens: TokenReservation;
  /** Where it waits in its tier, and what its key's fair share was charged. */
  readonly fairShare: FairShareTicket;
  /** The job will never be queued: give back the rate-limit reservation and the fair-share charge. */
  abandon(): void;
}

/**
 * The one admission step before anything is queued, in this order: the model is served (404),
 * this instance is not shutting down (503), the serving engines can honour every option (400),
 * then the key's rate limits (429; a Redis round trip only when limits are on), then its fair
 * share (its place in its tier; a Redis round trip only with FAIR_SHARE on). The queue's
 * depth (503 queue_full) is checked as the job is added (WaitingLimit), in the same round trip.
 */
@Injectable()
export class CompletionAdmission implements BeforeApplicationShutdown {
  private draining = false;

  constructor(
    private readonly models: ModelRegistry,
    private readonly queues: CompletionQueues,
    private readonly rateLimits: ApiKeyRateLimits,
    private readonly fairShare: FairShare,
  ) {}

  async admit(job: CompletionJobInput, apiKeyId: string): Promise<Admission> {
    if (!this.models.serves(job.model)) throw OpenAiError.modelNotFound(job.model);
    if (this.draining) throw shuttingDown();
    this.checkCapabilities(job);
    const queue = this.queues.forModel(job.model);
    const tokens = await this.rateLimits.admit(apiKeyId, job);
    let fairShare: FairShareTicket;
    try {
      fairShare = await this.fairShare.admit(job, queue, apiKeyId);
    } catch {
      tokens.refund();
      throw redisUnavailable();
    }
    return {
      queue,
      tokens,
      fairShare,
      abandon: () => {
        tokens.refund();
        fairShare.release();
      },
    };
  }

  /** SIGTERM: refuse new requests at once; the runner drains the open ones. */
  beforeApplicationShutdown(): void {
    this.draining = true;
  }

  /** Every live worker of the model may take the job, so each must be able to honour it. */
  private checkCapabilities(job: CompletionJobInput): void {
    const workers = this.models.liveWorkers(job.model);
    if (workers.length === 0) return; // none live yet (scaling from zero): the worker refuses it if it must
    const notRunning = workers.find((worker) => !worker.capabilities.kinds.includes(job.kind));
    if (notRunning) {
      throw OpenAiError.invalidRequest(
        `The model '${job.model}' is served by an engine (${notRunning.engine}) that does not run ${job.kind} requests.`,
        'model',
        'model_not_supported',
      );
    }
    if (job.kind === 'embed') return checkTokenIds(job.options.inputs, workers, (index) => `input[${index}]`);
    if (job.kind === 'rank') return;
    if (job.kind === 'tokenize') return job.options.of === 'tokens' ? checkTokenIds([job.options.tokens], workers, () => 'tokens') : undefined;
    for (const need of requiredCapabilities(job.options)) {
      const lacking = workers.find((worker) => !worker.capabilities[need.capability]);
      if (lacking) throw unsupportedBy(lacking.engine, need);
    }
    this.checkLogitBias(job, workers);
    const { prompt } = job.options;
    if (prompt) checkTokenIds(prompt.inputs, workers, (index) => (prompt.inputs.length === 1 ? 'prompt' : `prompt[${index}]`));
    const choices = job.options.choices ?? 1;
    const fewest = workers.find((worker) => worker.capabilities.maxChoices < choices);
    if (fewest)
      throw OpenAiError.invalidRequest(
        `The engine serving this model (${fewest.engine}) generates at most ${fewest.capabilities.maxChoices} choices.`,
        'n',
        'invalid_value',
      );
  }

  /** Every token id must exist in the vocabulary of every engine that may take the job, and be one it can bias. */
  private checkLogitBias(job: GenerateJobInput, workers: WorkerAnnouncement[]): void {
    for (const worker of workers) {
      const refusal = logitBiasRefusal(job.options.sampling.logitBias, worker.capabilities);
      if (!refusal) continue;
      if ('highest' in refusal) {
        const size = worker.capabilities.logitBiasTokens;
        throw OpenAiError.invalidRequest(
          `Invalid key in 'logit_bias': ${refusal.highest} is not a token of this model (its vocabulary has ${size}).`,
          'logit_bias',
          'invalid_value',
        );
      }
      throw OpenAiError.invalidRequest(
        `The engine serving this model (${worker.engine}) does not support ${describeLogitBiasRefusal(refusal)}.`,
        'logit_bias',
        'unsupported_parameter',
      );
    }
  }
}

/** Inputs sent as token ids name only tokens of the model's vocabulary (as every live engine that knows its size reports it); `param` names input `index`. */
function checkTokenIds(inputs: EmbeddingInput[], workers: WorkerAnnouncement[], param: (index: number) => string): void {
  const vocabulary = Math.min(...workers.map((worker) => worker.capabilities.logitBiasTokens || Infinity));
  if (!Number.isFinite(vocabulary)) return;
  const index = inputs.findIndex((input) => typeof input !== 'string' && input.some((token) => token >= vocabulary));
  if (index >= 0) {
    throw OpenAiError.invalidRequest(
      `'${param(index)}' holds a token id that is not in this model's vocabulary (${vocabulary} tokens).`,
      param(index),
      'invalid_value',
    );
  }
}

function unsupportedBy(engine: string, need: RequiredCapability): OpenAiError {
  const what: Record<RequiredCapability['capability'], string> = {
    tools: 'tool calling',
    grammar: 'structured output',
    logprobs: 'log probabilities',
    plainPrompts: 'plain prompts (without a chat template)',
    fillInTheMiddle: 'fill-in-the-middle (suffix): the model has no FIM tokens',
    promptLogprobs: "log probabilities of an echoed prompt's tokens (echo with logprobs)",
  } satisfies Record<RequiredCapability['capability'], string>;
  return OpenAiError.invalidRequest(
    `The engine serving this model (${engine}) does not support ${what[need.capability]}.`,
    need.param,
    'unsupported_parameter',
  );
}
