import { Logger, ServiceUnavailableException } from '@nestjs/common';
import type { OnApplicationBootstrap, OnApplicationShutdown, Provider } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { MetricsToken, WorkerEnv } from '@app/config';
import type { HealthCheckResult } from '@nestjs/terminus';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { WorkerHealth } from './worker-health';
import { ObservedEngine } from './observed-engine';
import { WorkerMetrics } from './worker-metrics';

/** What the probes see while the model is still loading: alive, not ready. */
const LOADING: HealthCheckResult = {
  status: 'error',
  info: {},
  error: { model: { status: 'down', message: 'loading' } },
  details: { model: { status: 'down', message: 'loading' } },
};

/**
 * The worker's only HTTP surface, on HEALTH_PORT: GET /health/live, /health/ready and /metrics
 * (behind METRICS_TOKEN when one is set; the probes stay open).
 * A plain node:http server, not a Nest HTTP app: the worker stays an application context. It
 * listens from the start, so probes get answers while the model loads (live 200, ready 503).
 */
export class WorkerHttpServer implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('WorkerHealth');
  private server: Server | undefined;
  private health: WorkerHealth | undefined;
  private engine: ObservedEngine | undefined;
  private readonly metricsToken: MetricsToken;

  constructor(
    private readonly env: WorkerEnv,
    private readonly metrics: WorkerMetrics,
    private readonly moduleRef: ModuleRef,
  ) {
    this.metricsToken = new MetricsToken(env.METRICS_TOKEN);
  }

  async listen(): Promise<void> {
    const server = createServer((request, response) => {
      this.handle(request, response).catch((error: unknown) => {
        this.logger.error(`health request failed: ${error instanceof Error ? error.message : String(error)}`);
        if (!response.headersSent) send(response, 500, 'text/plain; charset=utf-8', 'internal error\n');
        else response.destroy();
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', (error) => reject(new Error(`HEALTH_PORT ${this.env.HEALTH_PORT} on ${this.env.HEALTH_HOST}: ${error.message}`)));
      server.listen(this.env.HEALTH_PORT, this.env.HEALTH_HOST, resolve);
    });
    this.server = server;
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : this.env.HEALTH_PORT;
    const host = this.env.HEALTH_HOST === '0.0.0.0' || this.env.HEALTH_HOST === '::' ? '127.0.0.1' : this.env.HEALTH_HOST;
    this.logger.log(`worker health listening on http://${host}:${port} (/health/live, /health/ready, /metrics)`);
  }

  /** Everything is loaded now: readiness comes from the real checks. */
  onApplicationBootstrap(): void {
    this.health = this.moduleRef.get(WorkerHealth);
    this.engine = this.moduleRef.get(ObservedEngine);
  }

  /** The engine's own metrics, or none (still loading, none of its own, or its server not answering). */
  private async engineMetrics(): Promise<string> {
    return (await this.engine?.engineMetrics().catch(() => '')) ?? '';
  }

  async onApplicationShutdown(): Promise<void> {
    const server = this.server;
    if (!server) return;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = (request.url ?? '/').split('?')[0];
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.setHeader('allow', 'GET, HEAD');
      return send(response, 405, 'text/plain; charset=utf-8', 'method not allowed\n');
    }
    switch (path) {
      case '/metrics':
        if (!this.metricsToken.accepts(request.headers.authorization)) {
          response.setHeader('www-authenticate', 'Bearer realm="metrics"');
          return send(response, 401, 'text/plain; charset=utf-8', 'metrics need Authorization: Bearer METRICS_TOKEN\n');
        }
        // The engine's own metrics (llama-server's llamacpp:*) after the worker's, in one scrape.
        return send(response, 200, this.metrics.registry.contentType, (await this.metrics.registry.metrics()) + (await this.engineMetrics()));
      case '/health/live':
        return report(response, this.health ? this.health.live() : Promise.resolve({ ...LOADING, status: 'ok', error: {} }));
      case '/health/ready':
        return report(response, this.health ? this.health.ready() : Promise.reject(new ServiceUnavailableException(LOADING)));
      default:
        return send(response, 404, 'text/plain; charset=utf-8', 'not found: try /health/live, /health/ready or /metrics\n');
    }
  }
}

function send(response: ServerResponse, status: number, contentType: string, body: string): void {
  response.writeHead(status, { 'content-type': contentType, 'cache-control': 'no-store', 'content-length': Buffer.byteLength(body) });
  response.end(body);
}

/** Terminus throws its report inside a 503; it is sent as it is. */
async function report(response: ServerResponse, check: Promise<HealthCheckResult>): Promise<void> {
  let status = 200;
  let result: unknown;
  try {
    result = await check;
  } catch (error) {
    if (!(error instanceof ServiceUnavailableException)) throw error;
    status = 503;
    result = error.getResponse();
  }
  send(response, status, 'application/json; charset=utf-8', JSON.stringify(result));
}

/** Starts listening while the rest of the worker (the model above all) is still loading. */
export const workerHttpServerProvider: Provider = {
  provide: WorkerHttpServer,
  inject: [WorkerEnv, WorkerMetrics, ModuleRef],
  useFactory: async (env: WorkerEnv, metrics: WorkerMetrics, moduleRef: ModuleRef): Promise<WorkerHttpServer> => {
    const server = new WorkerHttpServer(env, metrics, moduleRef);
    await server.listen();
    return server;
  },
};
