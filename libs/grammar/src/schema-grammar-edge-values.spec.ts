import fc from 'fast-check';
import { z } from 'zod';
import type { JsonValue } from '@app/contracts';
import { grammarAccepts } from './grammar-sampler';
import { accepts, expectSamplesValid, rulesOf } from './schema-grammar.fixtures';

describe('schemaGrammar: edge values', () => {
  it('large counts, written in chunks, keep to their bounds', () => {
    expectSamplesValid({ type: 'string', minLength: 300, maxLength: 20_000 }, 20);
    expectSamplesValid({ type: 'array', items: { type: 'integer' }, minItems: 260, maxItems: 700 }, 20);
    const schema = { type: 'string', minLength: 300, maxLength: 20_000 };
    for (const [length, allowed] of [
      [299, false],
      [300, true],
      [16_447, true],
      [20_000, true],
      [20_001, false],
    ] as const)
      expect(accepts(schema, 'y'.repeat(length))).toBe(allowed);
  });

  const bound = fc.oneof(
    fc.integer({ min: -1_000_000, max: 1_000_000 }),
    fc.constantFrom(0, 1, -1, 9, 10, 99, 100, 101, 105, 999, 1000, 2 ** 31 - 1, -(2 ** 31)),
  );

  it('integer ranges hold both bounds and nothing beyond them', () => {
    fc.assert(
      fc.property(bound, bound, (a, b) => {
        const [lo, hi] = a <= b ? [a, b] : [b, a];
        const schema = { type: 'integer', minimum: lo, maximum: hi };
        expect(accepts(schema, lo)).toBe(true);
        expect(accepts(schema, hi)).toBe(true);
        expect(accepts(schema, Math.floor((lo + hi) / 2))).toBe(true);
        expect(accepts(schema, lo - 1)).toBe(false);
        expect(accepts(schema, hi + 1)).toBe(false);
      }),
      { numRuns: 150 },
    );
  });

  it('a minimum alone, or a maximum alone, holds the bound and not the next one out', () => {
    fc.assert(
      fc.property(bound, fc.boolean(), (value, exclusive) => {
        const low: JsonValue = exclusive ? { type: 'integer', exclusiveMinimum: value } : { type: 'integer', minimum: value };
        const high: JsonValue = exclusive ? { type: 'integer', exclusiveMaximum: value } : { type: 'integer', maximum: value };
        expect(accepts(low, value)).toBe(!exclusive);
        expect(accepts(low, value + 1)).toBe(true);
        expect(accepts(low, value - 1)).toBe(false);
        expect(accepts(low, value + 12345)).toBe(true);
        expect(accepts(high, value)).toBe(!exclusive);
        expect(accepts(high, value - 1)).toBe(true);
        expect(accepts(high, value + 1)).toBe(false);
      }),
      { numRuns: 150 },
    );
  });

  it('number bounds: exclusive ones keep the bound out and the values just inside', () => {
    fc.assert(
      fc.property(fc.integer({ min: -1000, max: 1000 }), fc.integer({ min: 1, max: 1000 }), (lo, width) => {
        const hi = lo + width;
        const exclusive = { type: 'number', exclusiveMinimum: lo, exclusiveMaximum: hi };
        const inclusive = { type: 'number', minimum: lo, maximum: hi };
        expect(grammarAccepts(rulesOf(exclusive), String(lo))).toBe(false);
        expect(grammarAccepts(rulesOf(exclusive), `${lo < 0 ? '-' + String(-lo - 1) : lo}.5`)).toBe(lo >= 0 || lo + 0.5 < hi);
        expect(grammarAccepts(rulesOf(exclusive), String(hi))).toBe(false);
        expect(grammarAccepts(rulesOf(inclusive), String(lo))).toBe(true);
        expect(grammarAccepts(rulesOf(inclusive), `${hi}.0`)).toBe(true);
        expect(grammarAccepts(rulesOf(inclusive), hi >= 0 ? `${hi}.01` : `-${-hi - 1}.99`)).toBe(false);
        expectSamplesValid(exclusive, 20);
      }),
      { numRuns: 60 },
    );
  });

  it('lengths: strings of exactly minLength and maxLength characters, none outside', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 400 }), fc.integer({ min: 0, max: 400 }), (min, extra) => {
        const schema = { type: 'string', minLength: min, maxLength: min + extra };
        expect(accepts(schema, 'é'.repeat(min))).toBe(true);
        expect(accepts(schema, 'x'.repeat(min + extra))).toBe(true);
        expect(accepts(schema, 'x'.repeat(min + extra + 1))).toBe(false);
        if (min > 0) expect(accepts(schema, 'x'.repeat(min - 1))).toBe(false);
      }),
      { numRuns: 60 },
    );
  });

  it('patterns: every string the regular expression matches is allowed, and every sample matches it', () => {
    const patterns = ['^[a-z]{1,8}(?:-[a-z0-9]{1,4}){0,3}$', '^\\d{3}-\\d{2}-\\d{4}$', '^(?:[A-Z][a-z]+ ?){1,3}$', '^#?[0-9a-fA-F]{6}$'];
    for (const pattern of patterns) {
      const schema = { type: 'string', pattern };
      fc.assert(
        fc.property(fc.stringMatching(new RegExp(pattern)), (text) => accepts(schema, text)),
        { numRuns: 100 },
      );
      expectSamplesValid(schema, 100);
    }
  });

  it('dates follow the calendar: leap days only in leap years, no 31st of a 30-day month', () => {
    const date = { type: 'string', format: 'date' };
    for (const good of ['2024-02-29', '2000-02-29', '1999-12-31', '2023-11-30', '0000-02-29']) expect(accepts(date, good)).toBe(true);
    for (const bad of ['2023-02-29', '1900-02-29', '0654-11-31', '2023-04-31', '2023-13-01', '2023-00-10']) expect(accepts(date, bad)).toBe(false);
    const dateTime = { type: 'string', format: 'date-time' };
    expect(accepts(dateTime, '0654-11-31T22:28:18.930-23:59')).toBe(false);
    expect(accepts(dateTime, '0654-11-30T22:28:18.930-23:59')).toBe(true);
  });

  it("formats also satisfy zod's own checks and WHATWG URL parsing", () => {
    const checks: Array<[string, z.ZodType]> = [
      ['uri', z.url()],
      ['email', z.email()],
      ['uuid', z.uuid()],
      ['date-time', z.iso.datetime({ offset: true })],
      ['date', z.iso.date()],
      ['ipv4', z.ipv4()],
      ['ipv6', z.ipv6()],
    ];
    for (const [format, check] of checks) {
      for (const value of expectSamplesValid({ type: 'string', format }, 100)) {
        expect({ format, value, ok: check.safeParse(value).success }).toEqual({ format, value, ok: true });
        if (format === 'uri') expect(() => new URL(value as string)).not.toThrow();
      }
    }
  });

  it('enum and const: each value, and nothing else', () => {
    const values = ['a', 'ab', 'abc', 'b', 'a"b', 3, null];
    const schema = { enum: values };
    for (const value of values) expect(accepts(schema, value)).toBe(true);
    for (const other of ['', 'abcd', 'c', 4, false]) expect(accepts(schema, other)).toBe(false);
  });

  it('records do not repeat a declared property under another schema', () => {
    const schema = { type: 'object', properties: { id: { type: 'integer' } }, required: ['id'], additionalProperties: { type: 'string' } };
    expect(grammarAccepts(rulesOf(schema), '{"id":1,"name":"x"}')).toBe(true);
    expect(grammarAccepts(rulesOf(schema), '{"id":1,"id":"x"}')).toBe(false);
  });
});
