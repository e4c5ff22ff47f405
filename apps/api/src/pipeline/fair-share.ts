import { Injectable, Logger } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import { FAIR_SHARE_BAND_LEVELS, fairShareBandStart, tierJobOptions } from '@app/contracts';
import type { CompletionJobInput, CompletionUsage, TokenEvent } from '@app/contracts';
import { apiKeyId } from '../auth/api-key.guard';
import { ApiMetrics } from '../observability/api-metrics';
import { estimateAnswerTokens, estimatePromptTokens } from '../rate-limits/token-estimate';
import type { CompletionQueue } from './completion-queues';
import { FairShareCounters } from './fair-share-counters';

/** An answer token costs two prompt tokens, as in VTC's evaluation (generation is the dearer part). */
const ANSWER_TOKEN_COST = 2;

/** Distinct keys the per-key metrics name; any further key is counted as `other`. */
const MAX_KEY_LABELS = 100;

/** Where an admitted job waits in its tier, and what its key's counter is charged. */
export interface FairShareTicket {
  /** BullMQ options that place the job (its tier's, and with fair share its place in the tier's band). */
  readonly jobOptions: { lifo?: true; priority?: number };
  /** Its key is under its fair share and FAIR_SHARE_EXPRESS is on: it may take the model's express lane. */
  readonly express: boolean;
  /** Every event of the job: `started` moves the virtual time, `end` charges the real usage. */
  onEvent(event: TokenEvent): void;
  /** The job ended on this instance's side: one that never started gives back what it was charged. */
  release(): void;
}

/**
 * Fair share between API keys within a service tier (FAIR_SHARE), after VTC (Sheng et al.,
 * "Fairness in Serving Large Language Models", OSDI'24): each key's counter grows by the weighted
 * tokens it is served, divided by its weight (FAIR_SHARE_WEIGHTS); waiting jobs are taken in the
 * order of their key's counter, and a key that comes back after being idle is lifted to the
 * counters of the keys being served. BullMQ cannot choose at dispatch time, so the order is fixed
 * at admission (start-time fair queueing, FairShareCounters): a job is charged its estimated cost
 * then, and corrected to its real usage when it ends. Also records each key's served tokens and
 * queue wait, fair share or not.
 */
@Injectable()
export class FairShare {
  private readonly logger = new Logger(FairShare.name);
  private readonly weights: ReadonlyMap<string, number>;
  private readonly keyLabels = new Set<string>();

  constructor(
    private readonly env: ApiEnv,
    private readonly counters: FairShareCounters,
    private readonly metrics: ApiMetrics,
  ) {
    this.weights = weightsById(env.FAIR_SHARE_WEIGHTS, env.API_KEYS);
  }

  /** Charges the job's estimated cost to its key (a Redis round trip with FAIR_SHARE on) and places it. */
  async admit(job: CompletionJobInput, queue: CompletionQueue, keyId: string): Promise<FairShareTicket> {
    const tier = job.schedule.tier ?? 'default';
    const label = this.labelOf(keyId);
    if (!this.env.FAIR_SHARE) return this.ticket(job, label, tierJobOptions(tier), false);
    const weight = this.weights.get(keyId) ?? 1;
    const costOf = (prompt: number, answer: number) => Math.ceil((prompt + ANSWER_TOKEN_COST * answer) / weight);
    const estimate = costOf(estimatePromptTokens(job), estimateAnswerTokens(job));
    const first = fairShareBandStart(tier);
    const slot = await this.counters.admit(job.model, tier, keyId, estimate, queue.toKey('prioritized'), first, FAIR_SHARE_BAND_LEVELS);
    const quietly = (what: string) => (error: Error) => this.logger.debug(`fair share ${what} not recorded: ${error.message}`);
    const express = this.env.FAIR_SHARE_EXPRESS && slot.underShare && tier !== 'flex';
    return this.ticket(job, label, { priority: slot.priority }, express, {
      started: () => void this.counters.started(job.model, tier, slot.start).catch(quietly('start')),
      charge: (usage) =>
        void this.counters.correct(job.model, tier, keyId, costOf(usage.prompt_tokens, usage.completion_tokens) - estimate).catch(quietly('usage')),
      refund: () => void this.counters.correct(job.model, tier, keyId, -estimate).catch(quietly('refund')),
    });
  }

  private ticket(job: CompletionJobInput, key: string, jobOptions: FairShareTicket['jobOptions'], express: boolean, counter?: CounterHooks): FairShareTicket {
    const tier = job.schedule.tier ?? 'default';
    let started = false;
    let released = false;
    return {
      jobOptions,
      express,
      onEvent: (event) => {
        if (event.type === 'started') {
          if (!started) this.metrics.keyQueueWait.observe({ model: job.model, tier, key }, Math.max(0, Date.now() - job.schedule.acceptedAt) / 1000);
          started = true;
          counter?.started();
        } else if (event.type === 'end') {
          this.metrics.keyServedTokens.inc({ model: job.model, key, kind: 'prompt' }, event.usage.prompt_tokens);
          this.metrics.keyServedTokens.inc({ model: job.model, key, kind: 'completion' }, event.usage.completion_tokens);
          counter?.charge(event.usage);
          released = true;
        }
      },
      release: () => {
        if (released) return;
        released = true;
        if (!started) counter?.refund();
      },
    };
  }

  /** The key's id as a metric label, for at most MAX_KEY_LABELS keys per process. */
  private labelOf(keyId: string): string {
    if (this.keyLabels.has(keyId)) return keyId;
    if (this.keyLabels.size >= MAX_KEY_LABELS) return 'other';
    this.keyLabels.add(keyId);
    return keyId;
  }
}

interface CounterHooks {
  started(): void;
  charge(usage: CompletionUsage): void;
  refund(): void;
}

/** FAIR_SHARE_WEIGHTS (`key=weight`, keys of API_KEYS) by key id; the error names no key. */
export function weightsById(entries: readonly string[], apiKeys: readonly string[]): Map<string, number> {
  const weights = new Map<string, number>();
  for (const entry of entries) {
    const at = entry.lastIndexOf('=');
    const key = entry.slice(0, at);
    const weight = Number(entry.slice(at + 1));
    if (!apiKeys.includes(key)) throw new Error('FAIR_SHARE_WEIGHTS: an entry names a key not in API_KEYS');
    if (!(weight > 0)) throw new Error('FAIR_SHARE_WEIGHTS: every weight must be above 0');
    weights.set(apiKeyId(key), weight);
  }
  return weights;
}
