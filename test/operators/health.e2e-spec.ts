import { workerHealthUrl } from '../../tools/local-stack/services';
import { ServiceStack, waitFor } from '../support/service-stack';
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
});
