/**
 * Reads the environment classes of libs/config from their TypeScript source (the compiler's
 * parser, no build): each exported `…Env` class, its own variables in declaration order, their
 * defaults, what validation accepts, and their doc comments. docs/configuration.md is rendered
 * from this, so the tables say what the code does.
 *
 * Doc comment tags the reader understands:
 * - on a class: `@title Heading` (else the class name);
 * - on a variable: `@default text` where the initializer is computed at run time
 *   (`Math.min(availableParallelism(), 256)`) or an empty value means something to say.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';

export interface EnvVariable {
  name: string;
  /** Markdown: the default as an operator would type it, or the `@default` tag's text. */
  defaultText: string;
  /** The default the initializer evaluates to; undefined when a `@default` tag describes it instead. */
  defaultValue: string | number | boolean | string[] | undefined;
  /** Markdown: what validation accepts, from the decorators. */
  accepts: string;
  /** Markdown: the doc comment, on one line. */
  description: string;
}

export interface EnvClass {
  name: string;
  title: string;
  /** The class's doc comment, on one line ('' when it has none). */
  intro: string;
  /** The env class it extends, whose variables it reads too. */
  extendsName: string | undefined;
  /** Path of its file relative to the repository root. */
  file: string;
  variables: EnvVariable[];
}

/** Decorators that only convert the text of a variable; IsInt / IsBoolean say what they accept. */
const CONVERSIONS: Record<string, string | undefined> = { EnvInteger: undefined, EnvBoolean: undefined, CommaList: 'comma-separated list' };

/** Decorators of libs/config read by name, not by what their bodies call. */
const MARKERS = new Set(['SecretEnv', 'NoUrlCredentials']);

interface DecoratorCall {
  name: string;
  args: readonly ts.Expression[];
}

/** Every exported env class under `sourceDir` (libs/config/src), processes first, shared bases last. */
export function readEnvClasses(repoRoot: string, sourceDir = 'libs/config/src'): EnvClass[] {
  const files = readdirSync(join(repoRoot, sourceDir))
    .filter((file) => file.endsWith('.ts') && !file.endsWith('.spec.ts'))
    .sort()
    .map((file) => {
      const path = `${sourceDir}/${file}`;
      return { path, source: ts.createSourceFile(path, readFileSync(join(repoRoot, path), 'utf8'), ts.ScriptTarget.ES2023, true) };
    });
  const factories = new Map<string, DecoratorCall[]>();
  for (const { source } of files) collectDecoratorFactories(source, factories);

  const classes: EnvClass[] = [];
  for (const { path, source } of files) {
    for (const statement of source.statements) {
      if (!ts.isClassDeclaration(statement) || !statement.name?.text.endsWith('Env') || !isExported(statement)) continue;
      classes.push(readClass(statement, path, source, factories));
    }
  }
  const bases = new Set(classes.map((envClass) => envClass.extendsName));
  return [...classes.filter((envClass) => !bases.has(envClass.name)), ...classes.filter((envClass) => bases.has(envClass.name))];
}

function isExported(node: ts.ClassDeclaration): boolean {
  return ts.getModifiers(node)?.some((modifier) => modifier.kind === ts.SyntaxKind.ExportKeyword) ?? false;
}

/** `export const MetricsTokenEnv = (): PropertyDecorator => (target, property) => { ValidateIf(…)(…); Matches(…)(…); }` */
function collectDecoratorFactories(source: ts.SourceFile, factories: Map<string, DecoratorCall[]>): void {
  for (const statement of source.statements) {
    if (!ts.isVariableStatement(statement)) continue;
    for (const declaration of statement.declarationList.declarations) {
      const initializer = declaration.initializer;
      if (!ts.isIdentifier(declaration.name) || !initializer || !ts.isArrowFunction(initializer)) continue;
      if (initializer.type?.getText(source) !== 'PropertyDecorator') continue;
      const calls: DecoratorCall[] = [];
      const visit = (node: ts.Node): void => {
        if (ts.isCallExpression(node) && ts.isIdentifier(node.expression)) calls.push({ name: node.expression.text, args: node.arguments });
        ts.forEachChild(node, visit);
      };
      visit(initializer.body);
      factories.set(declaration.name.text, calls);
    }
  }
}

