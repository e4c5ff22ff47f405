import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { headingSlug, isExternal, outline, renderedHeadingText } from './markdown';

const repoRoot = resolve(__dirname, '../..');

/** README.md and every Markdown page under docs/, as paths relative to the repository. */
function documentationPages(): string[] {
  const pages = ['README.md'];
  const walk = (folder: string): void => {
    for (const entry of readdirSync(join(repoRoot, folder)).sort()) {
      const path = `${folder}/${entry}`;
      if (statSync(join(repoRoot, path)).isDirectory()) walk(path);
      else if (entry.endsWith('.md')) pages.push(path);
    }
  };
  walk('docs');
  return pages;
}

const outlines = new Map<string, ReturnType<typeof outline>>();
const outlineOf = (page: string): ReturnType<typeof outline> => {
  let found = outlines.get(page);
  if (!found) outlines.set(page, (found = outline(readFileSync(join(repoRoot, page), 'utf8'))));
  return found;
};

/** Why a relative link does not resolve on GitHub, or undefined when it does. */
function brokenBecause(page: string, target: string): string | undefined {
  const [pathPart, anchor] = target.split('#', 2) as [string, string | undefined];
  const path = decodeURIComponent(pathPart);
  const resolved = path === '' ? page : relative(repoRoot, resolve(repoRoot, dirname(page), path));
  if (resolved.startsWith('..')) return 'leaves the repository';
  if (!existsSync(join(repoRoot, resolved))) return `${resolved} does not exist`;
  if (anchor === undefined) return undefined;
  if (resolved.endsWith('.md')) return outlineOf(resolved).anchors.has(anchor) ? undefined : `${resolved} has no heading with the anchor #${anchor}`;
  return /^L\d+(-L\d+)?$/.test(anchor) ? undefined : `#${anchor} is not a line anchor of ${resolved}`;
}

describe('links in README.md and docs/', () => {
  const pages = documentationPages();

  it('finds the pages and their links', () => {
    expect(pages).toEqual(expect.arrayContaining(['README.md', 'docs/configuration.md']));
    expect(outlineOf('README.md').links.length).toBeGreaterThan(5);
  });

  it.each(pages)('every relative link and anchor in %s resolves', (page) => {
    const broken = outlineOf(page)
      .links.filter((link) => !isExternal(link.target))
      .map((link) => ({ line: link.line, target: link.target, why: brokenBecause(page, link.target) }))
      .filter((link) => link.why !== undefined);
    expect(broken).toEqual([]);
  });
});

describe('GitHub heading anchors', () => {
  it.each([
    ['Two commands', 'two-commands'],
    ['API (`ApiEnv`)', 'api-apienv'],
    ['Redis, for the API and the worker (`RedisEnv`)', 'redis-for-the-api-and-the-worker-redisenv'],
    ["Putting vLLM, SGLang, TGI or llama.cpp's server behind the queue", 'putting-vllm-sglang-tgi-or-llamacpps-server-behind-the-queue'],
    ['What `npm start` reads', 'what-npm-start-reads'],
    ['`RESUME_GRACE_MS` and friends', 'resume_grace_ms-and-friends'],
    ['Files & batches: **how** [they](x.md) run', 'files--batches-how-they-run'],
    ['Überblick – Größe', 'überblick--größe'],
  ])('%s → #%s', (heading, slug) => {
    expect(headingSlug(renderedHeadingText(heading))).toBe(slug);
  });

  it('numbers repeated headings and ignores headings and links in code', () => {
    const page = outline(['# Logs', '## Logs', '```', '# Not a heading [x](missing.md)', '```', 'See `[y](missing.md)` and [z](real.md#logs-1).'].join('\n'));
    expect([...page.anchors]).toEqual(['logs', 'logs-1']);
    expect(page.links).toEqual([{ target: 'real.md#logs-1', line: 6 }]);
  });
});
