import { ApiEnv } from '@app/config';
import type { RedisClient } from '@app/redis';
import { CompactionSeal } from './compaction-seal';

/** A seal keyed by the operator's secrets (Redis is read only without them). */
async function sealWith(...secrets: string[]): Promise<CompactionSeal> {
  const env = Object.assign(new ApiEnv(), { COMPACTION_KEYS: secrets });
  const seal = new CompactionSeal(env, undefined as unknown as RedisClient);
  await seal.onModuleInit();
  return seal;
}

const OLD = 'old-secret-0123456789abcdef0123456789';
const NEW = 'new-secret-0123456789abcdef0123456789';

describe('CompactionSeal', () => {
  it('opens what it sealed for the same owner only, and nothing altered or malformed', async () => {
    const seal = await sealWith(OLD);
    const sealed = seal.seal('key-a', 'the summary');
    expect(seal.open('key-a', sealed)).toBe('the summary');
    expect(seal.open('key-b', sealed)).toBeUndefined();
    const [version, id, iv, body] = sealed.split('.');
    const flipped = Buffer.from(body, 'base64url');
    flipped[flipped.length - 1] ^= 1;
    for (const bad of [[version, id, iv, flipped.toString('base64url')].join('.'), `${sealed}.x`, 'cmp1.nope', '', 'cmp1.....'])
      expect(seal.open('key-a', bad)).toBeUndefined();
  });

  it('rotates: the first secret seals, every one opens, a dropped one no longer does', async () => {
    const sealedOld = (await sealWith(OLD)).seal('key-a', 'old');
    const rotated = await sealWith(NEW, OLD);
    expect(rotated.open('key-a', sealedOld)).toBe('old');
    const sealedNew = rotated.seal('key-a', 'new');
    expect((await sealWith(OLD)).open('key-a', sealedNew)).toBeUndefined();
    expect((await sealWith(NEW)).open('key-a', sealedNew)).toBe('new');
    expect((await sealWith(NEW)).open('key-a', sealedOld)).toBeUndefined();
  });

  it("names the item's content in the 400 for one that does not open", async () => {
    const open = (await sealWith(OLD)).opener('key-a');
    let refusal: unknown;
    try {
      open('cmp1.x.y.z', 'input[3]');
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toMatchObject({ status: 400, param: 'input[3].encrypted_content', code: 'invalid_encrypted_content' });
  });
});
