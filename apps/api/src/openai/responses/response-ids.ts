import { randomBytes } from 'node:crypto';
import { newTimeOrderedId, timeOfId, timeOrderedIdPattern } from '../../http/time-ordered-ids';

const PREFIX = 'resp_';
const PATTERN = timeOrderedIdPattern(PREFIX);

/** A response's id, in creation order as the other stored objects' ids are. */
export const newResponseId = (now: number): string => newTimeOrderedId(PREFIX, now);

/** When a response was created, read from its id; undefined for an id of another form. */
export const responseIdTime = (id: string): number | undefined => (PATTERN.test(id) ? timeOfId(id, PREFIX) : undefined);

/** An item's id in OpenAI's forms (`msg_…`, `fc_…`, `fco_…`, `rs_…`): random, unique across responses. */
export const newItemId = (
  prefix: 'msg' | 'fc' | 'fco' | 'ctc' | 'ctco' | 'cmp' | 'rs' | 'lsh' | 'lsho' | 'tsc' | 'tso' | 'mcpl' | 'mcp' | 'mcpr' | 'mcpa',
): string => `${prefix}_${randomBytes(18).toString('hex')}`;

/**
 * The id of the output item at `outputIndex` of a response: derived from the response's id, so
 * every API instance that replays its events names its items alike.
 */
export const outputItemId = (responseId: string, prefix: 'msg' | 'fc' | 'ctc' | 'rs' | 'mcpl' | 'mcp' | 'mcpr', outputIndex: number): string =>
  `${prefix}_${responseId.slice(PREFIX.length)}${outputIndex}`;
