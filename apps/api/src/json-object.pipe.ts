import { Injectable } from '@nestjs/common';
import type { PipeTransform } from '@nestjs/common';
import { isJsonObject } from '@app/contracts';
import { OpenAiError } from './errors/openai-error';

/** A body that is valid JSON but not an object (`[]`, `"x"`, `null`) is refused before validation. */
@Injectable()
export class JsonObjectBodyPipe implements PipeTransform {
  transform(value: unknown, metadata: { type: string }): unknown {
    if (metadata.type !== 'body') return value;
    if (!isJsonObject(value)) {
      throw OpenAiError.invalidRequest('The request body must be a JSON object.');
    }
    return value;
  }
}
