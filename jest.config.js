/** Unit tests sit beside the code; end-to-end tests in test/ run against real Redis, API and workers. */
const transform = { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.jest.json' }] };
const moduleNameMapper = {
  '^@app/(contracts|config|grammar|redis)$': '<rootDir>/libs/$1/src',
  '^@app/(contracts|config|grammar|redis)/(.*)$': '<rootDir>/libs/$1/src/$2',
  // The apps' public modules, for tests that drive an app's piece directly.
  '^@app/(api|worker)$': '<rootDir>/apps/$1/src',
  '^@app/worker/engine$': '<rootDir>/apps/worker/src/engine',
};

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
  ],
};
