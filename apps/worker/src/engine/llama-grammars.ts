import { grammarText, schemaGrammar } from '@app/grammar';
import type { GrammarSchema, ResponseFormat } from '@app/contracts';
import type { Llama, LlamaGrammar } from 'node-llama-cpp' with { 'resolution-mode': 'import' };

/** Compiled grammars kept per schema: compiling one costs milliseconds, a cached one nothing. */
const CACHE_LIMIT = 256;

/**
 * The GBNF text that enforces a schema (the API checked it at admission with the same builder,
 * so a failure here is a fault), ending with `suffix` when given.
 */
export function schemaGbnf(schema: GrammarSchema, suffix?: string): string {
  const built = schemaGrammar(schema, { strict: false });
  if (!built.ok) throw new Error(`schema refused by the grammar builder after admission: ${built.problem.message}`);
  return grammarText(built.rules, suffix);
}

/** The grammar that enforces a response format, compiled once per distinct schema on this worker. */
export class LlamaGrammars {
  private readonly cache = new Map<string, Promise<LlamaGrammar>>();

  constructor(private readonly llama: Llama) {}

  /** Undefined for free text. */
  forFormat(format: ResponseFormat | undefined): Promise<LlamaGrammar> | undefined {
    switch (format?.type) {
      case undefined:
      case 'text':
        return undefined;
      case 'json_object':
        return this.cached('json', () => this.llama.getGrammarFor('json'));
      case 'json_schema':
        return this.cached(JSON.stringify(format.schema), async () => this.llama.createGrammar({ grammar: schemaGbnf(format.schema) }));
    }
  }

  private cached(key: string, compile: () => Promise<LlamaGrammar>): Promise<LlamaGrammar> {
    let grammar = this.cache.get(key);
    if (grammar) {
      // Most recently used last: the oldest unused one goes first.
      this.cache.delete(key);
    } else {
      if (this.cache.size >= CACHE_LIMIT) this.cache.delete(this.cache.keys().next().value as string);
      grammar = compile();
      grammar.catch(() => this.cache.delete(key)); // a failed compile is not remembered
    }
    this.cache.set(key, grammar);
    return grammar;
  }
}
