import { readFileSync } from 'node:fs';
import { posix } from 'node:path';
import { resolve } from 'node:path';
import type { Instruction } from 'dockerfile-ast';
import { REPO_ROOT } from '../../tools/local-stack/services';

/**
 * The Dockerfile checked offline, as no Docker engine runs here: the linter behind VS Code's
 * Docker support finds no error, every stage a COPY names comes before it, and the CUDA worker is
 * built the way it must be: llama.cpp compiled with what node-llama-cpp's build needs (node and
 * npm), for the architectures the chosen CUDA release supports and not for the build host's CPU,
 * and found at run time under the folder name its build options give.
 */
describe('Dockerfile', () => {
  const content = readFileSync(resolve(REPO_ROOT, 'Dockerfile'), 'utf8');

  /** Each stage's instructions, FROM first, by the stage's name. */
  async function stages(): Promise<Map<string, Instruction[]>> {
    const { DockerfileParser } = await import('dockerfile-ast');
    const byName = new Map<string, Instruction[]>();
    let current: Instruction[] = [];
    for (const instruction of DockerfileParser.parse(content).getInstructions()) {
      if (instruction.getKeyword() === 'FROM') {
        current = [];
        const name = /\bAS\s+(\S+)\s*$/i.exec(instruction.getArgumentsContent() ?? '')?.[1];
        if (name) byName.set(name, current);
      }
      current.push(instruction);
    }
    return byName;
  }

  async function stage(name: string): Promise<Instruction[]> {
    const instructions = (await stages()).get(name);
    if (!instructions) throw new Error(`no stage ${name}`);
    return instructions;
  }

  /** The instruction's arguments with line continuations joined, as the shell sees them. */
  const argumentsOf = (instruction: Instruction): string => (instruction.getArgumentsContent() ?? '').replace(/\\\r?\n\s*/g, ' ');

  /** NODE_LLAMA_CPP_CMAKE_OPTION_* variables the stage's ENV instructions set before `before`, as written. */
  function cmakeOptions(instructions: Instruction[], before = instructions.length): Map<string, string> {
    const options = new Map<string, string>();
    for (const instruction of instructions.slice(0, before)) {
      if (instruction.getKeyword() !== 'ENV') continue;
      for (const [, name, value] of argumentsOf(instruction).matchAll(/(NODE_LLAMA_CPP_CMAKE_OPTION_\w+)=(\S+)/g)) options.set(name, value);
    }
    return options;
  }

  const PATH_DIRECTORIES = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];
  /** Commands that Debian and Ubuntu packages put on the PATH, for the packages a Node build could use. */
  const PACKAGE_COMMANDS: Record<string, string[]> = { nodejs: ['node'], npm: ['npm', 'npx'] };

  /**
   * Commands on the PATH after `instructions` (a stage from its FROM): what a node image brings,
   * what apt-get installs, files COPY puts in a PATH directory, and symlinks RUN makes there to a
   * file a COPY brought in. NVIDIA's CUDA images bring neither node nor npm.
   */
  function commandsOnPath(instructions: Instruction[]): Set<string> {
    const commands = new Set<string>();
    const copied: string[] = [];
    for (const instruction of instructions) {
      const args = argumentsOf(instruction);
      const keyword = instruction.getKeyword();
      if (keyword === 'FROM' && /^(node:|\$\{NODE_IMAGE\})/.test(args)) ['node', 'npm', 'npx'].forEach((command) => commands.add(command));
      if (keyword === 'COPY' || keyword === 'ADD') {
        const paths = args.split(/\s+/).filter((part) => part && !part.startsWith('--'));
        const destination = paths.at(-1) ?? '';
        copied.push(destination);
        if (PATH_DIRECTORIES.includes(posix.dirname(destination))) commands.add(posix.basename(destination));
      }
      if (keyword !== 'RUN') continue;
      for (const [, packages] of args.matchAll(/apt-get install ([^&;|]+)/g)) {
        for (const name of packages.split(/\s+/)) PACKAGE_COMMANDS[name]?.forEach((command) => commands.add(command));
      }
      for (const [, target, link] of args.matchAll(/\bln -s\w* (\S+) (\S+)/g)) {
        const resolved = posix.resolve(posix.dirname(link), target);
        if (PATH_DIRECTORIES.includes(posix.dirname(link)) && copied.some((path) => resolved.startsWith(`${path}/`))) commands.add(posix.basename(link));
      }
    }
    return commands;
  }

  /** RUN instructions that have node-llama-cpp compile llama.cpp. */
  const compilesLlamaCpp = (instruction: Instruction): boolean =>
    instruction.getKeyword() === 'RUN' && /node-llama-cpp\S*cli\.js source (download|build)\b/.test(argumentsOf(instruction));

  /** Real-code architectures a CUDA release's nvcc compiles for, from Ampere on (CUDA 13 keeps all of these). */
  function architecturesOf(cudaVersion: string): number[] {
    const [major = 0, minor = 0] = cudaVersion.split('.').map(Number);
    const version = major * 100 + minor;
    if (version < 1204) throw new Error(`CUDA ${cudaVersion}: older than llama.cpp supports`);
    return [80, 86, 87, 89, 90, ...(version >= 1208 ? [100, 120] : []), ...(version >= 1209 ? [103, 121] : [])];
  }

  /** The oldest Linux driver each CUDA release runs on (NVIDIA's toolkit release notes, table 3). */
  const MINIMUM_DRIVER: Record<string, number> = { '12.4': 550, '12.5': 555, '12.6': 560, '12.8': 570, '12.9': 575, '13.0': 580 };

  interface ArchitectureList {
    real: number[];
    virtual: number[];
  }

  function parseArchitectures(list: string): ArchitectureList {
    const entries = list.split(';');
    expect(entries.every((entry) => /^\d+-(real|virtual)$/.test(entry))).toBe(true);
    const numbers = (suffix: string): number[] => entries.filter((entry) => entry.endsWith(suffix)).map((entry) => Number.parseInt(entry, 10));
    return { real: numbers('-real'), virtual: numbers('-virtual') };
  }

  /**
   * Real code for every architecture the release compiles for, and one PTX that later GPUs can JIT:
   * that of the newest architecture llama.cpp leaves portable (it turns each 12X into 12Xa, whose
   * PTX runs on that one architecture only).
   */
  function expectFullList(cudaVersion: string, list: string): void {
    const { real, virtual } = parseArchitectures(list);
    const supported = architecturesOf(cudaVersion);
    expect({ cudaVersion, real: [...real].sort() }).toEqual({ cudaVersion, real: [...supported].sort() });
    const portable = real.filter((architecture) => architecture < 120 || architecture >= 130);
    expect({ cudaVersion, virtual }).toEqual({ cudaVersion, virtual: [Math.max(...portable)] });
  }

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

  it('gives every stage that compiles llama.cpp node and npm first (node-llama-cpp builds through `npm run cmake-js-llama`)', async () => {
    const compiling = [...(await stages())].filter(([, instructions]) => instructions.some(compilesLlamaCpp));
    expect(compiling.map(([name]) => name)).toContain('llama-cuda-build');
    for (const [name, instructions] of compiling) {
      const onPath = commandsOnPath(instructions.slice(0, instructions.findIndex(compilesLlamaCpp)));
      expect({ name, node: onPath.has('node'), npm: onPath.has('npm') }).toEqual({ name, node: true, npm: true });
    }
  });

  it('compiles llama.cpp for a portable CPU baseline, and the CUDA worker asks for the build by the same options', async () => {
    const build = await stage('llama-cuda-build');
    const compileAt = build.findIndex(compilesLlamaCpp);
    const options = cmakeOptions(build, compileAt);
    // -march=native would tie the image to CPUs like the build host's.
    expect(options.get('NODE_LLAMA_CPP_CMAKE_OPTION_GGML_NATIVE')).toBe('OFF');
    expect(options.get('NODE_LLAMA_CPP_CMAKE_OPTION_CMAKE_CUDA_ARCHITECTURES')).toBe('${CUDA_ARCHITECTURES}');
    expect(argumentsOf(build[compileAt])).toMatch(/source download --gpu cuda/);
    expect(argumentsOf(build[0])).toMatch(/^nvidia\/cuda:\$\{CUDA_VERSION\}-devel-/);

    // node-llama-cpp names a local build's folder after its CMake options (read from these
    // variables): at run time they must be the very same, or the worker finds no build.
    const runtime = await stage('worker-cuda');
    expect(argumentsOf(runtime[0])).toMatch(/^nvidia\/cuda:\$\{CUDA_VERSION\}-runtime-/);
    expect(Object.fromEntries(cmakeOptions(runtime))).toEqual(Object.fromEntries(options));
    for (const stageInstructions of [build, runtime]) {
      expect(stageInstructions.some((instruction) => instruction.getKeyword() === 'ARG' && argumentsOf(instruction) === 'CUDA_ARCHITECTURES')).toBe(true);
    }
    expect(runtime.some((instruction) => /^COPY --from=llama-cuda-build \S*\/llama\/localBuilds /.test(instruction.getTextContent()))).toBe(true);
    expect(commandsOnPath(runtime).has('node')).toBe(true);
  });

  it('compiles real code for every Ampere-to-Blackwell architecture the default CUDA supports, plus portable PTX', () => {
    const cudaVersion = /^ARG CUDA_VERSION=(\S+)$/m.exec(content)?.[1] ?? '';
    const architectures = /^ARG CUDA_ARCHITECTURES="([^"]+)"$/m.exec(content)?.[1] ?? '';
    expectFullList(cudaVersion, architectures);
  });

  it('offers older CUDA releases only with an architecture list they can compile, and names the driver each needs', () => {
    const comments = content
      .split('\n')
      .filter((line) => line.startsWith('#'))
      .join('\n');
    const defaultVersion = /^ARG CUDA_VERSION=(\S+)$/m.exec(content)?.[1] ?? '';
    const defaultArchitectures = /^ARG CUDA_ARCHITECTURES="([^"]+)"$/m.exec(content)?.[1] ?? '';

    // The table of releases: each with its minimum driver and its full architecture list.
    const rows = [
      ...comments.matchAll(/^#\s+CUDA_VERSION=(\S+?)(?: \(default\))?: driver >= (\d+), (?:CUDA_ARCHITECTURES="([^"]+)"|the default CUDA_ARCHITECTURES)$/gm),
    ];
    expect(rows.map(([, version]) => version)).toEqual(expect.arrayContaining([defaultVersion, expect.stringMatching(/^12\./)]));
    for (const [, version = '', driver, list] of rows) {
      const minor = version.split('.').slice(0, 2).join('.');
      expect({ version, driver: Number(driver) }).toEqual({ version, driver: MINIMUM_DRIVER[minor] });
      expectFullList(version, list ?? defaultArchitectures);
    }

    // Every `docker build` example: the architectures it passes are ones its CUDA release compiles for.
    const examples = comments.replace(/\\\n#\s*/g, ' ').match(/docker build [^\n]*--target worker-cuda[^\n]*/g) ?? [];
    expect(examples.length).toBeGreaterThan(0);
    for (const example of examples) {
      const version = /--build-arg CUDA_VERSION=(\S+)/.exec(example)?.[1] ?? defaultVersion;
      const list = /--build-arg CUDA_ARCHITECTURES="([^"]+)"/.exec(example)?.[1] ?? defaultArchitectures;
      const { real, virtual } = parseArchitectures(list);
      const supported = architecturesOf(version);
      expect({ example, unsupported: [...real, ...virtual].filter((architecture) => !supported.includes(architecture)) }).toEqual({ example, unsupported: [] });
    }
  });
});
