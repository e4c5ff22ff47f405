import { readFileSync, readdirSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';

export const REPO_ROOT = resolve(__dirname, '../..');

/** One YAML document of a file under the repository, with where it came from (for messages). */
export interface YamlDocument {
  file: string;
  index: number;
  value: unknown;
}

/**
 * Every document of a YAML file; a syntax error or a duplicate key fails here, naming the file.
 * Merge keys (`<<: *anchor`, as docker-compose.yml uses them) are resolved as Compose does.
 */
export function readYamlDocuments(path: string): YamlDocument[] {
  const file = relative(REPO_ROOT, path);
  return parseAllDocuments(readFileSync(path, 'utf8'), { uniqueKeys: true, prettyErrors: true, merge: true })
    .map((document, index) => {
      if (document.errors.length > 0) throw new Error(`${file} (document ${index + 1}): ${document.errors.map(String).join('; ')}`);
      return { file, index, value: document.toJS() as unknown };
    })
    .filter(({ value }) => value !== null);
}

export function readYaml(path: string): unknown {
  const [document, ...more] = readYamlDocuments(path);
  if (!document || more.length > 0) throw new Error(`${relative(REPO_ROOT, path)}: expected exactly one YAML document`);
  return document.value;
}

/** Files under `dir` (recursively) whose names end with one of `extensions`. */
export function filesUnder(dir: string, extensions: string[]): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && extensions.some((extension) => entry.name.endsWith(extension)))
    .map((entry) => join(entry.parentPath, entry.name))
    .sort();
}

/** A plain object, for walking parsed YAML and JSON without `any`. */
export type Json = Record<string, unknown>;

export function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The object at `path` below `value`; fails with the path when something on the way is missing. */
export function at(value: unknown, ...path: Array<string | number>): unknown {
  let current = value;
  for (const key of path) {
    if (typeof key === 'number' ? !Array.isArray(current) : !isObject(current)) throw new Error(`no ${path.join('.')} (stopped at ${key})`);
    current = (current as Record<string | number, unknown>)[key];
  }
  return current;
}

export function asArray(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}
