import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import * as config from '@app/config';
import { CONFIGURATION_DOC, renderEnvTables, withGeneratedPart } from './configuration-doc';
import { readEnvClasses } from './env-reference';

const repoRoot = resolve(__dirname, '../..');
const classes = readEnvClasses(repoRoot);

/** The env classes @app/config exports (MetricsTokenEnv, a decorator, is no class). */
const exported = Object.entries(config as unknown as Record<string, unknown>).filter(
  (entry): entry is [string, new () => object] =>
    entry[0].endsWith('Env') && typeof entry[1] === 'function' && /^class\b/.test(Function.prototype.toString.call(entry[1])),
);
const instanceOf = (name: string): Record<string, unknown> => {
  const envClass = exported.find(([exportedName]) => exportedName === name)?.[1];
  if (!envClass) throw new Error(`@app/config does not export ${name}`);
  return { ...new envClass() };
};

describe('docs/configuration.md', () => {
  it('holds the tables the env classes in libs/config render (npm run docs:config rewrites them)', () => {
    const document = readFileSync(join(repoRoot, CONFIGURATION_DOC), 'utf8');
    // Compared line by line so that a failure names the variable that drifted.
    expect(withGeneratedPart(document, renderEnvTables(classes)).split('\n')).toEqual(document.split('\n'));
  });

  it('documents every variable loadEnv reads, under its own class, with a meaning', () => {
    expect(classes.map((envClass) => envClass.name).sort()).toEqual(exported.map(([name]) => name).sort());
    for (const envClass of classes) {
      const inherited = envClass.extendsName ? classes.find((base) => base.name === envClass.extendsName)?.variables : [];
      const names = [...(inherited ?? []), ...envClass.variables].map((variable) => variable.name);
      expect(names.sort()).toEqual(Object.keys(instanceOf(envClass.name)).sort());
      expect(envClass.variables.filter((variable) => variable.description === '').map((variable) => variable.name)).toEqual([]);
    }
  });

  it('reads each literal default as the class applies it', () => {
    for (const envClass of classes) {
      const instance = instanceOf(envClass.name);
      for (const variable of envClass.variables) {
        if (variable.defaultValue === undefined) continue; // described by a @default tag
        expect({ [variable.name]: variable.defaultValue }).toEqual({ [variable.name]: instance[variable.name] });
      }
    }
  });
});

describe('renderEnvTables', () => {
  it('renders defaults, validation and meaning, and escapes pipes in cells', () => {
    const table = renderEnvTables([
      {
        name: 'DemoEnv',
        title: 'Demo',
        intro: 'A demo.',
        extendsName: undefined,
        file: 'libs/config/src/demo-env.ts',
        variables: [{ name: 'MODE', defaultText: '`a`', defaultValue: 'a', accepts: '`a` or `b`', description: 'Either a | b.' }],
      },
    ]);
    expect(table).toBe(
      [
        '### Demo (`DemoEnv`)',
        '',
        'A demo. Declared in [`libs/config/src/demo-env.ts`](../libs/config/src/demo-env.ts).',
        '',
        '| Variable | Default | Accepts | Meaning |',
        '| --- | --- | --- | --- |',
        '| `MODE` | `a` | `a` or `b` | Either a \\| b. |',
      ].join('\n'),
    );
  });

  it('refuses a document without its markers', () => {
    expect(() => withGeneratedPart('# Configuration\n', 'tables')).toThrow(/markers/);
  });
});
