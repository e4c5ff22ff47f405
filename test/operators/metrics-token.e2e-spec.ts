import { workerHealthUrl } from '../../tools/local-stack/services';
import { assertMatchesSchema } from '../support/openai-schema';
import { ServiceStack } from '../support/service-stack';
import { declaredMetrics, serverRoot } from './prometheus-text';

const TOKEN = 'scrape-token-for-tests-0123456789';

/** With METRICS_TOKEN set, /metrics on the API and on the worker answer only `Authorization: Bearer <token>`. */
describe('METRICS_TOKEN', () => {
  let stack: ServiceStack;
  let apiMetrics: string;
  let workerRoot: string;

  beforeAll(async () => {
    stack = await ServiceStack.start({ name: 'metrics-token', workers: 1, apiEnv: { METRICS_TOKEN: TOKEN }, workerEnv: { METRICS_TOKEN: TOKEN } });
    apiMetrics = `${serverRoot(stack.baseUrl)}/metrics`;
    workerRoot = await workerHealthUrl(stack.workers[0]);
  });
  afterAll(() => stack.stop());

  const refusals: Array<[string, Record<string, string>]> = [
    ['no Authorization header', {}],
    ['a wrong token', { authorization: `Bearer ${TOKEN}x` }],
    ['the token as Basic credentials', { authorization: `Basic ${Buffer.from(`metrics:${TOKEN}`).toString('base64')}` }],
  ];

  it.each(refusals)('the API refuses a scrape with %s: 401 in OpenAI error shape', async (_case, headers) => {
    const response = await fetch(apiMetrics, { headers });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toMatch(/^Bearer /);
    const body = (await response.json()) as { error: { code: string } };
    assertMatchesSchema('ErrorResponse', body);
    expect(body.error.code).toBe('invalid_metrics_token');
    expect(JSON.stringify(body)).not.toContain(TOKEN);
  });

  it.each(refusals)('the worker refuses a scrape with %s: 401', async (_case, headers) => {
    const response = await fetch(`${workerRoot}/metrics`, { headers });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toMatch(/^Bearer /);
    expect(await response.text()).not.toMatch(/llm_worker_/);
  });

  it('both serve their metrics to the token, and their health probes stay open', async () => {
    const authorization = `Bearer ${TOKEN}`;
    const api = await fetch(apiMetrics, { headers: { authorization } });
    expect(api.status).toBe(200);
    expect(declaredMetrics(await api.text()).get('llm_api_http_requests_total')).toBe('counter');
    const worker = await fetch(`${workerRoot}/metrics`, { headers: { authorization } });
    expect(worker.status).toBe(200);
    expect(declaredMetrics(await worker.text()).get('llm_worker_generated_tokens_total')).toBe('counter');

    expect((await fetch(`${serverRoot(stack.baseUrl)}/health/ready`)).status).toBe(200);
    expect((await fetch(`${workerRoot}/health/ready`)).status).toBe(200);
  });
});
