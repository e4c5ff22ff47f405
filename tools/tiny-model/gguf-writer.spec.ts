import { float16BitsToFloat32, readGguf } from './gguf-reader';
import type { GgufFile } from './gguf-writer';
import { float32ToFloat16Bits, GgmlType, writeGguf } from './gguf-writer';

const sample: GgufFile = {
  metadata: [
    ['general.architecture', { type: 'string', value: 'llama' }],
    ['test.u32', { type: 'uint32', value: 4096 }],
    ['test.i32', { type: 'int32', value: -7 }],
    ['test.f32', { type: 'float32', value: 0.5 }],
    ['test.bool', { type: 'bool', value: true }],
    ['test.strings', { type: 'string[]', value: ['<s>', '\u2581the', 'é'] }],
    ['test.floats', { type: 'float32[]', value: new Float32Array([1.5, -2, 0]) }],
    ['test.ints', { type: 'int32[]', value: [1, -1, 6] }],
  ],
  tensors: [
    // 3 F32 values = 12 bytes: forces padding before the next tensor.
    { name: 'a.weight', dims: [3], type: GgmlType.F32, data: new Float32Array([1, -2.25, 3.5]) },
    { name: 'b.weight', dims: [2, 3], type: GgmlType.F16, data: new Float32Array([0, 1, -1, 0.5, 65504, -0.125]) },
  ],
};

describe('writeGguf', () => {
  const buf = writeGguf(sample);

  it('writes the GGUF v3 header with tensor and metadata counts', () => {
    expect(buf.toString('ascii', 0, 4)).toBe('GGUF');
    expect(buf.readUInt32LE(4)).toBe(3);
    expect(buf.readBigUInt64LE(8)).toBe(2n);
    expect(buf.readBigUInt64LE(16)).toBe(BigInt(sample.metadata.length));
  });

  it('round-trips every metadata type', () => {
    const { metadata } = readGguf(buf);
    expect(Object.fromEntries(metadata)).toEqual({
      'general.architecture': 'llama',
      'test.u32': 4096,
      'test.i32': -7,
      'test.f32': 0.5,
      'test.bool': true,
      'test.strings': ['<s>', '\u2581the', 'é'],
      'test.floats': [1.5, -2, 0],
      'test.ints': [1, -1, 6],
    });
  });

  it('aligns the data section and every tensor to 32 bytes', () => {
    const read = readGguf(buf);
    expect(read.dataOffset % 32).toBe(0);
    expect(read.tensors.map((t) => t.offset)).toEqual([0, 32]);
    for (const t of read.tensors) expect(t.fileOffset % 32).toBe(0);
    expect(buf.length % 32).toBe(0);
    // Padding bytes are zero.
    expect([...buf.subarray(read.dataOffset + 12, read.dataOffset + 32)].every((b) => b === 0)).toBe(true);
  });

  it('round-trips tensor infos and data (F32 exact, F16 for representable values)', () => {
    const [a, b] = readGguf(buf).tensors;
    expect(a).toMatchObject({ name: 'a.weight', dims: [3], type: GgmlType.F32 });
    expect([...a.values]).toEqual([1, -2.25, 3.5]);
    expect(b).toMatchObject({ name: 'b.weight', dims: [2, 3], type: GgmlType.F16 });
    expect([...b.values]).toEqual([0, 1, -1, 0.5, 65504, -0.125]);
    expect(buf.readUInt16LE(b.fileOffset + 2)).toBe(0x3c00);
  });

  it('honours a custom alignment and records it as general.alignment', () => {
    const read = readGguf(writeGguf({ ...sample, alignment: 64 }));
    expect(read.metadata.get('general.alignment')).toBe(64);
    expect(read.alignment).toBe(64);
    expect(read.dataOffset % 64).toBe(0);
    expect(read.tensors[1].offset).toBe(64);
  });

  it('is deterministic', () => {
    expect(writeGguf(sample).equals(buf)).toBe(true);
  });

  it('rejects inconsistent input', () => {
    const badTensor = { name: 'x', dims: [4], type: GgmlType.F32, data: new Float32Array(3) };
    expect(() => writeGguf({ metadata: [], tensors: [badTensor] })).toThrow(/dims need 4/);
    const dup: GgufFile = {
      metadata: [
        ['k', { type: 'uint32', value: 1 }],
        ['k', { type: 'uint32', value: 2 }],
      ],
      tensors: [],
    };
    expect(() => writeGguf(dup)).toThrow(/duplicate/);
  });
});

describe('float32ToFloat16Bits', () => {
  it.each([
    [1, 0x3c00],
    [-2, 0xc000],
    [0.1, 0x2e66],
    [65504, 0x7bff],
    [65520, 0x7c00], // rounds up past the largest finite half -> Inf
    [2 ** -24, 0x0001], // smallest subnormal
    [2 ** -26, 0x0000], // underflows to zero
    [1 + 2 ** -11, 0x3c00], // tie rounds to even
    [1 + 3 * 2 ** -11, 0x3c02], // tie rounds to even (up)
    [-Infinity, 0xfc00],
  ])('%p -> %i', (value, bits) => {
    expect(float32ToFloat16Bits(value)).toBe(bits);
  });

  it('round-trips through the reader for normal values within half precision', () => {
    for (const v of [-100, -60, -3.456, -0.01, 0.3, 1234.5]) {
      const back = float16BitsToFloat32(float32ToFloat16Bits(v));
      expect(Math.abs(back - v)).toBeLessThanOrEqual(Math.abs(v) * 2 ** -11);
    }
  });
});
