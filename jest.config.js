/** Unit tests sit beside the code; end-to-end tests in test/ run against real Redis, API and workers. */
const transform = { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.jest.json' }] };
const moduleNameMapper = {
  '^@app/(contracts|config|grammar|redis)$': '<rootDir>/libs/$1/src',
  '^@app/(contracts|config|grammar|redis)/(.*)$': '<rootDir>/libs/$1/src/$2',
  // The apps' public modules, for tests that drive an app's piece directly.
  '^@app/(api|worker)$': '<rootDir>/apps/$1/src',
  '^@app/worker/engine$': '<rootDir>/apps/worker/src/engine',
};

/**
 * Suites run on llama-server too: what the llama engine passes, this engine passes. Not here:
 * text-completions (echo with logprobs is a 400 on llama-server; engine-llama-server covers its
 * plain prompts) and prompt-cache (llama-server keeps a slot's whole prompt and answer: explicit
 * breakpoints are the llama engine's; engine-llama-server checks PROMPT_CACHE=false).
 */
const LLAMA_SERVER_SUITES = [
  'chat-completions',
  'client-compatibility',
  'forced-tool-calls',
  'logprobs',
  'mcp-loop-steps',
  'responses',
  'responses-agents',
  'responses-custom-tools',
  'responses-hosted-tool-items',
  'responses-namespace-tools',
  'responses-websocket',
  'token-counts',
  'tools-and-structured-output',
  // Suites that start workers of their own (ServiceStack runs them on the project's engine).
  'faults/cancellation',
  'faults/worker-failures',
  'hostile-schemas',
  'named-tool-choice',
  'reasoning',
  'responses-background',
  'responses-compaction',
  'responses-mcp',
  'responses-reasoning',
  'responses-state',
  'responses-truncation',
  'scheduling/affinity',
  'service-tiers',
  'stored-completions',
];

module.exports = {
  // Fault tests kill and restart real processes; each bounds its own waits well below this.
  testTimeout: 60_000,
  projects: [
    {
      displayName: 'unit',
      testEnvironment: 'node',
      roots: ['<rootDir>/apps', '<rootDir>/libs', '<rootDir>/tools'],
      testMatch: ['**/*.spec.ts'],
      transform,
      moduleNameMapper,
      setupFiles: ['reflect-metadata', '<rootDir>/test/support/hermetic-env.setup.ts'],
    },
    {
      displayName: 'e2e',
      testEnvironment: 'node',
      roots: ['<rootDir>/test'],
      testMatch: ['**/*.e2e-spec.ts'],
      transform,
      moduleNameMapper,
      setupFiles: ['reflect-metadata', '<rootDir>/test/support/hermetic-env.setup.ts'],
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/support/global-teardown.ts',
    },
    {
      // The suites that generate, again with every worker on llama.cpp's own server (ENGINE=llama-server):
      // the shared stack of its own, and the workers ServiceStack starts, run that engine.
      displayName: 'e2e-llama-server',
      testEnvironment: 'node',
      roots: ['<rootDir>/test'],
      testMatch: LLAMA_SERVER_SUITES.map((suite) => `<rootDir>/test/${suite}.e2e-spec.ts`),
      transform,
      moduleNameMapper,
      setupFiles: ['reflect-metadata', '<rootDir>/test/support/hermetic-env.setup.ts'],
      globalSetup: '<rootDir>/test/support/global-setup-llama-server.ts',
      globalTeardown: '<rootDir>/test/support/global-teardown.ts',
      globals: { E2E_ENGINE: 'llama-server' },
    },
  ],
};
