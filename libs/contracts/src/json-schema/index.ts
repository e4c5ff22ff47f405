// The grammar builders (literal, optional, …) stay inside this folder: their short names would
// clash with the record checks the rest of the project imports from '@app/contracts'.
export type { GrammarFault, GrammarNode, Rules } from './grammar-ast';
export * from './schema-grammar';
export * from './schema-limits';
export * from './grammar-sampler';
