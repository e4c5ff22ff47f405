import type { BenchResults } from '../results-model';
import { percent, round } from '../../common/stats';

/** A hand-made SVG of the headline figures: grouped bars per concurrency, target lines, the bars met. */

interface Series {
  name: string;
  color: string;
  values: Array<number | null>;
}

interface PanelSpec {
  title: string;
  unit: string;
  categories: string[];
  series: Series[];
  target?: { value: number; label: string };
  log?: boolean;
  /** Text under each category, e.g. a ratio. */
  notes?: string[];
}

const COLORS = { engine: '#8c9bab', service: '#2b6cb0', p99: '#dd6b20', offered: '#cbd5e0', heap: '#38a169' };
const FONT = 'font-family="system-ui, -apple-system, Segoe UI, sans-serif"';

const escape = (text: string): string => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function compact(value: number): string {
  if (value >= 10_000) return `${round(value / 1000, 0)}k`;
  if (value >= 1000) return `${round(value / 1000, 1)}k`;
  if (value >= 100) return String(Math.round(value));
  if (value >= 10) return String(round(value, 1));
  return String(round(value, 2));
}

function panel(x: number, y: number, width: number, height: number, spec: PanelSpec): string {
  const left = 52;
  const top = 58;
  const bottom = spec.notes ? 46 : 30;
  const plotW = width - left - 12;
  const plotH = height - top - bottom;
  const values = spec.series.flatMap((series) => series.values.filter((value): value is number => value !== null && value > 0));
  const maxValue = Math.max(spec.target?.value ?? 0, ...values, 1e-3) * 1.15;
  const minLog = spec.log ? 10 ** Math.floor(Math.log10(Math.max(1e-3, Math.min(...values, spec.target?.value ?? Infinity)))) : 0;
  const scale = (value: number): number => {
    if (!spec.log) return (value / maxValue) * plotH;
    const span = Math.log10(maxValue) - Math.log10(minLog);
    return ((Math.log10(Math.max(value, minLog)) - Math.log10(minLog)) / span) * plotH;
  };
  const parts: string[] = [`<g transform="translate(${x},${y})">`];
  parts.push(`<rect width="${width}" height="${height}" rx="6" fill="#fff" stroke="#e2e8f0"/>`);
  parts.push(`<text x="12" y="20" font-size="14" font-weight="600" ${FONT}>${escape(spec.title)}</text>`);
  // Legend.
  let legendX = 12;
  for (const series of spec.series) {
    parts.push(`<rect x="${legendX}" y="27" width="10" height="10" fill="${series.color}"/>`);
    parts.push(`<text x="${legendX + 14}" y="36" font-size="11" fill="#4a5568" ${FONT}>${escape(series.name)}</text>`);
    legendX += 22 + series.name.length * 6.2;
  }
  parts.push(`<g transform="translate(${left},${top})">`);
  // Axis ticks.
  const ticks = spec.log
    ? Array.from({ length: Math.ceil(Math.log10(maxValue / minLog)) + 1 }, (_, index) => minLog * 10 ** index).filter((tick) => tick <= maxValue)
    : [0, 0.25, 0.5, 0.75, 1].map((fraction) => fraction * (maxValue / 1.15));
  for (const tick of ticks) {
    const ty = plotH - scale(tick);
    parts.push(`<line x1="0" x2="${plotW}" y1="${ty}" y2="${ty}" stroke="#edf2f7"/>`);
    parts.push(`<text x="-6" y="${ty + 4}" font-size="10" text-anchor="end" fill="#718096" ${FONT}>${compact(tick)}</text>`);
  }
  parts.push(`<text x="-46" y="-9" font-size="10" fill="#718096" ${FONT}>${escape(spec.unit)}</text>`);
  const groupW = plotW / Math.max(1, spec.categories.length);
  const barW = Math.min(34, (groupW * 0.8) / spec.series.length);
  spec.categories.forEach((category, index) => {
    const groupX = index * groupW + (groupW - barW * spec.series.length) / 2;
    spec.series.forEach((series, seriesIndex) => {
      const value = series.values[index];
      if (value === null || value === undefined) return;
      const h = Math.max(1, scale(value));
      const bx = groupX + seriesIndex * barW;
      parts.push(`<rect x="${bx}" y="${plotH - h}" width="${barW - 2}" height="${h}" fill="${series.color}"/>`);
      parts.push(`<text x="${bx + barW / 2 - 1}" y="${plotH - h - 3}" font-size="9" text-anchor="middle" fill="#2d3748" ${FONT}>${compact(value)}</text>`);
    });
    parts.push(
      `<text x="${index * groupW + groupW / 2}" y="${plotH + 14}" font-size="11" text-anchor="middle" fill="#2d3748" ${FONT}>${escape(category)}</text>`,
    );
    const note = spec.notes?.[index];
    if (note)
      parts.push(`<text x="${index * groupW + groupW / 2}" y="${plotH + 28}" font-size="9" text-anchor="middle" fill="#4a5568" ${FONT}>${escape(note)}</text>`);
  });
  if (spec.target) {
    const ty = plotH - scale(spec.target.value);
    parts.push(`<line x1="0" x2="${plotW}" y1="${ty}" y2="${ty}" stroke="#e53e3e" stroke-dasharray="5 3"/>`);
    parts.push(`<text x="${plotW}" y="${ty - 3}" font-size="10" text-anchor="end" fill="#e53e3e" ${FONT}>${escape(spec.target.label)}</text>`);
  }
  parts.push(`<line x1="0" x2="${plotW}" y1="${plotH}" y2="${plotH}" stroke="#a0aec0"/>`);
  parts.push('</g></g>');
  return parts.join('\n');
}

