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

const VARIABLE = 'E2E_STACK';

export function publishStack(stack: E2eStack): void {
  process.env[VARIABLE] = JSON.stringify(stack);
}

export function e2eStack(): E2eStack {
  const value = process.env[VARIABLE];
  if (!value) throw new Error('E2E_STACK is not set: run the end-to-end tests through jest (global setup starts the stack)');
  return JSON.parse(value) as E2eStack;
}
