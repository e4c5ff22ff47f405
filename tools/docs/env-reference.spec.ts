import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readEnvClasses } from './env-reference';

/** Writes libs/config/src-like files into a fresh folder and reads them back. */
function read(files: Record<string, string>): ReturnType<typeof readEnvClasses> {
  const root = mkdtempSync(join(tmpdir(), 'env-reference-'));
  try {
    mkdirSync(join(root, 'src'));
    for (const [name, text] of Object.entries(files)) writeFileSync(join(root, 'src', name), text);
    return readEnvClasses(root, 'src');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

const BASE = `
/**
 * Shared by both.
 * @title Shared part
 */
export class SharedEnv {
  /** A URL. */
  @Matches(/^x:/, { message: 'must be an x: URL' })
  SHARED_URL = 'x://here';
}
`;

describe('readEnvClasses', () => {
  it('reads titles, defaults, validation and comments, processes before the classes they extend', () => {
    const classes = read({
      'a-shared-env.ts': BASE,
      'b-process-env.ts': `
const PAIR = /^\\w+:\\d+$/;
export const TokenEnv = (): PropertyDecorator => (target, property) => {
  ValidateIf((_env: object, value: unknown) => value !== '')(target, property);
  Matches(/^\\S{16,}$/, { message: 'must be 16 characters or more' })(target, property);
};

/** One process. */
export class ProcessEnv extends SharedEnv {
  /** Port. */
  @EnvInteger()
  @IsInt()
  @Min(0)
  @Max(65535)
  PORT = 8080;

  /** A week. */
  @EnvInteger()
  @IsInt()
  @Min(1)
  KEEP_SECONDS = 7 * 24 * 3600;

  /** Pairs. */
  @CommaList()
  @Matches(PAIR, { each: true })
  PAIRS: string[] = [];

  /** Mode. */
  @IsIn(['a', 'b', 'c'])
  MODE = 'a';

  /**
   * Computed.
   * @default the core count
   */
  @IsInt()
  CORES = cores();

  /** Only with MODE=b. */
  @ValidateIf((env: ProcessEnv) => env.MODE === 'b')
  @MinLength(3)
  NAME = '';

  /** A secret. */
  @TokenEnv()
  TOKEN = '';

  /** On or off. */
  @EnvBoolean()
  @IsBoolean()
  ON = false;
}

class NotExportedEnv {}
`,
    });
    expect(classes.map((envClass) => [envClass.name, envClass.title, envClass.intro, envClass.extendsName])).toEqual([
      ['ProcessEnv', 'ProcessEnv', 'One process.', 'SharedEnv'],
      ['SharedEnv', 'Shared part', 'Shared by both.', undefined],
    ]);
    expect(
      classes[0].variables.map(({ name, defaultText, defaultValue, accepts, description }) => [name, defaultText, defaultValue, accepts, description]),
    ).toEqual([
      ['PORT', '`8080`', 8080, 'integer 0–65535', 'Port.'],
      ['KEEP_SECONDS', '`604800` (7 days)', 604800, 'integer ≥ 1', 'A week.'],
      ['PAIRS', '—', [], 'comma-separated list; matches `/^\\w+:\\d+$/`', 'Pairs.'],
      ['MODE', '`a`', 'a', '`a`, `b` or `c`', 'Mode.'],
      ['CORES', 'the core count', undefined, 'integer', 'Computed.'],
      ['NAME', '—', '', 'when `MODE=b`: at least 3 characters', 'Only with MODE=b.'],
      ['TOKEN', '—', '', 'when set: must be 16 characters or more', 'A secret.'],
      ['ON', '`false`', false, '`true` or `false`', 'On or off.'],
    ]);
    expect(classes[1].variables.map((variable) => variable.accepts)).toEqual(['must be an x: URL']);
  });

  it('refuses a computed default without a @default tag, naming the variable', () => {
    expect(() => read({ 'env.ts': 'export class OneEnv {\n  /** Cores. */\n  @IsInt()\n  CORES = cores();\n}\n' })).toThrow(
      /env\.ts: CORES: the default `cores\(\)` is computed at run time/,
    );
  });

  it('refuses a decorator it cannot describe, naming it', () => {
    expect(() => read({ 'env.ts': "export class OneEnv {\n  /** Mail. */\n  @IsEmail()\n  MAIL = 'a@b.c';\n}\n" })).toThrow(
      /MAIL: the documentation generator does not know the decorator @IsEmail/,
    );
  });
});
