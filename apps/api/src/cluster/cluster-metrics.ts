import type { Worker } from 'node:cluster';
import { randomUUID } from 'node:crypto';
import { AggregatorRegistry } from 'prom-client';
import type { Registry } from 'prom-client';

/**
 * /metrics under the supervisor: whichever API process a scrape reaches asks the supervisor,
 * which gathers the registries of the processes that serve (not one still booting) over IPC and
 * merges them with prom-client's aggregation, so one scrape of the port sees the whole host.
 * Counters and histograms are summed; a metric that every process reads from the same place (a
 * queue's length in Redis) declares `aggregator: 'max'` instead.
 */
type Metrics = Awaited<ReturnType<Registry['getMetricsAsJSON']>>;

type MetricsMessage =
  | { type: 'api-metrics:request'; id: string } // a process asks the supervisor for the host's metrics
  | { type: 'api-metrics:reply'; id: string; body?: string; error?: string }
  | { type: 'api-metrics:collect'; id: string } // the supervisor asks a process for its own
  | { type: 'api-metrics:collected'; id: string; metrics: Metrics };

const GATHER_TIMEOUT_MS = 5000;
const SCRAPE_TIMEOUT_MS = 10_000;

const isMetricsMessage = (message: unknown): message is MetricsMessage =>
  typeof message === 'object' &&
  message !== null &&
  typeof (message as { type?: unknown }).type === 'string' &&
  typeof (message as { id?: unknown }).id === 'string';

/**
 * In the supervisor: answers a process's request with the aggregate of `serving()`'s registries.
 * A process that does not answer in time fails the scrape (500), as a scrape of a stuck process would.
 */
export function answerMetricsRequests(serving: () => Worker[]): (from: Worker, message: unknown) => void {
  const gathering = new Map<string, { pending: number; metrics: Metrics[]; done: (metrics: Metrics[]) => void }>();
  return (from, message) => {
    if (!isMetricsMessage(message)) return;
    if (message.type === 'api-metrics:collected') {
      const gather = gathering.get(message.id);
      if (!gather) return;
      gather.metrics.push(message.metrics);
      if (--gather.pending === 0) gather.done(gather.metrics);
      return;
    }
    if (message.type !== 'api-metrics:request') return;
    const reply = (answer: { body?: string; error?: string }): void => {
      if (from.isConnected()) from.send({ type: 'api-metrics:reply', id: message.id, ...answer } satisfies MetricsMessage, () => undefined);
    };
    const processes = serving().filter((worker) => worker.isConnected());
    const id = randomUUID();
    const timer = setTimeout(() => {
      const missing = gathering.get(id)?.pending ?? 0;
      gathering.delete(id);
      reply({ error: `${missing} of ${processes.length} API processes did not answer` });
    }, GATHER_TIMEOUT_MS);
    gathering.set(id, {
      pending: processes.length,
      metrics: [],
      done: (metrics) => {
        clearTimeout(timer);
        gathering.delete(id);
        AggregatorRegistry.aggregate(metrics)
          .metrics()
          .then((body) => reply({ body }))
          .catch((error: Error) => reply({ error: error.message }));
      },
    });
    if (processes.length === 0) gathering.get(id)?.done([]);
    for (const worker of processes) worker.send({ type: 'api-metrics:collect', id } satisfies MetricsMessage, () => undefined);
  };
}

/** In an API process: hands `registry` to the supervisor whenever any process is scraped. */
export function shareMetricsWithSupervisor(registry: Registry): void {
  process.on('message', (message: unknown) => {
    if (!isMetricsMessage(message) || message.type !== 'api-metrics:collect') return;
    void registry
      .getMetricsAsJSON()
      .then((metrics) => process.send?.({ type: 'api-metrics:collected', id: message.id, metrics } satisfies MetricsMessage, () => undefined));
  });
}

/** In an API process: the whole host's metrics, from the supervisor. */
export function metricsFromSupervisor(): Promise<string> {
  const id = randomUUID();
  return new Promise((resolve, reject) => {
    const onMessage = (message: unknown): void => {
      if (!isMetricsMessage(message) || message.type !== 'api-metrics:reply' || message.id !== id) return;
      finish();
      if (message.body !== undefined) resolve(message.body);
      else reject(new Error(`metrics from the other API processes: ${message.error ?? 'no answer'}`));
    };
    const timer = setTimeout(() => {
      finish();
      reject(new Error('metrics from the other API processes: timed out'));
    }, SCRAPE_TIMEOUT_MS);
    const finish = (): void => {
      clearTimeout(timer);
      process.off('message', onMessage);
    };
    process.on('message', onMessage);
    process.send?.({ type: 'api-metrics:request', id } satisfies MetricsMessage);
  });
}
