import { newTimeOrderedId } from '../../http/time-ordered-ids';

/** A conversation's id (`conv_…`), in creation order as the other stored objects' ids are. */
export const newConversationId = (now: number): string => newTimeOrderedId('conv_', now);
