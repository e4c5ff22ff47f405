import { Agent, OpenAIConversationsSession, run, setDefaultOpenAIClient, setTracingDisabled } from '@openai/agents';
import OpenAI from 'openai';
import { assertMatchesConversationsSchema } from './support/openai-conversations-schema';
import { assertMatchesResponsesSchema } from './support/openai-responses-schema';
import { STACK_API_KEY, STACK_MODEL, ServiceStack, waitFor } from './support/service-stack';

const OTHER_KEY = 'sk-another-tenant-0123456789';

/** Long enough to be caught mid-run (the generated model writes thousands of tokens a second). */
const LONG = { model: STACK_MODEL, temperature: 0, max_output_tokens: 4000 };

type Item = OpenAI.Conversations.ConversationItem;

/**
 * OpenAI's Conversations API through the official client and the Agents SDK, against the real
 * llama worker: conversations and items on any instance, only for their key, and responses on a
 * conversation, which read it before their input and append their turn, one at a time.
 */
describe('Conversations API', () => {
  let stack: ServiceStack;
  let client: OpenAI;
  let elsewhere: OpenAI;
  let stranger: OpenAI;
  let elsewhereUrl: string;

  beforeAll(async () => {
    stack = await ServiceStack.start({ name: 'conversations', parallelSequences: 2, apiKeys: [STACK_API_KEY, OTHER_KEY] });
    elsewhereUrl = (await stack.addApi()).baseUrl;
    client = new OpenAI({ baseURL: stack.baseUrl, apiKey: STACK_API_KEY, maxRetries: 0 });
    elsewhere = new OpenAI({ baseURL: elsewhereUrl, apiKey: STACK_API_KEY, maxRetries: 0 });
    stranger = new OpenAI({ baseURL: elsewhereUrl, apiKey: OTHER_KEY, maxRetries: 0 });
  }, 90_000);

  afterAll(async () => {
    await stack?.stop();
  });

  /** Every item of a conversation, oldest first, each checked against OpenAI's schema. */
  async function itemsOf(reader: OpenAI, id: string): Promise<Item[]> {
    const items: Item[] = [];
    for await (const item of reader.conversations.items.list(id, { order: 'asc', limit: 100 })) {
      assertMatchesConversationsSchema('ConversationItem', item);
      items.push(item);
    }
    return items;
  }

  const checkedResponse = (response: OpenAI.Responses.Response): OpenAI.Responses.Response => {
    assertMatchesResponsesSchema('Response', response);
    return response;
  };

  it('creates, retrieves, updates and deletes a conversation and its items, on either instance', async () => {
    const created = await client.conversations.create({
      metadata: { topic: 'rabbits' },
      items: [
        { type: 'message', role: 'user', content: 'Where did the rabbit go?' },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Down the hole.' }] as never },
      ],
    });
    assertMatchesConversationsSchema('ConversationResource', created);
    expect(created).toMatchObject({ object: 'conversation', metadata: { topic: 'rabbits' } });
    expect(created.id).toMatch(/^conv_[0-9a-z]{9}[0-9A-Za-z]{15}$/);

    // Written on one instance, read on the other (the same Redis).
    const retrieved = await elsewhere.conversations.retrieve(created.id);
    assertMatchesConversationsSchema('ConversationResource', retrieved);
    expect(retrieved).toEqual(created);
    const updated = await elsewhere.conversations.update(created.id, { metadata: { topic: 'hats' } });
    assertMatchesConversationsSchema('ConversationResource', updated);
    expect((await client.conversations.retrieve(created.id)).metadata).toEqual({ topic: 'hats' });

    const added = await elsewhere.conversations.items.create(created.id, {
      items: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'And the hatter?' }], id: 'msg_mine_1' } as never],
    });
    assertMatchesConversationsSchema('ConversationItemList', added);
    expect(added.data.map((item) => item.id)).toEqual(['msg_mine_1']);

    const all = await itemsOf(client, created.id);
    expect(all.map((item) => (item as { role?: string }).role)).toEqual(['user', 'assistant', 'user']);
    expect(all[2]).toMatchObject({ id: 'msg_mine_1', type: 'message', content: [{ type: 'input_text', text: 'And the hatter?' }] });

    // A page newest first (OpenAI's default), then the next one after its cursor.
    const first = await client.conversations.items.list(created.id, { limit: 2 });
    const raw = await fetch(`${stack.baseUrl}/conversations/${created.id}/items?limit=2`, { headers: { authorization: `Bearer ${STACK_API_KEY}` } });
    assertMatchesConversationsSchema('ConversationItemList', await raw.json());
    expect(first.data.map((item) => item.id)).toEqual([all[2].id, all[1].id]);
    expect(first.has_more).toBe(true);
    const next = await client.conversations.items.list(created.id, { limit: 2, after: first.data[1].id, include: ['message.output_text.logprobs'] });
    expect(next.data.map((item) => item.id)).toEqual([all[0].id]);
    expect(next.has_more).toBe(false);

    const one = await elsewhere.conversations.items.retrieve(all[1].id!, { conversation_id: created.id });
    assertMatchesConversationsSchema('ConversationItem', one);
    expect(one).toEqual(all[1]);
    const afterDelete = await client.conversations.items.delete(all[1].id!, { conversation_id: created.id });
    assertMatchesConversationsSchema('ConversationResource', afterDelete);
    expect((await itemsOf(elsewhere, created.id)).map((item) => item.id)).toEqual([all[0].id, all[2].id]);
    await expect(client.conversations.items.retrieve(all[1].id!, { conversation_id: created.id })).rejects.toMatchObject({ status: 404, param: 'item_id' });

    // An id already in the conversation, more than 20 items at once and a bad item are refused by name.
    await expect(
      client.conversations.items.create(created.id, { items: [{ type: 'message', role: 'user', content: 'again', id: 'msg_mine_1' } as never] }),
    ).rejects.toMatchObject({ status: 400, param: 'items' });
    const tooMany = Array.from({ length: 21 }, () => ({ type: 'message' as const, role: 'user' as const, content: 'x' }));
    // Too many items is the service's 413, as for any list over its bound.
    await expect(client.conversations.items.create(created.id, { items: tooMany })).rejects.toMatchObject({ status: 413, param: 'items' });
    await expect(client.conversations.items.create(created.id, { items: [{ type: 'message', role: 'robot', content: 'x' } as never] })).rejects.toMatchObject({
      status: 400,
      param: 'items[0].role',
    });

    const deleted = await elsewhere.conversations.delete(created.id);
    assertMatchesConversationsSchema('DeletedConversationResource', deleted);
    expect(deleted).toEqual({ id: created.id, object: 'conversation.deleted', deleted: true });
    await expect(client.conversations.retrieve(created.id)).rejects.toMatchObject({ status: 404, code: 'not_found', param: 'conversation_id' });
  });

  it('answers 404 to another key on every route and on a response', async () => {
    const mine = await client.conversations.create({ items: [{ type: 'message', role: 'user', content: 'Mine.' }] });
    const [item] = await itemsOf(client, mine.id);
    const notFound = { status: 404, code: 'not_found' };
    await expect(stranger.conversations.retrieve(mine.id)).rejects.toMatchObject(notFound);
    await expect(stranger.conversations.update(mine.id, { metadata: {} })).rejects.toMatchObject(notFound);
    await expect(stranger.conversations.items.list(mine.id)).rejects.toMatchObject(notFound);
    await expect(stranger.conversations.items.create(mine.id, { items: [{ type: 'message', role: 'user', content: 'Hi' }] })).rejects.toMatchObject(notFound);
    await expect(stranger.conversations.items.retrieve(item.id!, { conversation_id: mine.id })).rejects.toMatchObject(notFound);
    await expect(stranger.conversations.items.delete(item.id!, { conversation_id: mine.id })).rejects.toMatchObject(notFound);
    await expect(stranger.conversations.delete(mine.id)).rejects.toMatchObject(notFound);
    await expect(stranger.responses.create({ model: STACK_MODEL, input: 'Go on', conversation: mine.id })).rejects.toMatchObject({
      ...notFound,
      param: 'conversation',
    });
    // Nothing of the stranger's attempts reached it.
    expect((await itemsOf(client, mine.id)).map((found) => found.id)).toEqual([item.id]);
  });

  it('gives a response the conversation before its input and appends its turn; the next turn reads it', async () => {
    const conversation = await client.conversations.create({});
    const first = checkedResponse(
      await client.responses.create({ model: STACK_MODEL, input: 'Tell me about the rabbit.', conversation: conversation.id, max_output_tokens: 16 }),
    );
    expect(first.conversation).toEqual({ id: conversation.id });
    const afterFirst = await itemsOf(elsewhere, conversation.id);
    expect(afterFirst.map((item) => item.id)).toEqual([expect.any(String), ...first.output.map((item) => item.id)]);
    expect(afterFirst[0]).toMatchObject({ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Tell me about the rabbit.' }] });

    // Counting the next turn's input reads the conversation as creating it does.
    const counted = await client.responses.inputTokens.count({ model: STACK_MODEL, input: 'And then?', conversation: conversation.id });
    // The second turn on the other instance, naming the conversation as an object.
    const second = checkedResponse(
      await elsewhere.responses.create({ model: STACK_MODEL, input: 'And then?', conversation: { id: conversation.id }, max_output_tokens: 16 }),
    );
    expect(second.conversation).toEqual({ id: conversation.id });
    expect(second.usage!.input_tokens).toBe(counted.input_tokens);
    // Its prompt held the first turn: more tokens than the first's, by at least the first's answer.
    expect(second.usage!.input_tokens).toBeGreaterThan(first.usage!.input_tokens + first.usage!.output_tokens - 1);
    const afterSecond = await itemsOf(client, conversation.id);
    expect(afterSecond.map((item) => item.id)).toEqual([...afterFirst.map((item) => item.id), expect.any(String), ...second.output.map((item) => item.id)]);
    // The response's own input items are its input, not the conversation before it.
    expect((await client.responses.inputItems.list(second.id)).data.map((item) => item.id)).toEqual([afterSecond[afterFirst.length].id]);

    // A response without a conversation says so.
    const plain = checkedResponse(await client.responses.create({ model: STACK_MODEL, input: 'Hi', max_output_tokens: 16 }));
    expect(plain.conversation).toBeNull();
  });

  it('appends the turn of a background response once it ends', async () => {
    const conversation = await client.conversations.create({ items: [{ type: 'message', role: 'user', content: 'Begin.' }] });
    const queued = await client.responses.create({
      model: STACK_MODEL,
      input: 'Go on.',
      conversation: conversation.id,
      background: true,
      max_output_tokens: 16,
    });
    const done = await waitFor(
      `background response ${queued.id} to end`,
      async () => {
        const response = await elsewhere.responses.retrieve(queued.id);
        return response.status === 'completed' || response.status === 'incomplete' ? response : undefined;
      },
      30_000,
    );
    checkedResponse(done);
    const items = await itemsOf(elsewhere, conversation.id);
    expect(items.slice(2).map((item) => item.id)).toEqual(done.output.map((item) => item.id));
    expect(items[1]).toMatchObject({ role: 'user', content: [{ type: 'input_text', text: 'Go on.' }] });
  });

  it('refuses conversation with previous_response_id (400 naming conversation), and with store: false', async () => {
    const conversation = await client.conversations.create({});
    const earlier = await client.responses.create({ model: STACK_MODEL, input: 'Hi', max_output_tokens: 16 });
    await expect(
      client.responses.create({ model: STACK_MODEL, input: 'Hi', conversation: conversation.id, previous_response_id: earlier.id }),
    ).rejects.toMatchObject({ status: 400, param: 'conversation', code: 'mutually_exclusive_parameters' });
    await expect(client.responses.create({ model: STACK_MODEL, input: 'Hi', conversation: conversation.id, store: false })).rejects.toMatchObject({
      status: 400,
      param: 'store',
    });
    await expect(client.responses.create({ model: STACK_MODEL, input: 'Hi', conversation: 'conv_nothing_here' })).rejects.toMatchObject({
      status: 404,
      param: 'conversation',
    });
    expect(await itemsOf(client, conversation.id)).toEqual([]);
  });

  it('lets one response at a time write a conversation: a second one meanwhile is 400 conversation_locked', async () => {
    const conversation = await client.conversations.create({});
    const stream = await client.responses.create({ ...LONG, input: 'Tell me everything.', conversation: conversation.id, stream: true });
    const events = stream[Symbol.asyncIterator]();
    // Once its text flows, the first response is running and holds the conversation.
    for (let next = await events.next(); !next.done && next.value.type !== 'response.output_text.delta'; next = await events.next());
    const refusal = { status: 400, code: 'conversation_locked', param: 'conversation' };
    await expect(
      elsewhere.responses.create({ model: STACK_MODEL, input: 'Me too', conversation: conversation.id, max_output_tokens: 16 }),
    ).rejects.toMatchObject(refusal);
    let completed: OpenAI.Responses.Response | undefined;
    for (let next = await events.next(); !next.done; next = await events.next()) {
      if (next.value.type === 'response.completed' || next.value.type === 'response.incomplete') completed = next.value.response;
    }
    expect(completed).toBeDefined();
    // Its turn alone is there, and the conversation is free again at once.
    const items = await itemsOf(client, conversation.id);
    expect(items.slice(1).map((item) => item.id)).toEqual(completed!.output.map((item) => item.id));
    const after = await client.responses.create({ model: STACK_MODEL, input: 'Now me', conversation: conversation.id, max_output_tokens: 16 });
    expect(after.status).not.toBe('failed');
  });

  it('never interleaves the turns of responses sent at once: each runs whole or is refused conversation_locked', async () => {
    const conversation = await client.conversations.create({});
    const refusal = { status: 400, code: 'conversation_locked', param: 'conversation' };
    const burst = await Promise.allSettled(
      Array.from({ length: 6 }, (_, index) =>
        (index % 2 ? elsewhere : client).responses.create({ model: STACK_MODEL, input: `Turn ${index}`, conversation: conversation.id, max_output_tokens: 16 }),
      ),
    );
    const ran = burst.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []));
    for (const outcome of burst) if (outcome.status === 'rejected') expect(outcome.reason).toMatchObject(refusal);
    expect(ran.length).toBeGreaterThanOrEqual(1);
    const ids = (await itemsOf(client, conversation.id)).map((item) => item.id);
    for (const response of ran) {
      const [input] = (await client.responses.inputItems.list(response.id)).data;
      const turn = [input.id, ...response.output.map((item) => item.id)];
      const start = ids.indexOf(input.id);
      expect(ids.slice(start, start + turn.length)).toEqual(turn);
    }
    expect(ids).toHaveLength(ran.reduce((count, response) => count + 1 + response.output.length, 0));
  });

  it("keeps an Agents SDK run's history in OpenAIConversationsSession", async () => {
    setTracingDisabled(true); // tracing would export to OpenAI's servers
    const sdkClient = new OpenAI({ baseURL: elsewhereUrl, apiKey: STACK_API_KEY, maxRetries: 0 });
    const session = new OpenAIConversationsSession({ client: sdkClient });
    // Sampled, so that the answer ends by itself (the SDK takes an incomplete response for a failed run).
    const agent = new Agent({ name: 'Narrator', instructions: 'Answer briefly.', model: STACK_MODEL, modelSettings: { maxTokens: 2000 } });
    setDefaultOpenAIClient(sdkClient);
    const runner = { session, maxTurns: 2 };
    const first = await run(agent, 'Who is the rabbit?', runner);
    const second = await run(agent, 'And the hatter?', runner);
    expect(typeof first.finalOutput).toBe('string');
    expect(typeof second.finalOutput).toBe('string');
    const conversationId = await session.getSessionId();
    expect(conversationId).toMatch(/^conv_/);
    // Both turns are in the conversation, read through the other instance with the plain client.
    const items = await itemsOf(client, conversationId);
    const texts = items.map((item) => JSON.stringify((item as { content?: unknown }).content ?? ''));
    expect(texts.findIndex((text) => text.includes('Who is the rabbit?'))).toBe(0);
    expect(texts.findIndex((text) => text.includes('And the hatter?'))).toBeGreaterThan(0);
    expect(items.filter((item) => (item as { role?: string }).role === 'assistant')).toHaveLength(2);
    expect((await session.getItems()).length).toBe(items.length);
    // The second run's prompt held the first's turn (the session's items came before its input).
    const [firstPrompt, secondPrompt] = [first, second].map((result) => result.rawResponses[0].usage.inputTokens);
    expect(secondPrompt).toBeGreaterThan(firstPrompt + first.rawResponses[0].usage.outputTokens - 1);
  });
});
