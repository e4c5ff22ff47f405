import cluster from 'node:cluster';
import { randomUUID } from 'node:crypto';
import { AggregatorRegistry } from 'prom-client';
import type { Registry } from 'prom-client';

/**
 * /metrics under the supervisor: whichever API process a scrape reaches asks the supervisor,
 * which gathers every process's registry over IPC (prom-client's cluster support) and sums them,
 * so one scrape of the port sees the whole host. A metric that every process reads from the same
 * place (a queue's length in Redis) declares `aggregator: 'max'` instead of being summed.
 */
interface MetricsRequest {
  type: 'api-metrics:request';
  id: string;
}
interface MetricsReply {
  type: 'api-metrics:reply';
  id: string;
  body?: string;
  error?: string;
}

const SCRAPE_TIMEOUT_MS = 10_000;

/** In the supervisor: answers each process's request with the aggregate of all of them. */
export function answerMetricsRequests(): void {
  const aggregator = new AggregatorRegistry();
  cluster.on('message', (worker, message: Partial<MetricsRequest>) => {
    if (message?.type !== 'api-metrics:request' || typeof message.id !== 'string') return;
    const id = message.id;
    aggregator.clusterMetrics().then(
      (body) => worker.send({ type: 'api-metrics:reply', id, body } satisfies MetricsReply),
      (error: Error) => worker.send({ type: 'api-metrics:reply', id, error: error.message } satisfies MetricsReply),
    );
  });
}

/** In an API process: lets the supervisor read `registry` whenever any process is scraped. */
export function shareMetricsWithSupervisor(registry: Registry): void {
  AggregatorRegistry.setRegistries(registry);
  new AggregatorRegistry(); // its constructor installs the worker's side of prom-client's IPC
}

/** In an API process: the whole host's metrics, from the supervisor. */
export function metricsFromSupervisor(): Promise<string> {
  const id = randomUUID();
  return new Promise((resolve, reject) => {
    const onMessage = (message: Partial<MetricsReply>): void => {
      if (message?.type !== 'api-metrics:reply' || message.id !== id) return;
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
    process.send?.({ type: 'api-metrics:request', id } satisfies MetricsRequest);
  });
}
