import { plainToInstance } from 'class-transformer';
import { clientAffinityKey } from '../completions/affinity-key';
import { CreateResponseDto } from './create-response.dto';
import type { ConversationItem } from './response-items';
import { toResponseJob } from './response-job.mapper';

const items: ConversationItem[] = [{ type: 'message', id: 'msg_1', role: 'user', content: [{ type: 'input_text', text: 'Who pours the tea?' }], status: 'completed' }];
const affinityKeyOf = (body: object, continuedKey?: string) =>
  toResponseJob(plainToInstance(CreateResponseDto, { model: 'm', ...body }), items, 0, 'resp_1', 1_000, 30_000, continuedKey).job.affinityKey;

describe('toResponseJob: the affinity key', () => {
  it("is the request's prompt_cache_key, before the key of the response it continues", () => {
    expect(affinityKeyOf({ prompt_cache_key: 'conversation-7' }, 'key:earlier')).toBe(clientAffinityKey('conversation-7'));
  });

  it('is the continued response\'s key when the request gives none', () => {
    expect(affinityKeyOf({ previous_response_id: 'resp_0' }, 'key:earlier')).toBe('key:earlier');
  });

  it('is left to the placement (a hash of the conversation start) without either', () => {
    expect(affinityKeyOf({})).toBeUndefined();
  });
});
