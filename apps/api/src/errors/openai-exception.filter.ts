import { Catch, Logger } from '@nestjs/common';
import type { ArgumentsHost, ExceptionFilter } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { OpenAiError } from './openai-error';
import { toOpenAiError } from './http-error-mapping';

/** Every error leaves the API in OpenAI's shape, whatever threw it. */
@Catch()
export class OpenAiExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('errors');

  catch(exception: unknown, host: ArgumentsHost): void {
    const reply = host.switchToHttp().getResponse<FastifyReply>();
    const error = toOpenAiError(exception);
    if (!(exception instanceof OpenAiError) && error.status >= 500) {
      this.logger.error(exception instanceof Error ? (exception.stack ?? exception.message) : String(exception));
    }
    sendOpenAiError(reply, error);
  }
}

export function sendOpenAiError(reply: FastifyReply, error: OpenAiError): void {
  if (reply.sent || reply.raw.headersSent) return;
  void reply.status(error.status).headers(error.headers).send(error.toBody());
}
