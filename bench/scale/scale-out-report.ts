import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { round, summarize } from '../common/stats';
import type { Verdict } from './answer-checks';
import type { JobAudit, JobSummary } from './job-audit';
import type { LoadResult } from './load-with-kills';
import type { RetriedAnswersCheck } from './retried-answers';

export interface ScaleOutSetup {
  apis: number;
  workers: number;
  parallelSequences: number;
  jobLockMs: number;
  requests: number;
  concurrency: number;
  requestTimeoutMs: number;
  maxTokens: [number, number];
  killed: { api: string; worker: string };
}

export interface ScaleOutReport {
  measured: string;
  setup: ScaleOutSetup;
  /** Every sent request is exactly one of completed, clearError, lost, answeredTwice. */
  counts: {
    sent: number;
    completed: number;
    clearError: number;
    refusedByDeadInstance: number;
    lost: number;
    answeredTwice: number;
    completedAfterKills: number;
    notSentInTime: number;
  };
  killedAfterMs: number | null;
  clearErrors: Record<string, number>;
  problems: Array<{ index: number; kind: 'lost' | 'answered-twice'; detail: string }>;
  latencyMs: { p50: number; p95: number; max: number };
  throughput: { wallSeconds: number; completedPerSecond: number; answeredTokensPerSecond: number };
  jobs: JobSummary;
  retriedAnswers: RetriedAnswersCheck;
}

/** Puts the client's view, BullMQ's record and the re-asked answers into one report. */
export function buildReport(setup: ScaleOutSetup, load: LoadResult, audit: JobAudit, retriedAnswers: RetriedAnswersCheck): ScaleOutReport {
  const flagged = new Map(audit.answeredTwice.map((entry) => [entry.index, entry.detail]));
  const final = load.records.map((record) => {
    const auditDetail = flagged.get(record.request.index);
    const verdict: Verdict = auditDetail ? 'answered-twice' : record.verdict;
    return { record, verdict, detail: auditDetail ?? record.detail };
  });
  const count = (verdict: Verdict): number => final.filter((entry) => entry.verdict === verdict).length;
  const completed = final.filter((entry) => entry.verdict === 'completed').map((entry) => entry.record);
  const clearErrors: Record<string, number> = {};
  for (const entry of final) if (entry.verdict === 'clear-error') clearErrors[entry.detail] = (clearErrors[entry.detail] ?? 0) + 1;
  const latency = summarize(completed.map((record) => record.endedAt - record.startedAt));
  const wallSeconds = (load.endedAt - load.startedAt) / 1000;

  return {
    measured: new Date().toISOString(),
    setup,
    counts: {
      sent: load.records.length,
      completed: completed.length,
      clearError: count('clear-error'),
      refusedByDeadInstance: load.records.reduce((sum, record) => sum + record.refused, 0),
      lost: count('lost'),
      answeredTwice: count('answered-twice'),
      completedAfterKills: load.killedAt === undefined ? 0 : completed.filter((record) => record.startedAt >= load.killedAt!).length,
      notSentInTime: load.unsent,
    },
    killedAfterMs: load.killedAt === undefined ? null : load.killedAt - load.startedAt,
    clearErrors,
    problems: final
      .filter((entry) => entry.verdict === 'lost' || entry.verdict === 'answered-twice')
      .map((entry) => ({ index: entry.record.request.index, kind: entry.verdict as 'lost' | 'answered-twice', detail: entry.detail })),
    latencyMs: { p50: latency.p50, p95: latency.p95, max: latency.max },
    throughput: {
      wallSeconds: round(wallSeconds, 2),
      completedPerSecond: round(completed.length / wallSeconds, 2),
      answeredTokensPerSecond: round(audit.summary.answeredTokens / wallSeconds, 0),
    },
    jobs: audit.summary,
    retriedAnswers,
  };
}

/** The report as a small text table, for the terminal. */
export function formatReport(report: ScaleOutReport): string {
  const { setup, counts } = report;
  const rows: Array<[string, string | number]> = [
    ['sent', counts.sent],
    ['completed', counts.completed],
    ['  of them started after the kills', counts.completedAfterKills],
    ['ended with a clear error', counts.clearError],
    ...Object.entries(report.clearErrors).map(([kind, n]): [string, number] => [`  ${kind}`, n]),
    ['refused by dead instance (re-routed)', counts.refusedByDeadInstance],
    ['lost', counts.lost],
    ['answered twice', counts.answeredTwice],
    ['not sent within the time bound', counts.notSentInTime],
    ['latency p50 / p95 / max (ms)', `${report.latencyMs.p50} / ${report.latencyMs.p95} / ${report.latencyMs.max}`],
    ['throughput (completed/s, tokens/s)', `${report.throughput.completedPerSecond} / ${report.throughput.answeredTokensPerSecond}`],
    ['jobs completed / failed / unfinished', `${report.jobs.completed} / ${report.jobs.failed} / ${report.jobs.unfinished}`],
    ['jobs retried after the worker kill (completed)', `${report.jobs.retried} (${report.jobs.retriedCompleted})`],
    ['jobs finished for nobody', report.jobs.finishedForNobody],
    ['retried answers identical to a fresh run', `${report.retriedAnswers.identical} of ${report.retriedAnswers.checked}`],
  ];
  const width = Math.max(...rows.map(([label]) => label.length));
  const head =
    `scale-out: ${setup.apis} APIs, ${setup.workers} workers x ${setup.parallelSequences} sequences, ${setup.requests} requests at ` +
    `concurrency ${setup.concurrency}, max_tokens ${setup.maxTokens.join('-')}; SIGKILL ${setup.killed.api} and ${setup.killed.worker} ` +
    `at ${report.killedAfterMs ?? '-'} ms of ${report.throughput.wallSeconds * 1000} ms`;
  const workers = Object.entries(report.jobs.completedByWorker)
    .map(([worker, n]) => `${worker} ${n}`)
    .join(', ');
  const problems = report.problems.slice(0, 10).map((problem) => `  ${problem.kind} #${problem.index}: ${problem.detail}`);
  return [head, ...rows.map(([label, value]) => `  ${label.padEnd(width)}  ${value}`), `  completed jobs by worker: ${workers}`, ...problems].join('\n');
}

export function writeReport(path: string, report: ScaleOutReport): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(report, null, 2)}\n`);
}
