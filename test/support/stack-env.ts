/** What global setup started, as the test files read it (through process.env, which jest's workers inherit). */
export interface E2eStack {
  redisUrl: string;
  apiUrls: string[];
  apiKey: string;
  model: string;
  modelPath: string;
  workerIds: string[];
  /** Base URLs of the workers' health and metrics servers, in the order of workerIds. */
  workerHealthUrls: string[];
  /** Bull Board's credentials on both APIs. */
  admin: { user: string; password: string };
}

declare global {
  /** The engine of the jest project running this file (its `globals` in jest.config.js); the default one's when absent. */
  var E2E_ENGINE: string | undefined;
}

/** Where an engine's stack is published: E2E_STACK, or E2E_STACK_LLAMA_SERVER for a project on llama-server. */
const variable = (engine: string | undefined): string => (engine ? `E2E_STACK_${engine.toUpperCase().replace(/[^A-Z0-9]/g, '_')}` : 'E2E_STACK');

export function publishStack(engine: string | undefined, stack: E2eStack): void {
  process.env[variable(engine)] = JSON.stringify(stack);
}

/** The shared stack this test file runs against: its jest project's engine's. */
export function e2eStack(): E2eStack {
  const name = variable(globalThis.E2E_ENGINE);
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the end-to-end tests through jest (global setup starts the stack)`);
  return JSON.parse(value) as E2eStack;
}
