import type { CpuProfile } from './inspector-client';
import type { ProfileSummary } from './results-model';
import { round } from '../common/stats';

const NON_FUNCTIONS = new Set(['(idle)', '(program)', '(garbage collector)', '(root)']);

/** Where a function comes from: an npm package, a part of this repository, Node itself, or V8. */
function packageOf(url: string, functionName: string): string {
  if (!url) return NON_FUNCTIONS.has(functionName) ? functionName : '(native)';
  if (url.startsWith('node:')) return 'node (core)';
  const inModules = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (inModules) return inModules[1];
  const inRepo = /dist\/apps\/\w+\/(apps\/\w+|libs\/\w+)\//.exec(url);
  return inRepo ? inRepo[1] : url;
}

function shortLocation(url: string, line: number): string {
  if (!url) return '';
  const trimmed = url
    .replace(/^file:\/\//, '')
    .replace(/^.*\/node_modules\//, '')
    .replace(/^.*\/dist\/apps\/\w+\//, '');
  return `${trimmed}:${line + 1}`;
}

/** Self time per function (from the samples and their time deltas), biggest first. */
export function summarizeProfile(phase: string, profile: CpuProfile, top = 25): ProfileSummary {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfUs = new Map<number, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  // A sample's time is the delta to the next sample.
  for (let index = 0; index < samples.length; index += 1) {
    const next = deltas[index + 1] ?? 0;
    selfUs.set(samples[index], (selfUs.get(samples[index]) ?? 0) + next);
  }
  const byFunction = new Map<string, { function: string; location: string; pkg: string; us: number }>();
  let totalUs = 0;
  let idleUs = 0;
  for (const [id, us] of selfUs) {
    const frame = byId.get(id)?.callFrame;
    if (!frame) continue;
    totalUs += us;
    if (frame.functionName === '(idle)') idleUs += us;
    const location = shortLocation(frame.url, frame.lineNumber);
    const key = `${frame.functionName}@${location}`;
    const entry = byFunction.get(key) ?? { function: frame.functionName || '(anonymous)', location, pkg: packageOf(frame.url, frame.functionName), us: 0 };
    entry.us += us;
    byFunction.set(key, entry);
  }
  const busyUs = Math.max(1, totalUs - idleUs);
  const functions = [...byFunction.values()].filter((entry) => entry.function !== '(idle)').sort((a, b) => b.us - a.us);
  const packages = new Map<string, number>();
  for (const entry of functions) packages.set(entry.pkg, (packages.get(entry.pkg) ?? 0) + entry.us);
  return {
    phase,
    totalMs: round(totalUs / 1000, 1),
    idlePercent: round((idleUs / Math.max(1, totalUs)) * 100, 1),
    top: functions.slice(0, top).map((entry) => ({
      function: entry.function,
      location: entry.location,
      selfMs: round(entry.us / 1000, 1),
      selfPercent: round((entry.us / busyUs) * 100, 1),
    })),
    byPackage: [...packages.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 15)
      .map(([name, us]) => ({ name, selfPercent: round((us / busyUs) * 100, 1) })),
  };
}
