import type { ChatMessage, ToolDefinition } from '@app/contracts';
import { affinityKeyOf } from './affinity-key';

describe('affinityKeyOf', () => {
  const system: ChatMessage = { role: 'system', content: 'You are a storyteller.' };
  const turnOne: ChatMessage[] = [system, { role: 'user', content: 'Who pours the tea?' }];
  const turnTwo: ChatMessage[] = [...turnOne, { role: 'assistant', content: 'The hatter.' }, { role: 'user', content: 'And then?' }];
  const tools: ToolDefinition[] = [{ name: 'find_rabbit', description: 'Where the rabbit is.', parameters: { type: 'object' } }];

  it("gives every turn of a conversation one key: what all its turns begin with", () => {
    expect(affinityKeyOf(undefined, turnTwo, tools)).toBe(affinityKeyOf(undefined, turnOne, tools));
  });

  it('tells conversations apart by their first turn, system messages and tools', () => {
    const key = affinityKeyOf(undefined, turnOne, tools);
    expect(affinityKeyOf(undefined, [system, { role: 'user', content: 'Who sleeps?' }], tools)).not.toBe(key);
    expect(affinityKeyOf(undefined, [{ role: 'system', content: 'You are a poet.' }, turnOne[1]], tools)).not.toBe(key);
    expect(affinityKeyOf(undefined, turnOne, undefined)).not.toBe(key);
  });

  it("takes the client's prompt_cache_key when it gives one, whatever the messages", () => {
    expect(affinityKeyOf('conversation-7', turnOne, tools)).toBe(affinityKeyOf('conversation-7', [{ role: 'user', content: 'Other.' }], undefined));
    expect(affinityKeyOf('conversation-7', turnOne, tools)).not.toBe(affinityKeyOf('conversation-8', turnOne, tools));
    expect(affinityKeyOf('', turnOne, tools)).toBe(affinityKeyOf(undefined, turnOne, tools));
  });
});
