// The JSON Schema → grammar compiler (`@app/grammar`): the API checks schemas with it at admission
// and the worker builds llama.cpp grammars with it. The grammar builders (literal, optional, …)
// stay inside this library: their short names read well only here.
export type { GrammarFault, GrammarNode, Rules } from './grammar-ast';
export * from './schema-grammar';
export * from './call-grammar';
export * from './schema-limits';
export * from './grammar-sampler';
