import type { ManagedProcess } from '../../tools/local-stack/managed-process';
import { workerHealthUrl } from '../../tools/local-stack/services';
import { longRequest, postChat } from '../support/chat-requests';
import { STACK_API_KEY, STACK_MODEL, ServiceStack, waitFor } from '../support/service-stack';
import { e2eStack } from '../support/stack-env';
import { serverRoot } from './prometheus-text';

interface HealthReport {
  status: string;
  info: Record<string, { status: string }>;
  error: Record<string, { status: string }>;
}

async function probe(url: string): Promise<{ status: number; body: HealthReport }> {
  const response = await fetch(url, { signal: AbortSignal.timeout(3000) });
  return { status: response.status, body: (await response.json()) as HealthReport };
}

/** One probe's outcome as a prober sees it: status and report status, or `refused` once nothing listens. */
async function outcome(url: string): Promise<string> {
  try {
    const { status, body } = await probe(url);
    return `${status} ${body.status}`;
  } catch {
    return 'refused';
  }
}

/** What a load balancer, an orchestrator or docker compose sees when it probes the services. */
describe('health endpoints', () => {
  const stack = e2eStack();

  it('API: live and ready, without an API key, with what readiness checked', async () => {
    const root = serverRoot(stack.apiUrls[0]);
    expect(await probe(`${root}/health/live`)).toMatchObject({ status: 200, body: { status: 'ok' } });
    expect(await probe(`${root}/health/ready`)).toMatchObject({
      status: 200,
      body: { status: 'ok', info: { redis: { status: 'up' }, events: { status: 'up' } } },
    });
  });

  it('worker: live and ready on its own port once its model is loaded and it takes jobs', async () => {
    for (const url of stack.workerHealthUrls) {
      expect(await probe(`${url}/health/live`)).toMatchObject({ status: 200, body: { status: 'ok' } });
      expect(await probe(`${url}/health/ready`)).toMatchObject({
        status: 200,
        body: { status: 'ok', info: { model: { status: 'up' }, redis: { status: 'up' }, queue: { status: 'up' } } },
      });
    }
    expect((await fetch(`${stack.workerHealthUrls[0]}/v1/models`)).status).toBe(404);
  });

  describe('while Redis is down', () => {
    let own: ServiceStack;
    let apiRoot: string;
    let workerRoot: string;

    beforeAll(async () => {
      // No ADMIN_PASSWORD here: this API must not serve Bull Board at all.
      own = await ServiceStack.start({ name: 'operators-health', workers: 1 });
      apiRoot = serverRoot(own.baseUrl);
      workerRoot = await workerHealthUrl(own.workers[0]);
    });
    afterAll(() => own.stop());

    it('both stay live but turn not ready (503) with the reason, and are ready again when it is back', async () => {
      expect((await probe(`${apiRoot}/health/ready`)).status).toBe(200);
      expect((await probe(`${workerRoot}/health/ready`)).status).toBe(200);

      await own.killRedis();
      const apiDown = await waitFor('API not ready', async () => {
        const result = await probe(`${apiRoot}/health/ready`);
        return result.status === 503 ? result : undefined;
      });
      expect(apiDown.body).toMatchObject({ status: 'error', error: { redis: { status: 'down' } } });
      const workerDown = await waitFor('worker not ready', async () => {
        const result = await probe(`${workerRoot}/health/ready`);
        return result.status === 503 ? result : undefined;
      });
      expect(workerDown.body).toMatchObject({ status: 'error', error: { redis: { status: 'down' } } });
      expect((await probe(`${apiRoot}/health/live`)).status).toBe(200);
      expect((await probe(`${workerRoot}/health/live`)).status).toBe(200);

      await own.startRedisAgain();
      await waitFor('API ready again', async () => (await probe(`${apiRoot}/health/ready`)).status === 200);
      await waitFor('worker ready again', async () => (await probe(`${workerRoot}/health/ready`)).status === 200);
    });

    it('serves no Bull Board when no admin password is configured', async () => {
      const response = await fetch(`${apiRoot}/admin/queues`);
      expect(response.status).toBe(404);
    });
  });

  describe.each([
    ['llama', false],
    ['openai', true],
  ])('while a worker drains (ENGINE=%s)', (engine, upstreamed) => {
    let upstream: ServiceStack | undefined;
    let own: ServiceStack;
    let worker: ManagedProcess;

    beforeAll(async () => {
      own = await ServiceStack.start({ name: `operators-health-drain-${engine}`, workers: upstreamed ? 0 : 1, parallelSequences: 4 });
      if (upstreamed) {
        // The upstream is a deployment of this service; its worker has the 4 sequences the openai worker fills.
        upstream = await ServiceStack.start({ name: 'operators-health-drain-upstream', workers: 1, parallelSequences: 4 });
        await own.addWorker({ ENGINE: 'openai', UPSTREAM_BASE_URL: upstream.baseUrl, UPSTREAM_API_KEY: STACK_API_KEY, UPSTREAM_MAX_CONCURRENCY: '4' });
      }
      worker = own.workers[0];
    }, 180_000);
    afterAll(async () => {
      await own?.stop();
      await upstream?.stop();
    });

    it('turns not ready (503 shutting_down) at SIGTERM and stays so until it exits, while it stays live', async () => {
      const root = await workerHealthUrl(worker);
      const queue = own.queue();
      const answers = Array.from({ length: 4 }, () => postChat(own.baseUrl, STACK_API_KEY, longRequest(STACK_MODEL, { max_tokens: 3000 })));
      await waitFor('four busy slots', async () => (await queue.getActiveCount()) === 4);
      expect(await outcome(`${root}/health/ready`)).toBe('200 ok');

      const exit = worker.stop('SIGTERM', 60_000);
      const probes: Array<{ ready: string; live: string; activeJobs: number }> = [];
      while (worker.isRunning) {
        const [ready, live, activeJobs] = await Promise.all([outcome(`${root}/health/ready`), outcome(`${root}/health/live`), queue.getActiveCount()]);
        probes.push({ ready, live, activeJobs });
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await exit;
      expect(worker.child.signalCode).toBe('SIGTERM');
      for (const answer of await Promise.all(answers)) expect(answer.status).toBe(200);

      // The drain was real: it was probed while its jobs still ran.
      expect(probes.filter((seen) => seen.activeJobs > 0 && seen.ready !== 'refused').length).toBeGreaterThanOrEqual(3);
      // Every answer once the worker has handled the signal (kill() returns before it does, so a
      // first probe may still find it ready); the port closes only as it exits.
      const distinct = (answers: string[]): string[] => [...new Set(answers.filter((answer) => answer !== 'refused'))];
      const handled = probes.findIndex((seen) => seen.ready !== '200 ok');
      expect(probes[handled]?.activeJobs).toBeGreaterThan(0);
      expect(distinct(probes.slice(Math.max(handled, 0)).map((seen) => seen.ready))).toEqual(['503 shutting_down']);
      // Live while it finishes its jobs: an orchestrator must not kill it for draining.
      expect(distinct(probes.map((seen) => seen.live))).toEqual(['200 ok']);
      const firstRefused = probes.findIndex((seen) => seen.ready === 'refused');
      if (firstRefused >= 0) expect(probes.slice(firstRefused).every((seen) => seen.ready === 'refused')).toBe(true);
    });
  });
});
