/** One sample line of Prometheus's text exposition format. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** Parses what a Prometheus server would scrape; comment lines (HELP, TYPE) are skipped. */
export function parsePrometheusText(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue;
    const match = LINE.exec(line);
    if (!match) throw new Error(`not a Prometheus sample: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, name, value] of (match[2] ?? '').matchAll(LABEL)) labels[name] = value;
    samples.push({ name: match[1], labels, value: Number(match[3]) });
  }
  return samples;
}

/** Names declared with `# TYPE <name> <type>`. */
export function declaredMetrics(text: string): Map<string, string> {
  return new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map(([, name, type]) => [name, type]));
}

/** Sum of the samples named `name` whose labels include `labels`. */
export function total(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  return samples
    .filter((sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value))
    .reduce((sum, sample) => sum + sample.value, 0);
}

export interface Scrape {
  status: number;
  contentType: string | null;
  text: string;
  samples: Sample[];
}

export async function scrape(url: string): Promise<Scrape> {
  const response = await fetch(url);
  const text = await response.text();
  return { status: response.status, contentType: response.headers.get('content-type'), text, samples: parsePrometheusText(text) };
}

/** Scrapes until `condition` holds (counters are updated when a response has ended, a moment after the client has it). */
export async function scrapeUntil(url: string, condition: (samples: Sample[]) => boolean, timeoutMs = 5000): Promise<Scrape> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const result = await scrape(url);
    if (condition(result.samples) || Date.now() > deadline) return result;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** http://host:port/v1 -> http://host:port */
export const serverRoot = (baseUrl: string): string => new URL(baseUrl).origin;
