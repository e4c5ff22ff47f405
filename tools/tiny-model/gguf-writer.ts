/**
 * Minimal, dependency-free GGUF v3 writer.
 *
 * Layout (little-endian): magic "GGUF", uint32 version, uint64 tensor count,
 * uint64 metadata count, metadata key/values, tensor infos, padding to the
 * alignment, then the tensor data, each tensor starting on an aligned offset.
 * Output is a pure function of the input (no timestamps, insertion order kept),
 * so the same model always produces the same bytes.
 */

export const GGUF_MAGIC = 'GGUF';
export const GGUF_VERSION = 3;
export const GGUF_DEFAULT_ALIGNMENT = 32;

/** gguf_type codes from the GGUF spec (only the ones used here). */
export enum GgufValueType {
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
}

/** ggml_type codes for tensor data. */
export enum GgmlType {
  F32 = 0,
  F16 = 1,
  /** Blocks of 32 weights: one F16 scale, then 32 int8 values (34 bytes). Written by model-shapes.ts only. */
  Q8_0 = 8,
}

export type GgufValue =
  | { readonly type: 'uint32'; readonly value: number }
  | { readonly type: 'int32'; readonly value: number }
  | { readonly type: 'float32'; readonly value: number }
  | { readonly type: 'bool'; readonly value: boolean }
  | { readonly type: 'string'; readonly value: string }
  | { readonly type: 'string[]'; readonly value: readonly string[] }
  | { readonly type: 'float32[]'; readonly value: ArrayLike<number> }
  | { readonly type: 'int32[]'; readonly value: ArrayLike<number> };

/** Ordered key/value list: order is part of the file, so it is kept as given. */
export type GgufMetadata = ReadonlyArray<readonly [key: string, value: GgufValue]>;

export interface GgufTensor {
  readonly name: string;
  /** ggml order: dims[0] is the fastest-varying (row length). */
  readonly dims: readonly number[];
  readonly type: GgmlType;
  /** Row-major values, length = product of dims; converted on write if type is F16. */
  readonly data: Float32Array;
}

export interface GgufFile {
  readonly metadata: GgufMetadata;
  readonly tensors: readonly GgufTensor[];
  /** Written as `general.alignment` only when it differs from the default. */
  readonly alignment?: number;
}

/** Growable little-endian byte sink; avoids computing sizes up front. */
class ByteSink {
  private buf = Buffer.alloc(1 << 16);
  private len = 0;

  get length(): number {
    return this.len;
  }

  /** Grows the buffer if needed; call it before reading `this.buf`, which may be replaced. */
  private reserve(n: number): number {
    if (this.len + n > this.buf.length) {
      const next = Buffer.alloc(Math.max(this.buf.length * 2, this.len + n));
      this.buf.copy(next, 0, 0, this.len);
      this.buf = next;
    }
    const at = this.len;
    this.len += n;
    return at;
  }

  u8(v: number): void {
    const at = this.reserve(1);
    this.buf.writeUInt8(v, at);
  }
  u32(v: number): void {
    const at = this.reserve(4);
    this.buf.writeUInt32LE(v, at);
  }
  i32(v: number): void {
    const at = this.reserve(4);
    this.buf.writeInt32LE(v, at);
  }
  f32(v: number): void {
    const at = this.reserve(4);
    this.buf.writeFloatLE(v, at);
  }
  u64(v: number): void {
    const at = this.reserve(8);
    this.buf.writeBigUInt64LE(BigInt(v), at);
  }
  f32Array(values: Float32Array): void {
    const at = this.reserve(values.length * 4);
    for (let i = 0; i < values.length; i++) this.buf.writeFloatLE(values[i], at + 4 * i);
  }
  f16Array(values: Float32Array): void {
    const at = this.reserve(values.length * 2);
    for (let i = 0; i < values.length; i++) this.buf.writeUInt16LE(float32ToFloat16Bits(values[i]), at + 2 * i);
  }
  bytes(b: Uint8Array): void {
    const at = this.reserve(b.length);
    this.buf.set(b, at);
  }
  /** GGUF string: uint64 byte length + UTF-8 bytes, no terminator. */
  str(s: string): void {
    const b = Buffer.from(s, 'utf8');
    this.u64(b.length);
    this.bytes(b);
  }
  padTo(alignment: number): void {
    const pad = (alignment - (this.len % alignment)) % alignment;
    this.reserve(pad); // Buffer.alloc already zero-filled these bytes
  }
  toBuffer(): Buffer {
    return Buffer.from(this.buf.subarray(0, this.len));
  }
}

// Scratch views shared by every conversion: allocating per value made writing 10x slower.
const f32Scratch = new Float32Array(1);
const u32Scratch = new Uint32Array(f32Scratch.buffer);

/** IEEE 754 binary16 bits for a float, round-to-nearest-even (Node 20 has no Float16Array). */
export function float32ToFloat16Bits(value: number): number {
  f32Scratch[0] = value;
  const x = u32Scratch[0];
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  const mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant !== 0 ? 0x200 : 0); // Inf / NaN
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00; // overflow -> Inf
  if (e <= 0) {
    if (e < -10) return sign; // underflow -> signed zero
    // Subnormal: shift the mantissa (with implicit 1) into place, then round.
    const m = mant | 0x800000;
    const shift = 14 - e;
    let half = m >>> shift;
    const rest = m & ((1 << shift) - 1);
    const mid = 1 << (shift - 1);
    if (rest > mid || (rest === mid && (half & 1) === 1)) half++;
    return sign | half;
  }
  let half = sign | (e << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  // Carry from rounding may bump the exponent, which is the correct result.
  if (rest > 0x1000 || (rest === 0x1000 && (half & 1) === 1)) half++;
  return half;
}

