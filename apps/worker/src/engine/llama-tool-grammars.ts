import { createHash, randomBytes } from 'node:crypto';
import type { GrammarSchema, ToolDefinition } from '@app/contracts';
import type { ChatModelFunctions, ChatWrapper, GbnfJsonSchema, Llama } from 'node-llama-cpp' with { 'resolution-mode': 'import' };
import { schemaGbnf } from './llama-grammars';

/**
 * Tool arguments under the same grammar as response formats.
 *
 * node-llama-cpp writes each call's argument grammar itself (LlamaChat, FunctionCallParamsGrammar),
 * from a schema in its own small subset, and takes no grammar for it. So each tool goes to
 * LlamaChat with a stand-in schema: any object, or a constant string that names the tool's own
 * grammar. node-llama-cpp turns the stand-in into GBNF text holding that name, and the addon's
 * grammar compiler (the one place every grammar passes) is given the tool's grammar instead. The
 * arguments that come back satisfy both: node-llama-cpp's own check of them against the stand-in
 * (any object) passes. The prompt shows the schema as sent (see `showingSchemas`).
 */
/** What LlamaChat waits for after a call's arguments (FunctionCallParamsGrammar's stop trigger). */
const PARAMS_END = '\n'.repeat(4);
/** Built grammars kept per schema, beyond those of running jobs. */
const CACHE_LIMIT = 256;

interface ToolGrammar {
  marker: string;
  gbnf: string;
  /** The stand-in LlamaChat gets as the function's params. */
  standIn: GbnfJsonSchema;
}

interface AddonGrammarClass {
  new (grammar: string, options: unknown): object;
}

export class LlamaToolGrammars {
  /**
   * Names a tool grammar in a stand-in. Secret to this engine, so that no request can name one:
   * a response format's `enum` or `const` is written into its grammar as is, and one that held a
   * tool grammar's name would have been given that grammar, or failed as a tool grammar gone.
   */
  private readonly markerPrefix = `queued-tool-grammar-${randomBytes(16).toString('hex')}-`;
  private readonly marker = new RegExp(`${this.markerPrefix}[0-9a-f]{40}`);
  private readonly built = new Map<string, ToolGrammar>();
  /** Grammars of running jobs by marker, with how many jobs use each. */
  private readonly active = new Map<string, { gbnf: string; users: number }>();
  /** What the prompt shows for a stand-in: the schema as sent. */
  private readonly shown = new WeakMap<object, GrammarSchema>();

  /** Puts the grammar substitution into this Llama's addon; once per engine. */
  static install(llama: Llama): LlamaToolGrammars {
    const registry = new LlamaToolGrammars();
    const bindings = (llama as unknown as { _bindings?: { AddonGrammar?: AddonGrammarClass } })._bindings;
    const Original = bindings?.AddonGrammar;
    if (!bindings || typeof Original !== 'function') throw new Error('node-llama-cpp changed: its addon has no AddonGrammar to give tool grammars to');
    bindings.AddonGrammar = class extends Original {
      constructor(grammar: string, options: unknown) {
        super(registry.substitute(grammar), options);
      }
    };
    return registry;
  }

  /** The tool's grammar for a stand-in node-llama-cpp rendered; any other grammar as it is. */
  substitute(gbnf: string): string {
    const marker = this.marker.exec(gbnf)?.[0];
    if (marker === undefined) return gbnf;
    const active = this.active.get(marker);
    if (!active) throw new Error('a tool grammar was compiled after its job ended');
    return active.gbnf;
  }

  /**
   * LlamaChat's functions for a job's tools (stand-ins for their schemas), and what ends the
   * job's use of their grammars. Building a grammar is bounded by the schema limits the API
   * checked, and done once per distinct schema.
   */
  acquire(definitions: ToolDefinition[]): { functions: ChatModelFunctions; release: () => void } {
    const grammars = definitions.map((definition) => this.grammarFor(definition.parameters));
    for (const { marker, gbnf } of grammars) {
      const active = this.active.get(marker);
      if (active) active.users++;
      else this.active.set(marker, { gbnf, users: 1 });
    }
    const functions = Object.fromEntries(
      definitions.map((definition, index) => [definition.name, { description: definition.description, params: grammars[index].standIn }]),
    );
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      for (const { marker } of grammars) {
        const active = this.active.get(marker);
        if (active && --active.users === 0) this.active.delete(marker);
      }
    };
    return { functions, release };
  }

  /** A chat wrapper whose prompt documents each tool with its schema as sent, not its stand-in. */
  showingSchemas(inner: ChatWrapper): ChatWrapper {
    const wrapper = Object.create(inner) as ChatWrapper;
    wrapper.generateContextState = (options) => inner.generateContextState({ ...options, availableFunctions: this.shownFunctions(options.availableFunctions) });
    return wrapper;
  }

  shownFunctions(functions: ChatModelFunctions | undefined): ChatModelFunctions | undefined {
    if (functions === undefined) return undefined;
    return Object.fromEntries(
      Object.entries(functions).map(([name, fn]) => [
        name,
        { ...fn, params: ((fn.params && this.shown.get(fn.params)) as GbnfJsonSchema | undefined) ?? fn.params },
      ]),
    );
  }

  private grammarFor(schema: GrammarSchema): ToolGrammar {
    const key = JSON.stringify(schema);
    let grammar = this.built.get(key);
    if (grammar) this.built.delete(key);
    else {
      const gbnf = schemaGbnf(schema, PARAMS_END);
      const marker = `${this.markerPrefix}${createHash('sha1').update(gbnf).digest('hex')}`;
      const standIn = { oneOf: [{ type: 'object', additionalProperties: true }, { const: marker }] } as unknown as GbnfJsonSchema;
      this.shown.set(standIn, schema);
      grammar = { marker, gbnf, standIn };
      if (this.built.size >= CACHE_LIMIT) this.built.delete(this.built.keys().next().value as string);
    }
    this.built.set(key, grammar);
    return grammar;
  }
}
