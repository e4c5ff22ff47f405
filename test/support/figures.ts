import { appendFileSync, mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { REPO_ROOT } from '../../tools/local-stack/services';

const FILE = resolve(REPO_ROOT, 'test-artifacts/fault-figures.jsonl');

/** Keeps a figure a fault test observed (a latency, a recovery time) as a test artefact to report. */
export function recordFigure(name: string, value: number, unit = 'ms'): void {
  mkdirSync(resolve(FILE, '..'), { recursive: true });
  appendFileSync(FILE, `${JSON.stringify({ name, value, unit, at: new Date().toISOString() })}\n`);
}
