import OpenAI from 'openai';
import { STACK_API_KEY, STACK_MODEL, ServiceStack } from './support/service-stack';

const OTHER_KEY = 'sk-another-tenant-0123456789';

/** Stored responses belong to the key that made them, within STORE_MAX_PER_KEY, on every instance. */
describe('stored responses: owners and bounds', () => {
  let stack: ServiceStack;
  let owner: OpenAI;
  let ownerElsewhere: OpenAI;
  let stranger: OpenAI;

  beforeAll(async () => {
    stack = await ServiceStack.start({ name: 'responses-state', apiKeys: [STACK_API_KEY, OTHER_KEY], apiEnv: { STORE_MAX_PER_KEY: '2' } });
    const second = await stack.addApi();
    owner = new OpenAI({ baseURL: stack.baseUrl, apiKey: STACK_API_KEY, maxRetries: 0 });
    ownerElsewhere = new OpenAI({ baseURL: second.baseUrl, apiKey: STACK_API_KEY, maxRetries: 0 });
    stranger = new OpenAI({ baseURL: second.baseUrl, apiKey: OTHER_KEY, maxRetries: 0 });
  });

  afterAll(async () => {
    await stack?.stop();
  });

  const create = (client: OpenAI, input: string): Promise<OpenAI.Responses.Response> =>
    client.responses.create({ model: STACK_MODEL, input, max_output_tokens: 16 });

  it('answers 404 to another key on every route (400 previous_response_not_found to a create), and its item_reference finds nothing', async () => {
    const mine = await create(owner, 'Hello');
    const notFound = { status: 404 };
    await expect(stranger.responses.retrieve(mine.id)).rejects.toMatchObject(notFound);
    await expect(stranger.responses.inputItems.list(mine.id)).rejects.toMatchObject(notFound);
    await expect(stranger.responses.delete(mine.id)).rejects.toMatchObject(notFound);
    // A response of another key is not found for this one, and a create continuing it is a 400 as at OpenAI.
    await expect(stranger.responses.create({ model: STACK_MODEL, input: 'Go on', previous_response_id: mine.id })).rejects.toMatchObject({
      status: 400,
      param: 'previous_response_id',
      code: 'previous_response_not_found',
    });
    await expect(stranger.responses.create({ model: STACK_MODEL, input: [{ type: 'item_reference', id: mine.output[0].id! }] })).rejects.toMatchObject({
      ...notFound,
      param: 'input[0].id',
    });
    // Still there for its owner, on the other instance.
    expect((await ownerElsewhere.responses.retrieve(mine.id)).id).toBe(mine.id);
    const continued = await ownerElsewhere.responses.create({
      model: STACK_MODEL,
      input: [
        { type: 'item_reference', id: mine.output[0].id! },
        { role: 'user', content: 'More' },
      ],
      max_output_tokens: 16,
    });
    expect(continued.status).not.toBe('failed');
  });

  it('keeps at most STORE_MAX_PER_KEY responses per key, dropping the oldest', async () => {
    const [first, second, third] = [await create(stranger, 'one'), await create(stranger, 'two'), await create(stranger, 'three')];
    await expect(stranger.responses.retrieve(first.id)).rejects.toMatchObject({ status: 404 });
    expect((await stranger.responses.retrieve(second.id)).id).toBe(second.id);
    expect((await stranger.responses.retrieve(third.id)).id).toBe(third.id);
  });
});
