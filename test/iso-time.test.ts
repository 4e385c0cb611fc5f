// isoTime: the same string as Date.prototype.toISOString for every millisecond, cached days or not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { isoTime } from '../src/iso-time.ts';

test('isoTime: any time (years 0–9999, this decade, and -1e15 to 9e15 ms, integers and not) → toISOString\'s string', () => {
  fc.assert(
    fc.property(fc.oneof(fc.integer({ min: 0, max: 253_402_300_799_999 }), fc.integer({ min: 1.7e12, max: 1.9e12 }), fc.integer({ min: -1e15, max: 9e15 }), fc.double({ min: -1e15, max: 9e15, noNaN: true }), fc.constantFrom(0, 253_402_300_799_999, 253_402_300_800_000, -1, 86_399_999, 86_400_000)), (ms) => {
      let expected: string;
      try {
        expected = new Date(ms).toISOString();
      } catch {
        assert.throws(() => isoTime(ms), RangeError, 'out of range for Date: the same RangeError');
        return;
      }
      assert.equal(isoTime(ms), expected);
    }),
    { seed: 27, numRuns: 20_000 },
  );
});

test('isoTime: every millisecond boundary of a day, with many days interleaved (the day cache refills) → toISOString\'s string', () => {
  const base = Date.UTC(2026, 10, 27);
  for (let i = 0; i < 200_000; i += 1) {
    const ms = base + (i % 97) * 86_400_000 + ((i * 7_919) % 86_400_000);
    assert.equal(isoTime(ms), new Date(ms).toISOString());
  }
  assert.equal(isoTime(Date.UTC(2028, 1, 29, 23, 59, 59, 999)), '2028-02-29T23:59:59.999Z');
});

test('isoTime: NaN → the RangeError toISOString throws', () => {
  assert.throws(() => isoTime(Number.NaN), RangeError);
});
