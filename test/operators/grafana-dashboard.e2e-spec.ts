import { parser } from '@prometheus-io/lezer-promql';
import { readFileSync, statSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { postChat, readStream } from '../support/chat-requests';
import { e2eStack } from '../support/stack-env';
import { REPO_ROOT, asArray, at, filesUnder, readYaml } from './deploy-files';
import type { Json } from './deploy-files';
import { scrape, scrapeUntil, serverRoot, total } from './prometheus-text';
import type { Sample } from './prometheus-text';

const compose = readYaml(resolve(REPO_ROOT, 'docker-compose.yml')) as Json;
const service = (name: string): Json => at(compose, 'services', name) as Json;
const prometheusConfig = readYaml(resolve(REPO_ROOT, 'deploy/prometheus/prometheus.yml')) as Json;
const scrapeJobs = asArray(prometheusConfig.scrape_configs) as Json[];
const datasources = asArray(at(readYaml(resolve(REPO_ROOT, 'deploy/grafana/provisioning/datasources/prometheus.yml')), 'datasources')) as Json[];
const providers = asArray(at(readYaml(resolve(REPO_ROOT, 'deploy/grafana/provisioning/dashboards/llm-service.yml')), 'providers')) as Json[];

/** `host:container[:mode]` volumes of a Compose service, as container path -> repository path. */
function bindMounts(name: string): Map<string, string> {
  return new Map(
    asArray(service(name).volumes)
      .map(String)
      .filter((volume) => volume.startsWith('./'))
      .map((volume) => {
        const [host, container] = volume.split(':');
        return [container, resolve(REPO_ROOT, host)];
      }),
  );
}

/** The dashboards Grafana loads: the JSON files in the directory Compose mounts at each file provider's path. */
function provisionedDashboards(): Array<{ file: string; dashboard: Json }> {
  const mounts = bindMounts('grafana');
  return providers.flatMap((provider) => {
    expect(provider.type).toBe('file');
    const directory = mounts.get(String(at(provider, 'options', 'path')));
    if (!directory) throw new Error(`no Compose volume mounts a directory at ${String(at(provider, 'options', 'path'))} in grafana`);
    return filesUnder(directory, ['.json']).map((file) => ({ file: basename(file), dashboard: JSON.parse(readFileSync(file, 'utf8')) as Json }));
  });
}

interface Target {
  panel: string;
  refId: string;
  expr: string;
}

/** Grafana's built-in variables, and the dashboard's own (a regex that matches anything stands in for each). */
const BUILT_IN = { $__rate_interval: '1m', $__interval: '15s', $__range: '1h' };
function expandVariables(expr: string, variables: string[]): string {
  let expanded = expr;
  for (const [name, value] of Object.entries(BUILT_IN)) expanded = expanded.split(name).join(value);
  for (const name of variables) expanded = expanded.split(`$${name}`).join('.*');
  const unknown = /\$\{?\w+/.exec(expanded);
  if (unknown) throw new Error(`undefined variable ${unknown[0]} in ${expr}`);
  return expanded;
}

interface Selector {
  metric: string;
  matchers: Array<{ label: string; op: string; value: string }>;
}

/** Parses an expression with Prometheus's own PromQL grammar: its vector selectors and grouping labels; a syntax error throws. */
function analyse(expr: string): { selectors: Selector[]; grouping: string[] } {
  const tree = parser.parse(expr);
  const text = (from: number, to: number): string => expr.slice(from, to);
  const selectors: Selector[] = [];
  const grouping: string[] = [];
  const cursor = tree.cursor();
  do {
    if (cursor.type.isError) throw new Error(`PromQL syntax error at ${cursor.from} in ${expr}`);
    if (cursor.name === 'VectorSelector') {
      const node = cursor.node;
      const identifier = node.getChild('Identifier');
      if (!identifier) throw new Error(`a selector without a metric name in ${expr}`);
      const matchers = node.getChild('LabelMatchers')?.getChildren('UnquotedLabelMatcher') ?? [];
      selectors.push({
        metric: text(identifier.from, identifier.to),
        matchers: matchers.map((matcher) => {
          const label = matcher.getChild('LabelName');
          const op = matcher.getChild('MatchOp');
          const value = matcher.getChild('StringLiteral');
          if (!label || !op || !value) throw new Error(`an incomplete label matcher in ${expr}`);
          return { label: text(label.from, label.to), op: text(op.from, op.to), value: JSON.parse(text(value.from, value.to)) as string };
        }),
      });
    }
    if (cursor.name === 'GroupingLabels') {
      for (const label of cursor.node.getChildren('LabelName')) grouping.push(text(label.from, label.to));
    }
  } while (cursor.next());
  return { selectors, grouping };
}

describe('Grafana dashboard and Prometheus configuration (deploy/, Compose profile monitoring)', () => {
  const stack = e2eStack();
  const dashboards = provisionedDashboards();
  const jobNames = scrapeJobs.map((job) => String(job.job_name));
  const datasourceUids = datasources.map((datasource) => String(datasource.uid));

  it('Compose runs Prometheus and Grafana in the monitoring profile, with the provisioning mounted', () => {
    for (const name of ['prometheus', 'grafana']) expect(service(name).profiles).toEqual(['monitoring']);
    expect(bindMounts('grafana').get('/etc/grafana/provisioning')).toBe(resolve(REPO_ROOT, 'deploy/grafana/provisioning'));
    expect(bindMounts('prometheus').get('/etc/prometheus/prometheus.yml')).toBe(resolve(REPO_ROOT, 'deploy/prometheus/prometheus.yml'));
    expect(datasources).toHaveLength(1);
    expect(datasources[0]).toMatchObject({ type: 'prometheus', access: 'proxy', url: 'http://prometheus:9090' });
    expect(typeof datasources[0].uid).toBe('string');
    expect(dashboards.map(({ file }) => file)).toEqual(['llm-service.json']);
  });

  it('Prometheus scrapes every API replica and every worker where they serve /metrics, token optional', () => {
    const byName = new Map(scrapeJobs.map((job) => [String(job.job_name), job]));
    const target = (job: string): { names: string[]; port: number } => {
      const [sd] = asArray(at(byName.get(job), 'dns_sd_configs')) as Json[];
      return { names: asArray(sd.names).map(String), port: Number(sd.port) };
    };
    // The API service's replicas answer under its service name, on PORT.
    expect(target('llm-api')).toEqual({ names: ['api'], port: Number(at(service('api'), 'environment', 'PORT')) });
    // Every worker service (CPU and GPU) carries the alias and serves on HEALTH_PORT.
    const workerServices = Object.keys(at(compose, 'services') as Json).filter((name) => name.startsWith('worker-'));
    expect(workerServices.length).toBeGreaterThanOrEqual(3);
    const { names, port } = target('llm-worker');
    for (const name of workerServices) {
      expect([name, at(service(name), 'networks', 'default', 'aliases')]).toEqual([name, names]);
      expect([name, Number(at(service(name), 'environment', 'HEALTH_PORT'))]).toEqual([name, port]);
    }
    // The bearer token comes from the Compose secret, an empty file unless METRICS_TOKEN_FILE names one.
    const secrets = asArray(service('prometheus').secrets).map(String);
    for (const job of scrapeJobs) {
      expect(job.metrics_path).toBe('/metrics');
      expect(at(job, 'authorization', 'type')).toBe('Bearer');
      expect(secrets.map((secret) => `/run/secrets/${secret}`)).toContain(at(job, 'authorization', 'credentials_file'));
    }
    const defaultFile = /^\$\{METRICS_TOKEN_FILE:-(.+)\}$/.exec(String(at(compose, 'secrets', secrets[0], 'file')))?.[1];
    expect(defaultFile && statSync(resolve(REPO_ROOT, defaultFile)).size).toBe(0);
  });

  it('the dashboard is in Grafana provisioning format: panels laid out on the grid, targets on the provisioned datasource', () => {
    for (const { file, dashboard } of dashboards) {
      expect([file, typeof dashboard.uid, typeof dashboard.title, typeof dashboard.schemaVersion]).toEqual([file, 'string', 'string', 'number']);
      const panels = asArray(dashboard.panels) as Json[];
      expect(new Set(panels.map((panel) => panel.id)).size).toBe(panels.length);
      const cells = new Set<string>();
      for (const panel of panels) {
        expect(['row', 'timeseries', 'stat']).toContain(panel.type);
        const { x, y, w, h } = panel.gridPos as Record<string, number>;
        expect([panel.title, x >= 0 && w > 0 && x + w <= 24 && h > 0]).toEqual([panel.title, true]);
        for (let row = y; row < y + h; row++) {
          for (let column = x; column < x + w; column++) {
            expect([panel.title, cells.has(`${column},${row}`)]).toEqual([panel.title, false]);
            cells.add(`${column},${row}`);
          }
        }
        if (panel.type === 'row') continue;
        expect(datasourceUids).toContain(at(panel, 'datasource', 'uid'));
        const targets = asArray(panel.targets) as Json[];
        expect([panel.title, targets.length > 0]).toEqual([panel.title, true]);
        expect(new Set(targets.map((target) => target.refId)).size).toBe(targets.length);
        for (const target of targets) {
          expect(datasourceUids).toContain(at(target, 'datasource', 'uid'));
          expect(typeof target.expr).toBe('string');
        }
      }
      for (const variable of asArray(at(dashboard, 'templating', 'list')) as Json[]) expect(datasourceUids).toContain(at(variable, 'datasource', 'uid'));
    }
  });

  it('every metric, label and job a panel asks for is one the API and the workers really export, after one completion', async () => {
    const targets: Target[] = dashboards.flatMap(({ dashboard }) =>
      (asArray(dashboard.panels) as Json[]).flatMap((panel) =>
        (asArray(panel.targets) as Json[]).map((target) => ({ panel: String(panel.title), refId: String(target.refId), expr: String(target.expr) })),
      ),
    );
    expect(targets.length).toBeGreaterThanOrEqual(20);

    // One streamed completion through the API, so every per-model series exists.
    const streamed = await readStream(
      await postChat(stack.apiUrls[0], stack.apiKey, {
        model: stack.model,
        messages: [{ role: 'user', content: 'Where did the rabbit go?' }],
        max_tokens: 8,
        stream: true,
      }),
    );
    expect(streamed.sawDone).toBe(true);
    // And one that ends in an error (prompt plus max_tokens beyond the context), so the per-code
    // error series exists too; the API counts it once the response has ended.
    const refused = await postChat(stack.apiUrls[0], stack.apiKey, {
      model: stack.model,
      messages: [{ role: 'user', content: 'Tell me everything.' }],
      max_tokens: 5000,
    });
    expect([refused.status, ((await refused.json()) as { error: { code: string } }).error.code]).toEqual([400, 'context_length_exceeded']);
    await scrapeUntil(
      `${serverRoot(stack.apiUrls[0])}/metrics`,
      (found) => total(found, 'llm_api_completion_errors_total', { model: stack.model, code: 'context_length_exceeded' }) >= 1,
    );
    const scrapes = await Promise.all([`${serverRoot(stack.apiUrls[0])}/metrics`, ...stack.workerHealthUrls.map((url) => `${url}/metrics`)].map(scrape));
    for (const { status } of scrapes) expect(status).toBe(200);
    const samples: Sample[] = scrapes.flatMap((result) => result.samples);
    const exported = new Map<string, Sample[]>();
    for (const sample of samples) exported.set(sample.name, [...(exported.get(sample.name) ?? []), sample]);

    const variables = dashboards.flatMap(({ dashboard }) => (asArray(at(dashboard, 'templating', 'list')) as Json[]).map((variable) => String(variable.name)));
    /** Labels Prometheus itself attaches to every scraped series. */
    const targetLabels = new Set(['job', 'instance']);
    const problems: string[] = [];
    const selectorsOf = (expr: string): Selector[] => {
      const { selectors, grouping } = analyse(expandVariables(expr, variables));
      const labels = new Set([
        ...targetLabels,
        ...selectors.flatMap(({ metric }) => (exported.get(metric) ?? []).flatMap((sample) => Object.keys(sample.labels))),
      ]);
      for (const label of grouping) if (!labels.has(label)) problems.push(`groups by ${label}, which none of its metrics has: ${expr}`);
      return selectors;
    };
    for (const { panel, refId, expr } of targets) {
      for (const { metric, matchers } of selectorsOf(expr)) {
        const series = exported.get(metric);
        if (!series) {
          problems.push(`${panel} ${refId}: ${metric} is not exported`);
          continue;
        }
        for (const { label, op, value } of matchers) {
          if (label === 'job') {
            for (const job of value.split('|')) if (!jobNames.includes(job)) problems.push(`${panel} ${refId}: job ${job} is not a scrape job`);
          } else if (!targetLabels.has(label) && !series.some((sample) => label in sample.labels)) {
            problems.push(`${panel} ${refId}: ${metric} has no label ${label}`);
          } else if (op === '=' && !series.some((sample) => sample.labels[label] === value)) {
            problems.push(`${panel} ${refId}: no ${metric} series has ${label}="${value}"`);
          }
        }
      }
    }
    // The model variable's own query too.
    for (const { dashboard } of dashboards) {
      for (const variable of asArray(at(dashboard, 'templating', 'list')) as Json[]) {
        const query = /^label_values\((\w+), (\w+)\)$/.exec(String(variable.definition));
        expect(query).not.toBeNull();
        const [, metric, label] = query as RegExpExecArray;
        expect(exported.get(metric)?.some((sample) => sample.labels[label] === stack.model)).toBe(true);
      }
    }
    expect(problems).toEqual([]);
    // Errors by OpenAI code, per model, not only by HTTP status (several codes share a status).
    expect(
      targets.some(
        ({ expr }) =>
          analyse(expandVariables(expr, variables)).selectors.some(({ metric }) => metric === 'llm_api_completion_errors_total') &&
          /by \(model, code\)/.test(expr),
      ),
    ).toBe(true);
  });

  it('the PromQL check is not vacuous: a misspelt metric, a syntax error and an unknown variable are caught', () => {
    expect(analyse('sum by (model) (rate(llm_worker_generated_tokens[1m]))').selectors.map(({ metric }) => metric)).toEqual(['llm_worker_generated_tokens']);
    expect(() => analyse('sum by (model) (rate(llm_worker_generated_tokens_total[1m])')).toThrow(/syntax error/);
    expect(() => expandVariables('llm_api_active_streams{model=~"$modle"}', ['model'])).toThrow(/undefined variable/);
  });
});
