import type { Llama, LlamaModel } from 'node-llama-cpp' with { 'resolution-mode': 'import' };
import type { TokenizeOutcome, TokenizeRequest } from '../inference-engine';
import { vocabularyTokens } from '../llama-prompt-completion';
import type { RunningServer } from './llama-server-process';

/**
 * What every engine on a llama-server shares: the model's vocabulary here (no weights), the
 * server's health and metrics behind the worker's, and the order it stops in.
 */
export abstract class ServerBackedEngine {
  readonly name = 'llama-server';

  protected constructor(
    protected readonly llama: Llama,
    protected readonly model: LlamaModel,
    protected readonly server: RunningServer,
  ) {}

  /** llama-server's own health: 503 while it loads, no answer if it hangs. */
  async unhealthy(): Promise<string | undefined> {
    try {
      const response = await fetch(`${this.server.url}/health`, { signal: AbortSignal.timeout(2000) });
      await response.body?.cancel();
      return response.ok ? undefined : `llama-server answered its /health with ${response.status}`;
    } catch (error) {
      return `llama-server did not answer its /health: ${error instanceof Error ? error.message : String(error)}`;
    }
  }

  /** llama-server's Prometheus metrics (`llamacpp:*`: tokens, decode rate, slots busy and waiting). */
  async engineMetrics(): Promise<string> {
    const response = await fetch(`${this.server.url}/metrics`, { signal: AbortSignal.timeout(2000) });
    return response.ok ? await response.text() : '';
  }

  /** The model's own tokenizer, here in the worker, for a model with no chat template to render (it embeds or ranks). */
  protected async vocabularyTokenize(request: TokenizeRequest): Promise<TokenizeOutcome> {
    await Promise.resolve();
    return vocabularyTokens(this.model, request, this.name, undefined);
  }

  async close(): Promise<void> {
    await this.server.stop();
    await this.model.dispose();
    await this.llama.dispose();
  }
}
