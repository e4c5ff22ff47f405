/**
 * Seeded random tensor data for model-shapes.ts, fast enough for gigabytes: one pool of random
 * values per weight type (normal, standard deviation WEIGHT_STD), copied into each tensor in
 * chunks that start at seeded offsets. Deterministic for a seed; not meant to look trained.
 */
import { float32ToFloat16Bits } from './gguf-writer';

/** Standard deviation of the weights: small enough that F16 activations never overflow. */
export const WEIGHT_STD = 0.02;
const POOL_BYTES = 1 << 22;
/** Bytes copied from one pool offset: whole F16 values and whole Q8_0 blocks (34 × 16 × 2 = 1,088). */
const CHUNK_BYTES = 34 * 16 * 2 * 16;
const Q8_0_BLOCK_BYTES = 34;
/** Q8_0 values are scale × int8: int8 of standard deviation 40 keeps clear of ±127. */
const Q8_0_INT_STD = 40;

/** Mulberry32: small, seedable, good enough for weights nobody reads. */
export class SeededRandom {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  }

  /** Standard normal (Box-Muller). */
  normal(): number {
    const u = 1 - this.next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * this.next());
  }

  below(limit: number): number {
    return Math.floor(this.next() * limit);
  }
}

function f16Pool(random: SeededRandom, bytes: number): Buffer {
  const pool = Buffer.alloc(bytes);
  for (let offset = 0; offset < pool.length; offset += 2) pool.writeUInt16LE(float32ToFloat16Bits(random.normal() * WEIGHT_STD), offset);
  return pool;
}

function q8Pool(random: SeededRandom, bytes: number): Buffer {
  const blocks = Math.floor(bytes / Q8_0_BLOCK_BYTES);
  const pool = Buffer.alloc(blocks * Q8_0_BLOCK_BYTES);
  const scale = float32ToFloat16Bits(WEIGHT_STD / Q8_0_INT_STD);
  for (let block = 0; block < blocks; block += 1) {
    const at = block * Q8_0_BLOCK_BYTES;
    pool.writeUInt16LE(scale, at);
    for (let i = 0; i < 32; i += 1) pool.writeInt8(Math.max(-127, Math.min(127, Math.round(random.normal() * Q8_0_INT_STD))), at + 2 + i);
  }
  return pool;
}

/** Random tensor bytes for one model: its pools are drawn from `seed` when first needed. */
export class RandomTensors {
  private readonly random: SeededRandom;
  private readonly pools = new Map<'f16' | 'q8_0', Buffer>();

  private readonly poolBytes: number;

  /** `totalBytes`: about how much random data the model needs; a small model draws a smaller pool (drawing it is the slow part). */
  constructor(seed: number, totalBytes = POOL_BYTES) {
    this.random = new SeededRandom(seed);
    this.poolBytes = Math.max(4 * CHUNK_BYTES, Math.min(POOL_BYTES, 2 * Math.ceil(totalBytes / 2)));
  }

  /** `bytes` of random F16 values or Q8_0 blocks (`bytes` a whole number of them). */
  data(bytes: number, type: 'f16' | 'q8_0'): Buffer {
    let pool = this.pools.get(type);
    if (!pool) {
      pool = type === 'f16' ? f16Pool(this.random, this.poolBytes) : q8Pool(this.random, this.poolBytes);
      this.pools.set(type, pool);
    }
    const unit = type === 'f16' ? 2 : Q8_0_BLOCK_BYTES;
    const starts = Math.floor((pool.length - CHUNK_BYTES) / unit);
    const data = Buffer.allocUnsafe(bytes);
    for (let offset = 0; offset < bytes; offset += CHUNK_BYTES) {
      const from = this.random.below(starts) * unit;
      pool.copy(data, offset, from, from + Math.min(CHUNK_BYTES, bytes - offset));
    }
    return data;
  }
}