function elementCount(dims: readonly number[]): number {
  return dims.reduce((a, b) => a * b, 1);
}

function tensorByteSize(t: GgufTensor): number {
  return elementCount(t.dims) * (t.type === GgmlType.F16 ? 2 : 4);
}

function writeValue(out: ByteSink, v: GgufValue): void {
  switch (v.type) {
    case 'uint32':
      out.u32(GgufValueType.UINT32);
      out.u32(v.value);
      return;
    case 'int32':
      out.u32(GgufValueType.INT32);
      out.i32(v.value);
      return;
    case 'float32':
      out.u32(GgufValueType.FLOAT32);
      out.f32(v.value);
      return;
    case 'bool':
      out.u32(GgufValueType.BOOL);
      out.u8(v.value ? 1 : 0);
      return;
    case 'string':
      out.u32(GgufValueType.STRING);
      out.str(v.value);
      return;
    case 'string[]':
      out.u32(GgufValueType.ARRAY);
      out.u32(GgufValueType.STRING);
      out.u64(v.value.length);
      for (const s of v.value) out.str(s);
      return;
    case 'float32[]':
      out.u32(GgufValueType.ARRAY);
      out.u32(GgufValueType.FLOAT32);
      out.u64(v.value.length);
      for (let i = 0; i < v.value.length; i++) out.f32(v.value[i]);
      return;
    case 'int32[]':
      out.u32(GgufValueType.ARRAY);
      out.u32(GgufValueType.INT32);
      out.u64(v.value.length);
      for (let i = 0; i < v.value.length; i++) out.i32(v.value[i]);
      return;
  }
}

function validate(file: GgufFile, alignment: number): void {
  if (!Number.isInteger(alignment) || alignment <= 0 || alignment % 8 !== 0) {
    throw new Error(`GGUF alignment must be a positive multiple of 8, got ${alignment}`);
  }
  const keys = new Set<string>();
  for (const [key] of file.metadata) {
    if (keys.has(key)) throw new Error(`duplicate GGUF metadata key: ${key}`);
    keys.add(key);
  }
  const names = new Set<string>();
  for (const t of file.tensors) {
    if (names.has(t.name)) throw new Error(`duplicate tensor name: ${t.name}`);
    names.add(t.name);
    if (t.dims.length < 1 || t.dims.length > 4) throw new Error(`${t.name}: 1 to 4 dims required`);
    if (t.dims.some((d) => !Number.isInteger(d) || d <= 0)) throw new Error(`${t.name}: bad dims ${t.dims.join('x')}`);
    if (t.data.length !== elementCount(t.dims)) {
      throw new Error(`${t.name}: data has ${t.data.length} values, dims need ${elementCount(t.dims)}`);
    }
  }
}

/** Serialises a complete GGUF v3 file into a Buffer. */
export function writeGguf(file: GgufFile): Buffer {
  const alignment = file.alignment ?? GGUF_DEFAULT_ALIGNMENT;
  validate(file, alignment);
  const metadata: GgufMetadata =
    alignment === GGUF_DEFAULT_ALIGNMENT || file.metadata.some(([k]) => k === 'general.alignment')
      ? file.metadata
      : [...file.metadata, ['general.alignment', { type: 'uint32', value: alignment }]];

  const out = new ByteSink();
  out.bytes(Buffer.from(GGUF_MAGIC, 'ascii'));
  out.u32(GGUF_VERSION);
  out.u64(file.tensors.length);
  out.u64(metadata.length);
  for (const [key, value] of metadata) {
    out.str(key);
    writeValue(out, value);
  }

  // Offsets are relative to the start of the data section and each is aligned.
  let offset = 0;
  for (const t of file.tensors) {
    out.str(t.name);
    out.u32(t.dims.length);
    for (const d of t.dims) out.u64(d);
    out.u32(t.type);
    out.u64(offset);
    offset += tensorByteSize(t);
    offset += (alignment - (offset % alignment)) % alignment;
  }

  for (const t of file.tensors) {
    out.padTo(alignment);
    if (t.type === GgmlType.F32) out.f32Array(t.data);
    else out.f16Array(t.data);
  }
  out.padTo(alignment);
  return out.toBuffer();
}

/** A tensor as the header describes it; its data is written by the caller (see model-shapes.ts). */
export interface GgufTensorInfo {
  readonly name: string;
  readonly dims: readonly number[];
  readonly type: GgmlType;
  readonly byteSize: number;
}

/**
 * The header of a GGUF v3 file whose tensors are streamed after it: metadata, tensor infos and the
 * padding up to the data section. Each tensor then starts on an `alignment` boundary, in order.
 * For models too large to build in one Buffer; writeGguf stays the path for the tiny models.
 */
export function writeGgufHeader(metadata: GgufMetadata, tensors: readonly GgufTensorInfo[], alignment = GGUF_DEFAULT_ALIGNMENT): Buffer {
  const out = new ByteSink();
  out.bytes(Buffer.from(GGUF_MAGIC, 'ascii'));
  out.u32(GGUF_VERSION);
  out.u64(tensors.length);
  out.u64(metadata.length);
  for (const [key, value] of metadata) {
    out.str(key);
    writeValue(out, value);
  }
  let offset = 0;
  for (const t of tensors) {
    out.str(t.name);
    out.u32(t.dims.length);
    for (const d of t.dims) out.u64(d);
    out.u32(t.type);
    out.u64(offset);
    offset += t.byteSize;
    offset += (alignment - (offset % alignment)) % alignment;
  }
  out.padTo(alignment);
  return out.toBuffer();
}
