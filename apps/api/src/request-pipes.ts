import { ValidationPipe } from '@nestjs/common';
import type { ArgumentMetadata, PipeTransform } from '@nestjs/common';
import { MessageObjectsPipe } from './openai/chat/message-objects.pipe';
import { NullFieldsPipe } from './openai/chat/null-fields.pipe';
import { validationErrorToOpenAi } from './errors/validation-errors';
import { JsonObjectBodyPipe } from './json-object.pipe';

/**
 * How every request body is checked, in order: a JSON object, fields sent as `null` dropped,
 * well-formed message objects, then the DTO's rules (unknown fields refused by name). Global pipes of the app, and the same check
 * for bodies that do not come over HTTP (the lines of a batch).
 */
export function requestPipes(): PipeTransform[] {
  return [
    new JsonObjectBodyPipe(),
    new NullFieldsPipe(),
    new MessageObjectsPipe(),
    new ValidationPipe({
      transform: true,
      whitelist: true,
      forbidNonWhitelisted: true,
      forbidUnknownValues: true,
      validationError: { target: false, value: false },
      exceptionFactory: validationErrorToOpenAi,
    }),
  ];
}

/** The pipes hold no state between bodies: one set serves every batch line. */
const BODY_PIPES = requestPipes();

/** Runs `body` through the request pipes as a body of type `metatype`; throws the OpenAiError a request would get. */
export async function validateBody<T>(body: unknown, metatype: new () => T): Promise<T> {
  const metadata: ArgumentMetadata = { type: 'body', metatype, data: undefined };
  let value = body;
  for (const pipe of BODY_PIPES) value = (await pipe.transform(value, metadata)) as unknown;
  return value as T;
}
