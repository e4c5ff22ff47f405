import { OpenAiError } from '../../errors/openai-error';

/** A frame id from `Last-Event-ID` or `starting_after`: the client has every frame up to it. */
export function resumeCursor(lastEventId: unknown, startingAfter: unknown): number {
  const given = typeof lastEventId === 'string' && lastEventId !== '' ? lastEventId : startingAfter;
  if (given === undefined) return -1;
  if (typeof given !== 'string' || !/^\d{1,9}$/.test(given)) {
    throw OpenAiError.invalidRequest('Last-Event-ID (or starting_after) must be the id of an event of this stream.', 'starting_after', 'invalid_value');
  }
  return Number(given);
}
