// Laws of conversion (src/money/convert.ts), seeded, over arbitrary exact rates and ISO exponents:
// 'down' ≤ exact ≤ 'up', less than one minor unit apart; a round trip at the inverse rate never gains
// and loses less than the rounding allows; charging 'up' always covers the value delivered; results past
// 2^53 are refused (null), never rounded; a spread only ever moves a rate against the customer; a rate's
// deviation from a reference, in bps rounded up, is within a band exactly when the exact gap is.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { convertMinorAt, formatRate, parseRate, rateDeviationBps, scaleRateBps, type Exponents, type Rate } from '../../src/money/convert.ts';
import { MINOR_MAX } from '../../src/money/minor.ts';

const RUNS = { seed: 4217, numRuns: 2_000 } as const;

const rate: fc.Arbitrary<Rate> = fc.record({ num: fc.bigInt({ min: 1n, max: 10n ** 12n }), den: fc.bigInt({ min: 1n, max: 10n ** 12n }) });
const exponents: fc.Arbitrary<Exponents> = fc.record({ from: fc.integer({ min: 0, max: 3 }), to: fc.integer({ min: 0, max: 3 }) });
const amount = fc.integer({ min: 0, max: 10 ** 12 });

/** The exact value amount × rate × 10^(to − from) as a fraction num / den. */
function exact(a: number, r: Rate, e: Exponents): { num: bigint; den: bigint } {
  const shift = 10n ** BigInt(Math.abs(e.to - e.from));
  return e.to >= e.from ? { num: BigInt(a) * r.num * shift, den: r.den } : { num: BigInt(a) * r.num, den: r.den * shift };
}

const inverse = (r: Rate): Rate => ({ num: r.den, den: r.num });
const swap = (e: Exponents): Exponents => ({ from: e.to, to: e.from });

describe('convertMinorAt', () => {
  it('convertMinorAt: down ≤ exact value ≤ up, and up − down is 0 when the value is whole, else 1', () => {
    fc.assert(fc.property(amount, rate, exponents, (a, r, e) => {
      const down = convertMinorAt(a, e, r, 'down');
      const up = convertMinorAt(a, e, r, 'up');
      fc.pre(down !== null && up !== null);
      const x = exact(a, r, e);
      assert.ok(BigInt(down) * x.den <= x.num && x.num <= BigInt(up) * x.den);
      assert.equal(up - down, x.num % x.den === 0n ? 0 : 1);
    }), RUNS);
  });

  it('convertMinorAt: a round trip rounded down at the inverse rate never gains, and loses less than one minor unit plus what one minor unit of the other currency is worth', () => {
    fc.assert(fc.property(amount, rate, exponents, (a, r, e) => {
      const there = convertMinorAt(a, e, r, 'down');
      fc.pre(there !== null);
      const back = convertMinorAt(there, swap(e), inverse(r), 'down')!;
      assert.ok(back <= a, `${a} → ${there} → ${back}`);
      // a − back < 1 + 1/R, where R = num / den is the effective rate (exponents included).
      const unit = exact(1, r, e);
      assert.ok(BigInt(a - back) * unit.num < unit.num + unit.den, `${a} → ${there} → ${back} loses too much`);
    }), RUNS);
  });

  it('convertMinorAt: an amount charged rounded up, converted back rounded down → at least the value delivered', () => {
    fc.assert(fc.property(amount, rate, exponents, (a, r, e) => {
      const charged = convertMinorAt(a, e, r, 'up');
      fc.pre(charged !== null);
      assert.ok(convertMinorAt(charged, swap(e), inverse(r), 'down')! >= a);
    }), RUNS);
  });

  it('convertMinorAt: monotone in the amount, 0 → 0, either rounding', () => {
    fc.assert(fc.property(amount, amount, rate, exponents, fc.constantFrom('down' as const, 'up' as const), (x, y, r, e, rounding) => {
      const [lo, hi] = x <= y ? [x, y] : [y, x];
      const high = convertMinorAt(hi, e, r, rounding);
      fc.pre(high !== null);
      assert.ok(convertMinorAt(lo, e, r, rounding)! <= high);
      assert.equal(convertMinorAt(0, e, r, rounding), 0);
    }), RUNS);
  });

  it('convertMinorAt: known values → exponents respected, floor and ceil as written', () => {
    const usdJpy = parseRate('151.32');
    assert.equal(convertMinorAt(100, { from: 2, to: 0 }, usdJpy, 'down'), 151, '$1.00 → ¥151.32 → ¥151');
    assert.equal(convertMinorAt(100, { from: 2, to: 0 }, usdJpy, 'up'), 152);
    assert.equal(convertMinorAt(1, { from: 2, to: 3 }, { num: 1n, den: 1n }, 'down'), 10, '0.01 → 0.010');
    assert.equal(convertMinorAt(15, { from: 3, to: 2 }, { num: 1n, den: 1n }, 'down'), 1, '0.015 → 0.01');
    assert.equal(convertMinorAt(15, { from: 3, to: 2 }, { num: 1n, den: 1n }, 'up'), 2, '0.015 → 0.02');
    assert.equal(convertMinorAt(10_000, { from: 2, to: 2 }, parseRate('1545.25'), 'down'), 15_452_500);
  });

  it('convertMinorAt: a result past 2^53 → null (callers refuse it), at the bound → held; a bad amount → RangeError', () => {
    const two: Rate = { num: 2n, den: 1n };
    assert.equal(convertMinorAt(MINOR_MAX, { from: 2, to: 2 }, two, 'down'), null);
    assert.equal(convertMinorAt(MINOR_MAX, { from: 2, to: 2 }, { num: 1n, den: 1n }, 'up'), MINOR_MAX);
    assert.equal(convertMinorAt(1, { from: 0, to: 3 }, { num: BigInt(MINOR_MAX), den: 1n }, 'down'), null);
    for (const bad of [-1, 1.5, Number.NaN, MINOR_MAX + 1]) assert.throws(() => convertMinorAt(bad, { from: 2, to: 2 }, two, 'down'), RangeError, String(bad));
  });
});

