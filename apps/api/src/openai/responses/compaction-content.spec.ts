import { KEPT_USER_CHARS, keptUserTexts, latestCompaction, readCompaction, sealedForm, SUMMARY_HEADING } from './compaction-content';
import type { ConversationItem } from './response-items';
import { toChatMessages } from './responses-job.mapper';

const user = (text: string): ConversationItem => ({
  type: 'message',
  id: `msg_${text.length}`,
  role: 'user',
  content: [{ type: 'input_text', text }],
  status: 'completed',
});
const assistant: ConversationItem = {
  type: 'message',
  id: 'msg_a',
  role: 'assistant',
  content: [{ type: 'output_text', text: 'ok', annotations: [], logprobs: [] }],
  status: 'completed',
};
const developer: ConversationItem = {
  type: 'message',
  id: 'msg_d',
  role: 'developer',
  content: [{ type: 'input_text', text: 'be brief' }],
  status: 'completed',
};
/** A compaction item whose "sealed" content is its plain text here: the identity opener reads it. */
const compaction = (plain: string): ConversationItem => ({ type: 'compaction', id: 'cmp_1', encrypted_content: plain });
const open = (sealed: string): string => sealed;

describe('keptUserTexts', () => {
  it('keeps the last user messages in order within the bound, always the very last', () => {
    const [a, b, c] = [user('a'), user('b'.repeat(KEPT_USER_CHARS)), user('c')];
    expect(keptUserTexts([a, assistant, b, assistant, c], undefined)).toEqual(['c']);
    expect(keptUserTexts([a, assistant, c], undefined)).toEqual(['a', 'c']);
    const huge = 'd'.repeat(KEPT_USER_CHARS * 2);
    expect(keptUserTexts([a, user(huge)], undefined)).toEqual([huge]);
  });

  it('goes on from what the latest compaction kept, not from the messages it stands for', () => {
    const items = [user('old'), compaction(sealedForm('s', ['kept'])), assistant, user('new')];
    const latest = latestCompaction(items, (item) => readCompaction(item.encrypted_content));
    expect(keptUserTexts(items, latest)).toEqual(['kept', 'new']);
  });
});

describe('a compaction item in the conversation the model reads', () => {
  it('stands for every item before it but system and developer messages, read as its kept messages then its summary', () => {
    const items = [developer, user('first question'), assistant, compaction(sealedForm('They asked twice.', ['first question'])), user('next')];
    expect(toChatMessages(null, items, 0, undefined, open)).toEqual([
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'first question' },
      { role: 'user', content: `${SUMMARY_HEADING}\n\nThey asked twice.` },
      { role: 'user', content: 'next' },
    ]);
  });

  it('reads an item sealed before kept messages as its summary alone, in its place', () => {
    const legacy = `${SUMMARY_HEADING}\n\nEarlier.`;
    expect(toChatMessages(null, [user('q'), compaction(legacy), user('r')], 0, undefined, open)).toEqual([
      { role: 'user', content: 'q' },
      { role: 'user', content: legacy },
      { role: 'user', content: 'r' },
    ]);
  });

  it('follows only the latest of several', () => {
    const items = [compaction(sealedForm('one', ['a'])), user('b'), compaction(sealedForm('two', ['a', 'b'])), user('c')];
    expect(toChatMessages(null, items, 0, undefined, open).map((message) => message.content)).toEqual(['a', 'b', `${SUMMARY_HEADING}\n\ntwo`, 'c']);
  });
});
