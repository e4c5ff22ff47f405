export * from './grammar-ast';
export * from './schema-grammar';
export * from './schema-limits';
export * from './grammar-sampler';