describe('rates', () => {
  it('scaleRateBps: a spread taken off ≤ the rate ≤ a spread added, and converting at them keeps that order', () => {
    fc.assert(fc.property(amount, rate, exponents, fc.bigInt({ min: 0n, max: 9_999n }), (a, r, e, bps) => {
      const less = scaleRateBps(r, -bps);
      const more = scaleRateBps(r, bps);
      assert.ok(less.num * r.den <= r.num * less.den && r.num * more.den <= more.num * r.den);
      const atMid = convertMinorAt(a, e, r, 'down');
      fc.pre(atMid !== null);
      assert.ok(convertMinorAt(a, e, less, 'down')! <= atMid);
    }), RUNS);
  });

  it('parseRate ∘ formatRate: a rate written with 10 digits after the point → at most the rate, less than 10⁻¹⁰ below it', () => {
    fc.assert(fc.property(rate, (r) => {
      fc.pre(r.num * 10n ** 10n >= r.den); // formatRate writes 0 for a rate below 10⁻¹⁰, which parseRate refuses
      const shown = parseRate(formatRate(r));
      const gap = { num: r.num * shown.den - shown.num * r.den, den: r.den * shown.den };
      assert.ok(gap.num >= 0n && gap.num * 10n ** 10n < gap.den);
    }), RUNS);
  });

  it('rateDeviationBps: deviation ≤ band exactly when |rate − reference| × 10 000 ≤ band × reference; 0 for the reference itself; a spread of n bps is n bps away', () => {
    fc.assert(fc.property(rate, rate, fc.bigInt({ min: 0n, max: 20_000n }), (r, ref, band) => {
      const d = rateDeviationBps(r, ref);
      const gap = r.num * ref.den - ref.num * r.den; // (r − ref) over r.den × ref.den
      const abs = gap < 0n ? -gap : gap;
      assert.equal(d <= band, abs * 10_000n <= band * ref.num * r.den, `${d} vs band ${band}`);
      assert.equal(rateDeviationBps(ref, ref), 0n);
    }), RUNS);
    fc.assert(fc.property(rate, fc.bigInt({ min: -9_999n, max: 9_999n }), (ref, bps) => {
      assert.equal(rateDeviationBps(scaleRateBps(ref, bps), ref), bps < 0n ? -bps : bps);
    }), RUNS);
  });

  it('parseRate: plain decimals only, positive, exact', () => {
    assert.deepEqual(parseRate('1545.25'), { num: 154_525n, den: 100n });
    assert.equal(formatRate(parseRate('1.50')), '1.5');
    for (const bad of ['1e3', '-1', '0', '0.000', '1.', '.5', '1.0000000000001', ' 1']) assert.throws(() => parseRate(bad), Error, bad);
  });
});
