import type { GrammarSchema, ResponseFormat } from '@app/contracts';
import type { GbnfJsonSchema, Llama, LlamaGrammar } from 'node-llama-cpp' with { 'resolution-mode': 'import' };

/** Compiled grammars kept per schema: compiling one costs milliseconds, a cached one nothing. */
const CACHE_LIMIT = 256;

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
        return this.cached(JSON.stringify(format.schema), () => this.llama.createGrammarForJsonSchema(asGbnfSchema(format.schema) as Parameters<Llama['createGrammarForJsonSchema']>[0]));
    }
  }

  private cached(key: string, compile: () => Promise<LlamaGrammar>): Promise<LlamaGrammar> {
    let grammar = this.cache.get(key);
    if (!grammar) {
      if (this.cache.size >= CACHE_LIMIT) this.cache.delete(this.cache.keys().next().value as string);
      grammar = compile();
      grammar.catch(() => this.cache.delete(key)); // a failed compile is not remembered
      this.cache.set(key, grammar);
    }
    return grammar;
  }
}

/** The API reduced the schema to what node-llama-cpp's JSON-schema grammar reads (json-schema-subset.ts). */
export function asGbnfSchema(schema: GrammarSchema): GbnfJsonSchema {
  return schema as unknown as GbnfJsonSchema;
}
