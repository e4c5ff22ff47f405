/**
 * `npm run docs:config`: rewrites the tables of docs/configuration.md from the env classes in
 * libs/config. `npm run docs:config -- --check` changes nothing and exits 1 when the page is stale
 * (the unit spec beside this file checks the same in `npm test`).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { CONFIGURATION_DOC, renderEnvTables, withGeneratedPart } from './configuration-doc';
import { readEnvClasses } from './env-reference';

const repoRoot = resolve(__dirname, '../..');
const path = join(repoRoot, CONFIGURATION_DOC);
const current = readFileSync(path, 'utf8');
const updated = withGeneratedPart(current, renderEnvTables(readEnvClasses(repoRoot)));

if (process.argv.includes('--check')) {
  if (updated !== current) {
    console.error(`${CONFIGURATION_DOC} does not match the env classes in libs/config: run npm run docs:config`);
    process.exit(1);
  }
  console.log(`${CONFIGURATION_DOC} matches the env classes`);
} else if (updated === current) {
  console.log(`${CONFIGURATION_DOC} is up to date`);
} else {
  writeFileSync(path, updated);
  console.log(`${CONFIGURATION_DOC} rewritten from the env classes`);
}
