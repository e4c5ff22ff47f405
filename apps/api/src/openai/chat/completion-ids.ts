import { newTimeOrderedId, timeOfId, timeOrderedIdPattern } from '../../http/time-ordered-ids';

const PREFIX = 'chatcmpl-';
const PATTERN = timeOrderedIdPattern(PREFIX);

/** A completion's id, in creation order: a cursor in the stored completions' list stays a position after its completion is gone. */
export const newCompletionId = (now: number): string => newTimeOrderedId(PREFIX, now);

/** When a completion was created, read from its id; undefined for an id of another form (a batch line's). */
export const completionIdTime = (id: string): number | undefined => (PATTERN.test(id) ? timeOfId(id, PREFIX) : undefined);
