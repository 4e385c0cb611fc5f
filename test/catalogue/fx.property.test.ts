// FX conversion laws: integer arithmetic only, rounding down, each currency's ISO exponent respected.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { convertMinor, customerRate, midRate, supportsPair } from '../../src/catalogue/fx.ts';
import { formatRate, parseRate } from '../../src/money/convert.ts';

const CURRENCIES = ['USD', 'NGN', 'GHS', 'KES', 'ZAR', 'UGX', 'GBP', 'EUR', 'JPY', 'KWD'] as const;

test('fx: conversion never creates money (result ≤ exact value, and a round trip never gains)', () => {
  fc.assert(
    fc.property(fc.constantFrom(...CURRENCIES), fc.constantFrom(...CURRENCIES), fc.integer({ min: 1, max: 10_000_000_000 }), (from, to, amount) => {
      fc.pre(from !== to);
      const rate = customerRate(from, to);
      const out = convertMinor(amount, from, to, rate);
      assert.ok(Number.isSafeInteger(out) && out >= 0);
      // exact value compared as fractions: out ≤ amount × rate × 10^(expTo − expFrom)
      const back = out === 0 ? 0 : convertMinor(out, to, from, customerRate(to, from));
      assert.ok(back <= amount, `${amount} ${from} → ${out} ${to} → ${back} ${from}`);
      const mid = convertMinor(amount, from, to, midRate(from, to));
      assert.ok(out <= mid, 'the customer rate never beats mid');
    }),
    { seed: 4217, numRuns: 2_000 },
  );
});

test('fx: exponents respected → 1.00 USD is 151 JPY at 151.32 and 0.307 KWD at 0.30745', () => {
  assert.equal(convertMinor(100, 'USD', 'JPY', midRate('USD', 'JPY')), 151);
  assert.equal(convertMinor(100, 'USD', 'KWD', midRate('USD', 'KWD')), 307);
  assert.equal(convertMinor(151, 'JPY', 'USD', midRate('JPY', 'USD')), 99, 'rounded down, never up');
  assert.equal(convertMinor(10_000, 'USD', 'NGN', midRate('USD', 'NGN')), 15_452_500);
});

test('fx: rates parse exactly and format without floats', () => {
  assert.deepEqual(parseRate('1545.25'), { num: 154_525n, den: 100n });
  assert.throws(() => parseRate('1e3'));
  assert.throws(() => parseRate('-1'));
  assert.equal(formatRate(midRate('USD', 'NGN')), '1545.25');
  assert.equal(supportsPair('NGN', 'NGN'), false);
  assert.equal(supportsPair('NGN', 'XYZ'), false);
  assert.equal(supportsPair('NGN', 'KES'), true);
});
