import type { FastifyInstance } from 'fastify';
import { OpenAiError } from '../errors/openai-error';
import { MAX_JSON_DEPTH, findDepthViolation } from './json-depth';

/**
 * Fastify's own JSON parser (prototype-poisoning checks, body limit), behind a nesting-depth
 * check: a body nested deeper than MAX_JSON_DEPTH is a 400 before anything recurses into it.
 * Text bodies are no longer parsed: this API speaks JSON only, and anything else is a 400 that
 * says so rather than "must be a JSON object".
 */
export function installJsonBodyParser(fastify: FastifyInstance): void {
  const parseJson = fastify.getDefaultJsonParser('error', 'error');
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    const violation = findDepthViolation(text);
    if (violation) {
      const where = violation.field === null ? 'The request body' : `The value of '${violation.field}'`;
      done(
        OpenAiError.invalidRequest(
          `${where} is nested too deeply: at most ${MAX_JSON_DEPTH} levels of arrays and objects are accepted.`,
          violation.field,
          'nesting_too_deep',
        ),
        undefined,
      );
      return;
    }
    void parseJson(request, text, done);
  });
}