function placeholder(x: number, y: number, width: number, height: number, title: string): string {
  return `<g transform="translate(${x},${y})"><rect width="${width}" height="${height}" rx="6" fill="#f7fafc" stroke="#e2e8f0"/><text x="12" y="20" font-size="14" font-weight="600" ${FONT}>${escape(title)}</text><text x="${width / 2}" y="${height / 2}" font-size="12" text-anchor="middle" fill="#a0aec0" ${FONT}>not run</text></g>`;
}

export function renderChart(results: BenchResults): string {
  const width = 1200;
  const panelW = 384;
  const panelH = 270;
  const gap = 12;
  const headerH = 40 + results.bars.length * 18 + 16;
  const panels: string[] = [];
  const at = (index: number): [number, number] => [gap + (index % 3) * (panelW + gap), headerH + Math.floor(index / 3) * (panelH + gap)];
  const cat = (levels: Array<{ concurrency: number }>): string[] => levels.map((level) => `c=${level.concurrency}`);

  const llama = results.llama ?? [];
  panels.push(
    llama.length
      ? panel(...at(0), panelW, panelH, {
          title: 'llama.cpp tokens/s, all runs pooled: engine alone vs service',
          unit: 'tok/s',
          categories: cat(llama),
          series: [
            { name: 'engine alone', color: COLORS.engine, values: llama.map((level) => level.engine.pooledTokensPerSecond) },
            { name: 'service', color: COLORS.service, values: llama.map((level) => level.service.pooledTokensPerSecond) },
          ],
          notes: llama.map((level) => percent(level.ratio.pooledTokensPerSecond)),
        })
      : placeholder(...at(0), panelW, panelH, 'llama.cpp tokens/s'),
  );
  panels.push(
    llama.length
      ? panel(...at(1), panelW, panelH, {
          title: 'llama.cpp time to first token p50',
          unit: 'ms',
          log: true,
          categories: cat(llama),
          series: [
            { name: 'engine alone', color: COLORS.engine, values: llama.map((level) => level.engine.ttftMs.p50) },
            { name: 'service', color: COLORS.service, values: llama.map((level) => level.service.ttftMs.p50) },
          ],
          notes: llama.map((level) => `+${round(level.addedTtftMs.p50, 1)} ms`),
        })
      : placeholder(...at(1), panelW, panelH, 'llama.cpp time to first token'),
  );
  const synthetic = results.synthetic ?? [];
  panels.push(
    synthetic.length
      ? panel(...at(2), panelW, panelH, {
          title: 'TTFT added by the service (synthetic)',
          unit: 'ms',
          log: true,
          categories: cat(synthetic),
          series: [
            { name: 'added p50', color: COLORS.service, values: synthetic.map((level) => Math.max(0.01, level.addedTtftMs.p50)) },
            { name: 'added p99', color: COLORS.p99, values: synthetic.map((level) => Math.max(0.01, level.addedTtftMs.p99)) },
          ],
          target: { value: 2, label: 'target p50 ≤ 2 ms (p99 ≤ 10 ms) at c=100' },
        })
      : placeholder(...at(2), panelW, panelH, 'Added time to first token'),
  );
  const relay = results.relay ?? [];
  panels.push(
    relay.length
      ? panel(...at(3), panelW, panelH, {
          title: 'Delta events/s relayed by one API',
          unit: 'events/s',
          categories: relay.map((level) => `${level.concurrency} × ${level.tokenIntervalMs ?? '?'} ms`),
          series: [
            { name: 'engine alone (offered)', color: COLORS.offered, values: relay.map((level) => level.engine.deltaEventsPerSecond) },
            { name: 'service', color: COLORS.service, values: relay.map((level) => level.service.deltaEventsPerSecond) },
          ],
          target: { value: 50_000, label: 'target 50k/s' },
          notes: relay.map((level) => `ITL ${round(level.service.itlMs.p50, 1)} ms`),
        })
      : placeholder(...at(3), panelW, panelH, 'Delta events relayed per second'),
  );
  // A handful of streams tells nothing per stream: the chart starts at 100.
  const open = (results.openStreams?.levels ?? []).filter((level) => level.streams >= 100);
  panels.push(
    open.length
      ? panel(...at(4), panelW, panelH, {
          title: 'API memory per open stream (after GC)',
          unit: 'KB',
          categories: open.map((level) => `${level.opened} open`),
          series: [
            { name: 'RSS', color: COLORS.service, values: open.map((level) => Math.max(0, level.perStreamBytes.rss / 1024)) },
            { name: 'JS heap', color: COLORS.heap, values: open.map((level) => Math.max(0, level.perStreamBytes.heapUsed / 1024)) },
          ],
          target: { value: 64, label: 'target ≤ 64 KB' },
          notes: open.map((level) => `Redis conns: ${level.redisApiConnections}`),
        })
      : placeholder(...at(4), panelW, panelH, 'API memory per open stream'),
  );
  const nonStream = results.nonStream ?? [];
  panels.push(
    nonStream.length
      ? panel(...at(5), panelW, panelH, {
          title: 'Non-stream requests/s (synthetic, 0 ms)',
          unit: 'req/s',
          categories: cat(nonStream),
          series: [{ name: 'service', color: COLORS.service, values: nonStream.map((level) => level.service.requestsPerSecond) }],
          target: { value: 2000, label: 'target 2,000/s' },
          notes: nonStream.map((level) => `p99 ${compact(level.service.latencyMs.p99)} ms`),
        })
      : placeholder(...at(5), panelW, panelH, 'Non-stream requests/s'),
  );

  const height = headerH + 2 * (panelH + gap) + gap + 18;
  const footer = `<text x="${gap}" y="${height - 10}" font-size="11" fill="#4a5568" ${FONT}>Each point: best of its runs (spread in the JSON). Load average at start ${results.machine.loadAverageAtStart.join(' / ')} on a machine shared with other work; ${escape(results.mode)} plan, ${results.durationSeconds} s. Figures: bench/results/*.json.</text>`;
  const header = [
    `<text x="${gap}" y="26" font-size="18" font-weight="700" ${FONT}>Service vs engine alone — ${escape(results.machine.cpuModel)} × ${results.machine.cpus}, Node ${escape(results.machine.node)}, ${results.mode} run ${escape(results.generatedAt.slice(0, 16))}Z</text>`,
    ...results.bars.map((bar, index) => {
      const mark = bar.met === null ? '–' : bar.met ? '✔' : '✘';
      const color = bar.met === null ? '#718096' : bar.met ? '#2f855a' : '#c53030';
      return `<text x="${gap}" y="${50 + index * 18}" font-size="12" ${FONT}><tspan fill="${color}" font-weight="700">${mark}</tspan> <tspan font-weight="600">${escape(bar.name)}</tspan> (target ${escape(bar.target)}): ${escape(bar.measured)}</text>`;
    }),
  ];
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">`,
    `<rect width="${width}" height="${height}" fill="#f7fafc"/>`,
    ...header,
    ...panels,
    footer,
    '</svg>',
    '',
  ].join('\n');
}
