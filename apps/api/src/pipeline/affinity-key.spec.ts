import type { ChatMessage, ToolDefinition } from '@app/contracts';
import { clientAffinityKey, prefixAffinityKey } from './affinity-key';

describe('affinity keys', () => {
  const system: ChatMessage = { role: 'system', content: 'You are a storyteller.' };
  const turnOne: ChatMessage[] = [system, { role: 'user', content: 'Who pours the tea?' }];
  const turnTwo: ChatMessage[] = [...turnOne, { role: 'assistant', content: 'The hatter.' }, { role: 'user', content: 'And then?' }];
  const tools: ToolDefinition[] = [{ name: 'find_rabbit', description: 'Where the rabbit is.', parameters: { type: 'object' } }];

  it('gives every turn of a conversation one prefix key: what all its turns begin with', () => {
    expect(prefixAffinityKey(turnTwo, tools)).toBe(prefixAffinityKey(turnOne, tools));
  });

  it('tells conversations apart by their first turn, system messages and tools', () => {
    const key = prefixAffinityKey(turnOne, tools);
    expect(prefixAffinityKey([system, { role: 'user', content: 'Who sleeps?' }], tools)).not.toBe(key);
    expect(prefixAffinityKey([{ role: 'system', content: 'You are a poet.' }, turnOne[1]], tools)).not.toBe(key);
    expect(prefixAffinityKey(turnOne, undefined)).not.toBe(key);
  });

  it("keys a client's prompt_cache_key apart from any prefix, and gives none for an empty one", () => {
    expect(clientAffinityKey('conversation-7')).toBe(clientAffinityKey('conversation-7'));
    expect(clientAffinityKey('conversation-7')).not.toBe(clientAffinityKey('conversation-8'));
    expect(clientAffinityKey('conversation-7')).toMatch(/^key:/);
    expect(prefixAffinityKey(turnOne, tools)).toMatch(/^prefix:/);
    expect(clientAffinityKey('')).toBeUndefined();
    expect(clientAffinityKey(undefined)).toBeUndefined();
    expect(clientAffinityKey(null)).toBeUndefined();
  });
});