function readClass(node: ts.ClassDeclaration, file: string, source: ts.SourceFile, factories: Map<string, DecoratorCall[]>): EnvClass {
  const name = node.name?.text ?? '';
  const heritage = node.heritageClauses?.find((clause) => clause.token === ts.SyntaxKind.ExtendsKeyword)?.types[0]?.expression;
  const variables: EnvVariable[] = [];
  for (const member of node.members) {
    if (!ts.isPropertyDeclaration(member) || !ts.isIdentifier(member.name)) continue;
    variables.push(readVariable(member, member.name.text, source, factories));
  }
  return {
    name,
    title: tag(node, 'title') ?? name,
    intro: commentOf(node),
    extendsName: heritage && ts.isIdentifier(heritage) ? heritage.text : undefined,
    file,
    variables,
  };
}

function readVariable(node: ts.PropertyDeclaration, name: string, source: ts.SourceFile, factories: Map<string, DecoratorCall[]>): EnvVariable {
  const where = `${source.fileName}: ${name}`;
  const defaultTag = tag(node, 'default');
  const defaultValue = defaultTag === undefined ? evaluate(node.initializer, where) : undefined;
  const calls = (ts.getDecorators(node) ?? []).flatMap((decorator) => {
    const expression = decorator.expression;
    if (!ts.isCallExpression(expression) || !ts.isIdentifier(expression.expression))
      throw new Error(`${where}: decorator ${decorator.getText()} is not a call`);
    const call = { name: expression.expression.text, args: expression.arguments };
    return call.name in CONVERSIONS || MARKERS.has(call.name) ? [call] : (factories.get(call.name) ?? [call]);
  });
  return {
    name,
    defaultText: defaultTag ?? formatDefault(name, defaultValue),
    defaultValue,
    accepts: describeValidation(calls, name, where),
    description: commentOf(node),
  };
}

function commentOf(node: ts.Node): string {
  const docs = ts.getJSDocCommentsAndTags(node).filter(ts.isJSDoc);
  const text = docs.map((doc) => ts.getTextOfJSDocComment(doc.comment) ?? '').join(' ');
  return oneLine(text);
}

function tag(node: ts.Node, tagName: string): string | undefined {
  const found = ts.getJSDocTags(node).find((jsDocTag) => jsDocTag.tagName.text === tagName);
  return found ? oneLine(ts.getTextOfJSDocComment(found.comment) ?? '') : undefined;
}

const oneLine = (text: string): string => text.replace(/\s+/g, ' ').trim();

/** The literal defaults of env classes: strings, numbers (and their arithmetic), booleans, string arrays. */
function evaluate(node: ts.Expression | undefined, where: string): string | number | boolean | string[] {
  if (!node) throw new Error(`${where}: a variable needs a default (loadEnv reads the names of a fresh instance)`);
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
  if (ts.isNumericLiteral(node)) return Number(node.text);
  if (node.kind === ts.SyntaxKind.TrueKeyword) return true;
  if (node.kind === ts.SyntaxKind.FalseKeyword) return false;
  if (ts.isParenthesizedExpression(node)) return evaluate(node.expression, where);
  if (ts.isPrefixUnaryExpression(node) && node.operator === ts.SyntaxKind.MinusToken) return -numberOf(node.operand, where);
  if (ts.isBinaryExpression(node)) {
    const left = numberOf(node.left, where);
    const right = numberOf(node.right, where);
    switch (node.operatorToken.kind) {
      case ts.SyntaxKind.AsteriskToken:
        return left * right;
      case ts.SyntaxKind.PlusToken:
        return left + right;
      case ts.SyntaxKind.MinusToken:
        return left - right;
    }
  }
  if (ts.isArrayLiteralExpression(node)) {
    return node.elements.map((element) => {
      const value = evaluate(element, where);
      if (typeof value !== 'string') throw new Error(`${where}: list defaults hold strings`);
      return value;
    });
  }
  throw new Error(`${where}: the default \`${node.getText()}\` is computed at run time; describe it with a @default tag`);
}

