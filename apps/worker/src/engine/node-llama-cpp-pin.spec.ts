import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

/** The node-llama-cpp release the worker's engine reaches into (docs/engine-notes/node-llama-cpp-internals.md). */
const WRITTEN_FOR = '3.22.1';
const root = resolve(__dirname, '../../../..');
const versionIn = (path: string): unknown => (JSON.parse(readFileSync(resolve(root, path), 'utf8')) as { version: unknown }).version;

describe('node-llama-cpp', () => {
  it('is pinned to the release its internals were read from, and that release is installed', () => {
    const declared = (JSON.parse(readFileSync(resolve(root, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }).dependencies;
    // An upgrade is a reading of every internal in the engine notes first, then a change of both.
    expect({ declared: declared['node-llama-cpp'], installed: versionIn('node_modules/node-llama-cpp/package.json') }).toEqual({
      declared: WRITTEN_FOR,
      installed: WRITTEN_FOR,
    });
  });
});
