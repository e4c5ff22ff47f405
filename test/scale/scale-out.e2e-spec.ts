import { resolve } from 'node:path';
import { runScaleOut } from '../../bench/scale/scale-out-run';
import type { ScaleOutReport } from '../../bench/scale/scale-out-report';
import { writeReport } from '../../bench/scale/scale-out-report';
import { REPO_ROOT } from '../../tools/local-stack/services';
import { recordFigure } from '../support/figures';

/**
 * `npm run bench:scale`, bounded for CI: three APIs and three workers on a private Redis, 72
 * mixed requests at concurrency 12, one API and one worker SIGKILLed mid-load. Every request
 * must end within 30 s; the whole run (stack start included) within 90 s.
 */
describe('three APIs and three workers, one of each killed mid-load', () => {
  let report: ScaleOutReport;

  beforeAll(async () => {
    report = await runScaleOut({
      name: 'scale-out',
      requests: 72,
      concurrency: 12,
      sendForMs: 30_000,
      requestTimeoutMs: 30_000,
      killAfter: 0.3,
      drainTimeoutMs: 10_000,
      recheckLimit: 5,
    });
    writeReport(resolve(REPO_ROOT, 'test-artifacts/scale-out.json'), report);
    recordFigure('scale-out latency p95 with one API and one worker killed', report.latencyMs.p95);
  }, 90_000);

  it('loses no request: each completed whole or ended with a clear error, none hung', () => {
    const { counts } = report;
    expect(report.problems).toEqual([]);
    expect(counts.lost).toBe(0);
    expect(counts.notSentInTime).toBe(0);
  });

  it('answers no request twice, and a retried answer is the one a healthy run gives', () => {
    expect(report.counts.answeredTwice).toBe(0);
    expect(report.jobs.unfinished).toBe(0);
    // The worker is killed while it answers a non-stream request from a surviving API, so at
    // least one retried answer reaches its client and is compared.
    expect(report.retriedAnswers.checked).toBeGreaterThan(0);
    expect(report.retriedAnswers.different).toEqual([]);
  });

  it('killed for real mid-load, and the survivors kept serving', () => {
    expect(report.killedAfterMs).not.toBeNull();
    // The worker died holding a job, which another worker took up.
    expect(report.jobs.retried).toBeGreaterThan(0);
    expect(report.counts.completedAfterKills).toBeGreaterThan(0);
  });
});
