import type { ChatMessage } from '@app/contracts';
import { fitConversation, truncatedCachePolicy } from './conversation-truncation';

const user = (content: string): ChatMessage => ({ role: 'user', content });
const assistant = (content: string): ChatMessage => ({ role: 'assistant', content });
const conversation: ChatMessage[] = [
  { role: 'system', content: 'rules' },
  user('u1'),
  { role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'f', arguments: '{}' }] },
  { role: 'tool', content: 'r1', toolCallId: 'c1' },
  assistant('a1'),
  user('u2'),
  assistant('a2'),
  user('u3'),
];
/** Fits when the conversation holds at most `most` characters of content. */
const within = (most: number) => (messages: ChatMessage[]) => messages.reduce((sum, message) => sum + message.content.length, 0) <= most;

describe('fitConversation (truncation: auto)', () => {
  it('keeps a conversation that fits as it is', () => {
    expect(fitConversation(conversation, within(100))).toEqual({ messages: conversation, from: 1, dropped: 0 });
  });

  it('drops the fewest oldest turns, keeping the system messages and starting the rest at a user message', () => {
    const fitted = fitConversation(conversation, within(13));
    expect(fitted?.messages.map((message) => message.content)).toEqual(['rules', 'u2', 'a2', 'u3']);
    expect(fitted).toMatchObject({ from: 1, dropped: 4 });
    // Never a tool result without its call, nor an answer opening the kept part.
    expect(fitConversation(conversation, within(16))?.messages.map((message) => message.role)).toEqual(['system', 'user', 'assistant', 'user']);
  });

  it('keeps at least the last message, and gives up when even that does not fit', () => {
    expect(fitConversation(conversation, within(7))?.messages.map((message) => message.content)).toEqual(['rules', 'u3']);
    expect(fitConversation(conversation, within(6))).toBeUndefined();
  });

  it('renders a few candidates, not every one', () => {
    const long = [user('x'), ...Array.from({ length: 200 }, (_, index) => [assistant('y'), user(String(index))]).flat()];
    let renders = 0;
    fitConversation(long, (messages) => (renders++, messages.length <= 11));
    expect(renders).toBeLessThanOrEqual(10);
  });

  it('moves a cache breakpoint with its message, and drops one whose message was dropped', () => {
    const fitted = { messages: [], from: 1, dropped: 4 };
    expect(truncatedCachePolicy({ implicit: false, breakpoint: { message: 6, offset: 1 } }, fitted)).toEqual({
      implicit: false,
      breakpoint: { message: 2, offset: 1 },
    });
    expect(truncatedCachePolicy({ implicit: true, breakpoint: { message: 3, offset: 1 } }, fitted)).toEqual({ implicit: true });
    expect(truncatedCachePolicy({ implicit: false, breakpoint: { message: 0, offset: 2 } }, fitted)).toEqual({
      implicit: false,
      breakpoint: { message: 0, offset: 2 },
    });
  });
});
