import { startSharedStack } from './global-setup';

/** The `e2e-llama-server` project's shared stack: its workers on llama.cpp's own server. */
export default function globalSetup(): Promise<void> {
  return startSharedStack('llama-server');
}
