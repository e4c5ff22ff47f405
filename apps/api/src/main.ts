import 'reflect-metadata';
import fastifyMultipart from '@fastify/multipart';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { ApiEnv, exitIfShutdownOutlasts, keepProcessName, loadEnv, logLevelsUpTo } from '@app/config';
import { ApiModule } from './api.module';
import { baseUrl, isSupervisedApiProcess, superviseApiProcesses } from './cluster/api-process-supervisor';
import { setupApiDocs } from './docs/api-docs';
import { OpenAiExceptionFilter } from './errors/openai-exception.filter';
import { openAiClientErrorHandler, openAiFrameworkErrorHandler } from './http/client-error-handler';
import { installJsonBodyParser } from './http/json-body-parser';
import { installOversizedUploadHandling } from './http/oversized-upload';
import { requestLoggingOptions } from './observability/request-logging';
import { RequestTelemetry } from './observability/request-telemetry';
import { ResponsesWebSocketRoute } from './openai/responses/responses-websocket.route';
import { requestPipes } from './request-pipes';

/** Within the orchestrators' grace periods (Kubernetes: preStop 5 s + drain 30 s + this < 45 s). */
const SHUTDOWN_MARGIN_MS = 5000;

async function bootstrap(env: ApiEnv): Promise<void> {
  const app = await NestFactory.create<NestFastifyApplication>(
    ApiModule.register(env),
    new FastifyAdapter({
      bodyLimit: env.BODY_LIMIT_BYTES,
      // While draining on SIGTERM admission answers new requests with an OpenAI-shaped 503.
      return503OnClosing: false,
      // A client gets this long to send its whole request (408 after); Node checks every second,
      // and enforces it only while the headers timeout is not longer (seen on Node 24).
      requestTimeout: env.REQUEST_TIMEOUT_MS,
      http: { connectionsCheckingInterval: 1000, headersTimeout: Math.min(60_000, env.REQUEST_TIMEOUT_MS || 60_000) },
      clientErrorHandler: openAiClientErrorHandler,
      // A malformed URL or an over-long parameter, answered by the router before any handler.
      frameworkErrors: openAiFrameworkErrorHandler,
      ...requestLoggingOptions(env.LOG_LEVEL),
    }),
    // JSON is parsed by installJsonBodyParser (depth-bounded), not by Nest's parsers.
    { logger: logLevelsUpTo(env.LOG_LEVEL), bodyParser: false },
  );
  const fastify = app.getHttpAdapter().getInstance();
  app.get(RequestTelemetry).install(fastify);
  installOversizedUploadHandling(fastify, app.getHttpServer(), env.BODY_LIMIT_BYTES);
  installJsonBodyParser(fastify);
  // multipart/form-data for POST /v1/files only; its limits are set per upload (files/upload-form.ts).
  await app.register(fastifyMultipart);
  // GET /v1/responses upgraded to a WebSocket (the Responses API's WebSocket mode).
  await app.get(ResponsesWebSocketRoute).install(fastify);
  app.useGlobalFilters(new OpenAiExceptionFilter());
  app.useGlobalPipes(...requestPipes());
  setupApiDocs(app);
  // The supervisor alone decides when its processes stop (its SIGTERM); a terminal's Ctrl-C reaches it too.
  const stopSignals: NodeJS.Signals[] = isSupervisedApiProcess() ? ['SIGTERM'] : ['SIGTERM', 'SIGINT'];
  if (isSupervisedApiProcess()) process.on('SIGINT', () => undefined);
  app.enableShutdownHooks(stopSignals);
  // Open requests drain for SHUTDOWN_DRAIN_MS; past that, a step waiting on Redis is stuck.
  exitIfShutdownOutlasts(env.SHUTDOWN_DRAIN_MS + SHUTDOWN_MARGIN_MS, stopSignals);
  await app.listen({ port: env.PORT, host: env.HOST });
  if (isSupervisedApiProcess()) return; // the supervisor announces the port once all its processes listen
  const address = app.getHttpServer().address();
  const port = typeof address === 'object' && address ? address.port : env.PORT;
  console.log(`API listening: ${baseUrl(env.HOST, port)}`);
}

function main(): Promise<void> | void {
  keepProcessName();
  const env = loadEnv(ApiEnv);
  if (env.API_PROCESSES > 1 && !isSupervisedApiProcess()) return superviseApiProcesses(env.API_PROCESSES, env.HOST);
  return bootstrap(env);
}

Promise.resolve()
  .then(main)
  .catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(1);
  });
