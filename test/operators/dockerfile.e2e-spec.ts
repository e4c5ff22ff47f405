import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { REPO_ROOT } from '../../tools/local-stack/services';

/**
 * The Dockerfile checked offline, as no Docker engine runs here: the linter behind VS Code's
 * Docker support finds no error, every stage a COPY names comes before it, and the CUDA worker is
 * built the way it must be (compiled llama.cpp for the listed architectures, found at run time).
 */
describe('Dockerfile', () => {
  const content = readFileSync(resolve(REPO_ROOT, 'Dockerfile'), 'utf8');

  it('has no error by the dockerfile-utils linter', async () => {
    const { validate } = await import('dockerfile-utils');
    const errors = validate(content).filter((diagnostic) => diagnostic.severity === 1);
    expect(errors.map((diagnostic) => `${diagnostic.range.start.line + 1}: ${JSON.stringify(diagnostic.message)}`)).toEqual([]);
  });

  it('names only earlier stages in COPY --from, and builds the three images', async () => {
    const { DockerfileParser } = await import('dockerfile-ast');
    const dockerfile = DockerfileParser.parse(content);
    const stages: string[] = [];
    for (const from of dockerfile.getFROMs()) {
      const name = from.getBuildStage();
      if (name) stages.push(name);
    }
    for (const copy of dockerfile.getCOPYs()) {
      const source = copy.getFromFlag()?.getValue();
      if (!source) continue;
      const line = copy.getRange().start.line;
      const earlier = dockerfile
        .getFROMs()
        .filter((from) => from.getRange().start.line < line)
        .map((from) => from.getBuildStage());
      expect(earlier).toContain(source);
    }
    expect(stages).toEqual(expect.arrayContaining(['build', 'llama-cuda-build', 'api', 'worker', 'worker-cuda']));
  });

  it('compiles llama.cpp for CUDA with real code per architecture and PTX for the newest, and finds it at run time', () => {
    const architectures = /^ARG CUDA_ARCHITECTURES="([^"]+)"$/m.exec(content)?.[1] ?? '';
    const entries = architectures.split(';');
    expect(entries.every((entry) => /^\d+-(real|virtual)$/.test(entry))).toBe(true);
    const real = entries.filter((entry) => entry.endsWith('-real')).map((entry) => Number.parseInt(entry, 10));
    expect(real).toEqual(expect.arrayContaining([80, 86, 89, 90, 100, 120]));
    expect(entries).toContain(`${Math.max(...real)}-virtual`);

    const buildFrom = content.lastIndexOf('FROM ', content.indexOf('AS llama-cuda-build'));
    const buildStage = content.slice(buildFrom, content.indexOf('AS api\n'));
    expect(buildStage).toMatch(/^FROM nvidia\/cuda:\$\{CUDA_VERSION\}-devel-/);
    expect(buildStage).toMatch(/NODE_LLAMA_CPP_CMAKE_OPTION_CMAKE_CUDA_ARCHITECTURES=\$\{CUDA_ARCHITECTURES\}/);
    expect(buildStage).toMatch(/source download --gpu cuda/);
    const runtimeStage = content.slice(content.lastIndexOf('FROM ', content.indexOf('AS worker-cuda\n')));
    expect(runtimeStage).toMatch(/^FROM nvidia\/cuda:\$\{CUDA_VERSION\}-runtime-/);
    expect(runtimeStage).toMatch(/NODE_LLAMA_CPP_CMAKE_OPTION_CMAKE_CUDA_ARCHITECTURES=\$\{CUDA_ARCHITECTURES\}/);
    expect(runtimeStage).toMatch(/COPY --from=llama-cuda-build .*localBuilds/);
  });
});
