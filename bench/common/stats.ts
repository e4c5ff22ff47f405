/** Percentiles of a set of samples (milliseconds unless said otherwise). */
export interface Summary {
  count: number;
  mean: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
}

export const EMPTY_SUMMARY: Summary = { count: 0, mean: 0, p50: 0, p95: 0, p99: 0, max: 0 };

/** Nearest-rank percentile of sorted samples. */
function percentile(sorted: Float64Array, fraction: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(fraction * sorted.length) - 1));
  return sorted[rank];
}

/** A summary with its times rounded for a report (0.1 ms by default). */
export function roundSummary({ count, mean, p50, p95, p99, max }: Summary, digits = 1): Summary {
  return { count, mean: round(mean, digits), p50: round(p50, digits), p95: round(p95, digits), p99: round(p99, digits), max: round(max, digits) };
}

export function summarize(samples: ArrayLike<number>): Summary {
  if (samples.length === 0) return EMPTY_SUMMARY;
  const sorted = Float64Array.from(samples).sort();
  let total = 0;
  for (const value of sorted) total += value;
  return {
    count: sorted.length,
    mean: total / sorted.length,
    p50: percentile(sorted, 0.5),
    p95: percentile(sorted, 0.95),
    p99: percentile(sorted, 0.99),
    max: sorted[sorted.length - 1],
  };
}

/**
 * A growable list of numbers kept in typed arrays, so that a run collecting millions of gaps
 * between chunks does not hold millions of boxed numbers.
 */
export class SampleBuffer {
  private data = new Float64Array(1024);
  private size = 0;

  push(value: number): void {
    if (this.size === this.data.length) {
      const grown = new Float64Array(this.data.length * 2);
      grown.set(this.data);
      this.data = grown;
    }
    this.data[this.size++] = value;
  }

  get length(): number {
    return this.size;
  }

  summary(): Summary {
    return summarize(this.data.subarray(0, this.size));
  }
}

/** Best and worst of repeated measurements of one figure, and how far apart they are. */
export interface Spread {
  best: number;
  worst: number;
  runs: number[];
}

/** `higherIsBetter` for rates, false for latencies. */
export function spreadOf(values: number[], higherIsBetter: boolean): Spread {
  const sorted = [...values].sort((a, b) => a - b);
  return {
    best: higherIsBetter ? sorted[sorted.length - 1] : sorted[0],
    worst: higherIsBetter ? sorted[0] : sorted[sorted.length - 1],
    runs: values,
  };
}

/** The standard error of the samples' mean (their standard deviation over √count); 0 for fewer than two. */
export function standardError(samples: number[]): number {
  if (samples.length < 2) return 0;
  const mean = samples.reduce((sum, value) => sum + value, 0) / samples.length;
  const variance = samples.reduce((sum, value) => sum + (value - mean) ** 2, 0) / (samples.length - 1);
  return Math.sqrt(variance / samples.length);
}

/** The middle value (the lower of the two middle ones for an even count), as every p50 here. */
export const median = (samples: ArrayLike<number>): number => summarize(samples).p50;

/** A ratio as a percentage for a report: 0.9876 → "98.8%". */
export const percent = (ratio: number): string => `${round(ratio * 100, 1)}%`;

/** Rounds for JSON output: three significant decimals are plenty for noisy timings. */
export function round(value: number, digits = 3): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}
