/**
 * `npm run bench:scale`: three API instances and three llama.cpp workers on one Redis under a
 * mixed streaming / non-streaming load spread round robin over the APIs; mid-load one API and
 * one worker are SIGKILLed. Every request must complete or end with a clear error: none lost,
 * none answered twice. Prints a table and writes bench/results/scale-out.json.
 *
 *   npm run bench:scale -- --requests=400 --concurrency=18
 */
import { resolve } from 'node:path';
import { REPO_ROOT } from '../../tools/local-stack/services';
import { numberOption } from '../common/command-line';
import { runScaleOut } from './scale-out-run';
import { formatReport, writeReport } from './scale-out-report';

async function main(): Promise<void> {
  const report = await runScaleOut({
    name: 'bench-scale-out',
    requests: numberOption('requests', 400),
    concurrency: numberOption('concurrency', 18),
    sendForMs: numberOption('seconds', 240) * 1000,
    requestTimeoutMs: 30_000,
    killAfter: 0.3,
    drainTimeoutMs: 30_000,
    recheckLimit: 20,
    log: (line) => console.error(`[scale-out] ${line}`),
  });
  writeReport(resolve(REPO_ROOT, 'bench/results/scale-out.json'), report);
  console.log(formatReport(report));
  if (report.counts.lost > 0 || report.counts.answeredTwice > 0) process.exitCode = 1;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
