import { existsSync, mkdirSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { completionQueueName } from '@app/contracts';
import OpenAI from 'openai';
import { chromium } from 'playwright-core';
import type { Browser } from 'playwright-core';
import { REPO_ROOT } from '../../tools/local-stack/services';
import { e2eStack } from '../support/stack-env';
import { serverRoot } from './prometheus-text';

/** Debian's `chromium` package; .ci/run installs it. */
const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const SCREENSHOTS = resolve(REPO_ROOT, 'test-artifacts/bull-board');

const basic = (user: string, password: string): string => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

/** Bull Board at /admin/queues, as an operator reaches it: in a real browser, behind its own credential. */
describe('Bull Board', () => {
  const stack = e2eStack();
  const board = `${serverRoot(stack.apiUrls[0])}/admin/queues`;
  const queueName = completionQueueName(stack.model);

  it('is refused (401, Basic challenge) without the admin credential, with a wrong one and with an API key', async () => {
    for (const authorization of [undefined, basic(stack.admin.user, 'not-the-password'), `Bearer ${stack.apiKey}`, basic('admin', stack.apiKey)]) {
      for (const path of ['', '/api/queues', `/queue/${queueName}`]) {
        const response = await fetch(`${board}${path}`, { headers: authorization ? { authorization } : {} });
        expect(response.status).toBe(401);
        expect(response.headers.get('www-authenticate')).toMatch(/^Basic realm=/);
      }
    }
    // Browsers send Basic credentials cross-site as well: changes must come from the board's own pages.
    const crossSite = await fetch(`${board}/api/queues/no-such-queue/pause`, {
      method: 'PUT',
      headers: { authorization: basic(stack.admin.user, stack.admin.password), origin: 'https://elsewhere.example' },
    });
    expect(crossSite.status).toBe(403);
  });

  describe('in a browser', () => {
    let browser: Browser;

    beforeAll(async () => {
      if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium (.ci/run does)`);
      browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    });
    afterAll(() => browser?.close());

    it('logs in and shows the model queue with a job that finished', async () => {
      const client = new OpenAI({ baseURL: stack.apiUrls[0], apiKey: stack.apiKey, maxRetries: 0 });
      const completion = await client.chat.completions.create({
        model: stack.model,
        messages: [{ role: 'user', content: 'What did Alice see?' }],
        max_tokens: 8,
      });

      const context = await browser.newContext({
        httpCredentials: { username: stack.admin.user, password: stack.admin.password },
        viewport: { width: 1280, height: 800 },
      });
      const page = await context.newPage();
      mkdirSync(SCREENSHOTS, { recursive: true });

      const overview = await page.goto(board);
      expect(overview?.status()).toBe(200);
      await page.getByText(queueName).first().waitFor();
      await page
        .getByText(/\d+ Jobs?/)
        .first()
        .waitFor();
      await page.screenshot({ path: resolve(SCREENSHOTS, 'queues.png') });

      const jobPage = await page.goto(`${board}/queue/${queueName}/${completion.id}`);
      expect(jobPage?.status()).toBe(200);
      await page.getByText(completion.id).first().waitFor();
      await page.getByText('Finished at').waitFor();
      // processedBy: the worker that ran it.
      await page.getByText(new RegExp(`by (${stack.workerIds.join('|')})`)).waitFor();
      const screenshot = resolve(SCREENSHOTS, 'finished-job.png');
      await page.screenshot({ path: screenshot });
      expect(statSync(screenshot).size).toBeGreaterThan(10_000);
      await context.close();
    });
  });
});
