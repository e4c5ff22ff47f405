/**
 * Minimal GGUF v3 reader, the inverse of gguf-writer.ts for the types it writes.
 * Exists so tests can check a written file independently of llama.cpp.
 */
import { GGUF_DEFAULT_ALIGNMENT, GGUF_MAGIC, GgmlType, GgufValueType } from './gguf-writer';

export type GgufReadValue = number | boolean | string | string[] | number[];

export interface GgufReadTensor {
  readonly name: string;
  readonly dims: number[];
  readonly type: GgmlType;
  /** Offset relative to the data section. */
  readonly offset: number;
  /** Absolute offset in the file. */
  readonly fileOffset: number;
  readonly values: Float32Array;
}

export interface GgufReadResult {
  readonly version: number;
  readonly tensorCount: number;
  readonly metadataCount: number;
  readonly metadata: Map<string, GgufReadValue>;
  readonly tensors: GgufReadTensor[];
  readonly dataOffset: number;
  readonly alignment: number;
}

/** Binary16 bits to a number (exact). */
export function float16BitsToFloat32(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >>> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 0x1f) return mant === 0 ? sign * Infinity : NaN;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

class Cursor {
  pos = 0;
  constructor(private readonly buf: Buffer) {}
  u8(): number {
    return this.buf.readUInt8((this.pos += 1) - 1);
  }
  u32(): number {
    return this.buf.readUInt32LE((this.pos += 4) - 4);
  }
  i32(): number {
    return this.buf.readInt32LE((this.pos += 4) - 4);
  }
  f32(): number {
    return this.buf.readFloatLE((this.pos += 4) - 4);
  }
  u64(): number {
    const v = this.buf.readBigUInt64LE((this.pos += 8) - 8);
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new Error('uint64 too large');
    return Number(v);
  }
  str(): string {
    const n = this.u64();
    const s = this.buf.toString('utf8', this.pos, this.pos + n);
    this.pos += n;
    return s;
  }
}

function readScalar(c: Cursor, type: GgufValueType): number | boolean | string {
  switch (type) {
    case GgufValueType.UINT32:
      return c.u32();
    case GgufValueType.INT32:
      return c.i32();
    case GgufValueType.FLOAT32:
      return c.f32();
    case GgufValueType.BOOL:
      return c.u8() !== 0;
    case GgufValueType.STRING:
      return c.str();
    default:
      throw new Error(`unsupported GGUF value type ${type}`);
  }
}

function readValue(c: Cursor, type: GgufValueType): GgufReadValue {
  if (type !== GgufValueType.ARRAY) return readScalar(c, type);
  const elemType = c.u32() as GgufValueType;
  const n = c.u64();
  if (elemType === GgufValueType.STRING) {
    const out: string[] = [];
    for (let i = 0; i < n; i++) out.push(c.str());
    return out;
  }
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const v = readScalar(c, elemType);
    if (typeof v !== 'number') throw new Error(`unsupported array element type ${elemType}`);
    out.push(v);
  }
  return out;
}

export function readGguf(buf: Buffer): GgufReadResult {
  if (buf.toString('ascii', 0, 4) !== GGUF_MAGIC) throw new Error('not a GGUF file');
  const c = new Cursor(buf);
  c.pos = 4;
  const version = c.u32();
  const tensorCount = c.u64();
  const metadataCount = c.u64();
  const metadata = new Map<string, GgufReadValue>();
  for (let i = 0; i < metadataCount; i++) {
    const key = c.str();
    metadata.set(key, readValue(c, c.u32()));
  }
  const infos: { name: string; dims: number[]; type: GgmlType; offset: number }[] = [];
  for (let i = 0; i < tensorCount; i++) {
    const name = c.str();
    const nDims = c.u32();
    const dims: number[] = [];
    for (let d = 0; d < nDims; d++) dims.push(c.u64());
    const type = c.u32() as GgmlType;
    infos.push({ name, dims, type, offset: c.u64() });
  }
  const alignmentValue = metadata.get('general.alignment');
  const alignment = typeof alignmentValue === 'number' ? alignmentValue : GGUF_DEFAULT_ALIGNMENT;
  const dataOffset = Math.ceil(c.pos / alignment) * alignment;
  const tensors = infos.map((t): GgufReadTensor => {
    const count = t.dims.reduce((a, b) => a * b, 1);
    const fileOffset = dataOffset + t.offset;
    const values = new Float32Array(count);
    for (let i = 0; i < count; i++) {
      values[i] = t.type === GgmlType.F32 ? buf.readFloatLE(fileOffset + 4 * i) : float16BitsToFloat32(buf.readUInt16LE(fileOffset + 2 * i));
    }
    return { ...t, fileOffset, values };
  });
  return { version, tensorCount, metadataCount, metadata, tensors, dataOffset, alignment };
}