function numberOf(node: ts.Expression, where: string): number {
  const value = evaluate(node, where);
  if (typeof value !== 'number') throw new Error(`${where}: arithmetic on something other than numbers`);
  return value;
}

function formatDefault(name: string, value: string | number | boolean | string[] | undefined): string {
  if (value === undefined || value === '' || (Array.isArray(value) && value.length === 0)) return '—';
  const text = `\`${Array.isArray(value) ? value.join(',') : String(value)}\``;
  const hint = typeof value === 'number' ? sizeHint(name, value) : undefined;
  return hint ? `${text} (${hint})` : text;
}

/** A reader sees `604800` as a week only when told: durations and byte sizes get their larger unit. */
function sizeHint(name: string, value: number): string | undefined {
  const seconds = name.endsWith('_MS') ? value / 1000 : name.endsWith('_SECONDS') ? value : undefined;
  if (seconds !== undefined && value > 0) {
    for (const [unit, size] of [
      ['days', 86_400],
      ['h', 3600],
      ['min', 60],
      ['s', 1],
    ] as const) {
      if (seconds >= size && seconds % size === 0 && seconds / size !== value) return `${seconds / size} ${unit === 'days' && seconds === size ? 'day' : unit}`;
    }
  }
  if (name.endsWith('_BYTES') && value >= 1024 * 1024 && value % (1024 * 1024) === 0) return `${value / (1024 * 1024)} MiB`;
  return undefined;
}

function describeValidation(calls: DecoratorCall[], name: string, where: string): string {
  const parts: string[] = [];
  let condition: string | undefined;
  let integer = false;
  let min: number | undefined;
  let max: number | undefined;
  let onlyString = false;
  for (const { name: decorator, args } of calls) {
    switch (decorator) {
      case 'EnvInteger':
      case 'EnvBoolean':
      case 'CommaList': {
        const text = CONVERSIONS[decorator];
        if (text) parts.push(text);
        break;
      }
      case 'IsInt':
        integer = true;
        break;
      case 'Min':
        min = numberOf(args[0], where);
        break;
      case 'Max':
        max = numberOf(args[0], where);
        break;
      case 'IsBoolean':
        parts.push('`true` or `false`');
        break;
      case 'IsString':
        onlyString = true;
        break;
      case 'IsIn':
        parts.push(oneOf(evaluate(args[0], where), where));
        break;
      case 'Matches':
        parts.push(messageOf(args[1]) ?? `matches \`${resolveText(args[0])}\``);
        break;
      case 'MinLength':
        parts.push(messageOf(args[1]) ?? atLeast(numberOf(args[0], where)));
        break;
      case 'ArrayNotEmpty':
        parts.push(messageOf(args[0]) ?? 'at least one');
        break;
      case 'IsUrl':
        parts.push(messageOf(args[1]) ?? 'a URL');
        break;
      case 'IsNumber':
        parts.push(messageOf(args[1]) ?? 'a number');
        break;
      case 'IsPositive':
        parts.push(messageOf(args[0]) ?? 'greater than 0');
        break;
      case 'IsNotEmpty':
        parts.push(messageOf(args[0]) ?? 'not empty');
        break;
      case 'MaxLength':
        parts.push(messageOf(args[1]) ?? `at most ${numberOf(args[0], where)} characters`);
        break;
      case 'ArrayMinSize':
        parts.push(messageOf(args[1]) ?? `at least ${numberOf(args[0], where)} items`);
        break;
      case 'ArrayMaxSize':
        parts.push(messageOf(args[1]) ?? `at most ${numberOf(args[0], where)} items`);
        break;
      case 'IsEnum':
        parts.push(messageOf(args[1]) ?? `a value of \`${args[0].getText()}\``);
        break;
      case 'IsPort':
        parts.push(messageOf(args[0]) ?? 'a port number');
        break;
      case 'SecretEnv':
        parts.push('a secret: errors name it, never show it');
        break;
      case 'NoUrlCredentials':
        parts.push(args[0] && ts.isStringLiteral(args[0]) ? args[0].text : 'no `user:password@` in it');
        break;
      case 'IsOptional':
        condition ??= 'when set';
        break;
      case 'Transform':
        break; // a conversion of the text; what it accepts is said by the validators
      case 'ValidateIf':
        condition = describeCondition(args[0], name);
        break;
      default:
        throw new Error(`${where}: the documentation generator does not know the decorator @${decorator}; teach tools/docs/env-reference.ts what it accepts`);
    }
  }
  if (integer)
    parts.unshift(
      min !== undefined && max !== undefined
        ? `integer ${min}–${max}`
        : min !== undefined
          ? `integer ≥ ${min}`
          : max !== undefined
            ? `integer ≤ ${max}`
            : 'integer',
    );
  if (parts.length === 0 && onlyString) parts.push('any text');
  const text = parts.join('; ');
  return condition ? `${condition}: ${text}` : text;
}

