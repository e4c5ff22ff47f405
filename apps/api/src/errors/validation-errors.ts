import type { ValidationError } from 'class-validator';
import { OpenAiError } from './openai-error';

function joinPath(parent: string, property: string): string {
  if (parent === '') return property;
  return /^\d+$/.test(property) ? `${parent}[${property}]` : `${parent}.${property}`;
}

/** The first failing field, depth first, as OpenAI names it: `messages[0].role`. */
function firstFailure(errors: ValidationError[], parent = ''): { param: string; error: ValidationError } | undefined {
  for (const error of errors) {
    const param = joinPath(parent, error.property);
    if (error.constraints && Object.keys(error.constraints).length > 0) return { param, error };
    const nested = firstFailure(error.children ?? [], param);
    if (nested) return nested;
  }
  return undefined;
}

/** ValidationPipe's exceptionFactory: a 400 naming the offending field in `param`. */
export function validationErrorToOpenAi(errors: ValidationError[]): OpenAiError {
  const failure = firstFailure(errors);
  if (!failure) return OpenAiError.invalidRequest('Invalid request body.');
  const constraints = failure.error.constraints ?? {};
  if (constraints.whitelistValidation) {
    return OpenAiError.invalidRequest(`Unrecognized request argument supplied: ${failure.param}`, failure.param);
  }
  // A wrong type explains the others ("must be an array" before "at most 2048 elements").
  const [rule, reason] = Object.entries(constraints).find(([name]) => name.startsWith('is')) ?? Object.entries(constraints)[0];
  if (rule === 'arrayMaxSize') return OpenAiError.tooLarge(`Too many items in '${failure.param}': ${reason}`, failure.param);
  return OpenAiError.invalidRequest(`Invalid value for '${failure.param}': ${reason}`, failure.param, 'invalid_value');
}
