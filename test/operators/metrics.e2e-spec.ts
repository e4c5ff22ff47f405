import { postChat, readStream } from '../support/chat-requests';
import { e2eStack } from '../support/stack-env';
import { declaredMetrics, scrape, scrapeUntil, serverRoot, total } from './prometheus-text';
import type { Sample } from './prometheus-text';

/** What an operator's Prometheus scrapes from an API instance and from the workers, and that it moves with traffic. */
describe('Prometheus metrics', () => {
  const stack = e2eStack();
  const apiMetrics = `${serverRoot(stack.apiUrls[0])}/metrics`;
  const workerMetrics = stack.workerHealthUrls.map((url) => `${url}/metrics`);
  const request = (extra: Record<string, unknown> = {}) => ({
    model: stack.model,
    messages: [{ role: 'user', content: 'Where did the rabbit go?' }],
    max_tokens: 12,
    ...extra,
  });
  const chatRoute = { method: 'POST', route: '/v1/chat/completions' };
  const model = { model: stack.model };

  it('the API exposes requests by route and status, first-token and end-to-end latency, streams and queue depth', async () => {
    const before = await scrape(apiMetrics);
    expect(before.status).toBe(200);
    expect(before.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    const types = declaredMetrics(before.text);
    expect(Object.fromEntries(types)).toMatchObject({
      llm_api_http_requests_total: 'counter',
      llm_api_http_request_duration_seconds: 'histogram',
      llm_api_completion_duration_seconds: 'histogram',
      llm_api_time_to_first_token_seconds: 'histogram',
      llm_api_active_streams: 'gauge',
      llm_api_queue_waiting_jobs: 'gauge',
      llm_api_queue_prioritized_jobs: 'gauge',
      llm_api_queue_active_jobs: 'gauge',
      process_cpu_seconds_total: 'counter',
    });
    // Read from Redis on each scrape, for every configured model.
    expect(before.samples.find((sample) => sample.name === 'llm_api_queue_waiting_jobs' && sample.labels.model === stack.model)?.value).toBeGreaterThanOrEqual(
      0,
    );

    const streamed = await readStream(await postChat(stack.apiUrls[0], stack.apiKey, request({ stream: true })));
    expect(streamed.sawDone).toBe(true);
    const refused = await fetch(`${stack.apiUrls[0]}/chat/completions`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
    expect(refused.status).toBe(401);

    const ok = { ...chatRoute, status: '200' };
    const moved = (samples: Sample[], name: string, labels: Record<string, string>): number =>
      total(samples, name, labels) - total(before.samples, name, labels);
    const after = await scrapeUntil(
      apiMetrics,
      (samples) =>
        moved(samples, 'llm_api_http_requests_total', ok) >= 1 && moved(samples, 'llm_api_http_requests_total', { ...chatRoute, status: '401' }) >= 1,
    );
    expect(moved(after.samples, 'llm_api_http_requests_total', ok)).toBeGreaterThanOrEqual(1);
    expect(moved(after.samples, 'llm_api_http_requests_total', { ...chatRoute, status: '401' })).toBeGreaterThanOrEqual(1);
    expect(moved(after.samples, 'llm_api_http_request_duration_seconds_count', ok)).toBeGreaterThanOrEqual(1);
    const streamLabels = { ...model, stream: 'true' };
    expect(moved(after.samples, 'llm_api_time_to_first_token_seconds_count', streamLabels)).toBeGreaterThanOrEqual(1);
    expect(moved(after.samples, 'llm_api_time_to_first_token_seconds_sum', streamLabels)).toBeGreaterThan(0);
    expect(moved(after.samples, 'llm_api_completion_duration_seconds_count', { ...streamLabels, status: '200' })).toBeGreaterThanOrEqual(1);
    expect(after.samples.some((sample) => sample.name === 'llm_api_active_streams' && sample.labels.model === stack.model)).toBe(true);
  });

  it('the workers expose queue wait, first-token and inter-token latency, tokens generated and their slots', async () => {
    const before = await Promise.all(workerMetrics.map(scrape));
    for (const { status, text } of before) {
      expect(status).toBe(200);
      expect(Object.fromEntries(declaredMetrics(text))).toMatchObject({
        llm_worker_queue_wait_seconds: 'histogram',
        llm_worker_time_to_first_token_seconds: 'histogram',
        llm_worker_inter_token_latency_seconds: 'histogram',
        llm_worker_generation_duration_seconds: 'histogram',
        llm_worker_generations_total: 'counter',
        llm_worker_generated_tokens_total: 'counter',
        llm_worker_prompt_tokens_total: 'counter',
        llm_worker_busy_slots: 'gauge',
        llm_worker_free_slots: 'gauge',
      });
    }
    const sumOver = (scrapes: Array<{ samples: Sample[] }>, name: string, labels: Record<string, string> = model): number =>
      scrapes.reduce((sum, { samples }) => sum + total(samples, name, labels), 0);

    const response = await postChat(stack.apiUrls[1], stack.apiKey, request({ temperature: 0 }));
    expect(response.status).toBe(200);
    const { usage } = (await response.json()) as { usage: { completion_tokens: number; prompt_tokens: number } };
    expect(usage.completion_tokens).toBeGreaterThan(1);

    const after = await Promise.all(workerMetrics.map(scrape));
    const moved = (name: string, labels?: Record<string, string>): number => sumOver(after, name, labels) - sumOver(before, name, labels);
    expect(moved('llm_worker_generated_tokens_total')).toBeGreaterThanOrEqual(usage.completion_tokens);
    expect(moved('llm_worker_prompt_tokens_total')).toBeGreaterThanOrEqual(usage.prompt_tokens);
    expect(moved('llm_worker_queue_wait_seconds_count')).toBeGreaterThanOrEqual(1);
    expect(moved('llm_worker_time_to_first_token_seconds_count')).toBeGreaterThanOrEqual(1);
    // One observation between each two pieces of text of the answer.
    expect(moved('llm_worker_inter_token_latency_seconds_count')).toBeGreaterThanOrEqual(1);
    expect(moved('llm_worker_generations_total')).toBeGreaterThanOrEqual(1);
    // Each worker runs 2 parallel sequences: busy + free is always its slot count.
    for (const { samples } of after) {
      expect(total(samples, 'llm_worker_busy_slots', model) + total(samples, 'llm_worker_free_slots', model)).toBe(2);
    }
  });
});