const atLeast = (characters: number): string => (characters === 1 ? 'not empty' : `at least ${characters} characters`);

function oneOf(values: string | number | boolean | string[], where: string): string {
  if (!Array.isArray(values)) throw new Error(`${where}: @IsIn takes a literal list`);
  const quoted = values.map((value) => `\`${value}\``);
  return quoted.length === 1 ? quoted[0] : `${quoted.slice(0, -1).join(', ')} or ${quoted[quoted.length - 1]}`;
}

/** The `message` of class-validator's options object, written for people. */
function messageOf(node: ts.Expression | undefined): string | undefined {
  if (!node || !ts.isObjectLiteralExpression(node)) return undefined;
  for (const property of node.properties) {
    if (ts.isPropertyAssignment(property) && property.name.getText() === 'message' && ts.isStringLiteral(property.initializer))
      return property.initializer.text;
  }
  return undefined;
}

/** A regular expression, or the constant in the same file that holds one. */
function resolveText(node: ts.Expression): string {
  if (!ts.isIdentifier(node)) return node.getText();
  for (const statement of node.getSourceFile().statements) {
    if (!ts.isVariableStatement(statement)) continue;
    for (const declaration of statement.declarationList.declarations) {
      if (ts.isIdentifier(declaration.name) && declaration.name.text === node.text && declaration.initializer) return declaration.initializer.getText();
    }
  }
  return node.text;
}

/** `(env) => env.X !== ''` or `(_env, value) => value !== ''` is "when set"; `env.Y === 'z'` is "when `Y=z`". */
function describeCondition(node: ts.Expression, name: string): string {
  const body = ts.isArrowFunction(node) && !ts.isBlock(node.body) ? node.body : undefined;
  if (body && ts.isBinaryExpression(body) && ts.isStringLiteral(body.right)) {
    const left = body.left;
    const subject = ts.isPropertyAccessExpression(left) ? left.name.text : ts.isIdentifier(left) ? name : undefined;
    const operator = body.operatorToken.kind;
    if (subject === name && operator === ts.SyntaxKind.ExclamationEqualsEqualsToken && body.right.text === '') return 'when set';
    if (subject && operator === ts.SyntaxKind.EqualsEqualsEqualsToken) return `when \`${subject}=${body.right.text}\``;
  }
  return `when \`${node.getText()}\``;
}
