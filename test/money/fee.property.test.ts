// Laws of the one fee rule (src/money/fee.ts), seeded: the fee is flat + floor(amount × bps / 10 000)
// computed exactly, capped, never negative, never above the amount when taken from it, monotone in the
// amount; bad amounts and fees past 2^53 are refused, never rounded. The catalogue's collection, payout
// and service fees are checked to be this rule over their own reference data.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import Value from 'typebox/value';
import collectionFees from '../../data/reference/fees.json' with { type: 'json' };
import payoutFees from '../../data/reference/payout-fees.json' with { type: 'json' };
import { BPS_PER_WHOLE, bpsOfMinor, feeMinor, FeeRuleSchema, type FeeCharge, type FeeRule } from '../../src/money/fee.ts';
import { MINOR_MAX } from '../../src/money/minor.ts';
import { collectionFeeMinor } from '../../src/catalogue/limits.ts';
import { payoutFeeMinor, type BeneficiaryType } from '../../src/catalogue/payouts.ts';
import { acceptedPaymentMethods, serviceFeeMinor, serviceFeeRule, SERVICE_CODES, type ServiceCode } from '../../src/catalogue/services.ts';
import { listCountries } from '../../src/catalogue/countries.ts';

const RUNS = { seed: 2203, numRuns: 2_000 } as const;

/** Amounts from one minor unit to 2^53 − 1, with the small and the huge both well represented. */
const amount = fc.oneof(fc.integer({ min: 1, max: 1_000_000 }), fc.integer({ min: 1, max: MINOR_MAX }), fc.constant(MINOR_MAX));
const rule: fc.Arbitrary<FeeRule> = fc.record({
  flat_minor: fc.oneof(fc.integer({ min: 0, max: 100_000 }), fc.integer({ min: 0, max: MINOR_MAX })),
  percent_bps: fc.integer({ min: 0, max: BPS_PER_WHOLE }),
  cap_minor: fc.option(fc.oneof(fc.integer({ min: 0, max: 1_000_000 }), fc.integer({ min: 0, max: MINOR_MAX }))),
});
const charge = fc.constantFrom<FeeCharge>('from_amount', 'on_top');

/** The rule written out in bigint, the way docs/decisions.md states it. */
function expected(r: FeeRule, amountMinor: number, how: FeeCharge): bigint {
  let fee = BigInt(r.flat_minor) + (BigInt(amountMinor) * BigInt(r.percent_bps)) / 10_000n;
  if (r.cap_minor !== null && fee > BigInt(r.cap_minor)) fee = BigInt(r.cap_minor);
  if (how === 'from_amount' && fee > BigInt(amountMinor)) fee = BigInt(amountMinor);
  return fee;
}

describe('feeMinor', () => {
  it('feeMinor: any rule and amount → exactly min(flat + floor(amount × bps / 10 000), cap[, amount]), a safe integer ≥ 0; past 2^53 → RangeError', () => {
    fc.assert(fc.property(rule, amount, charge, (r, a, how) => {
      const want = expected(r, a, how);
      if (want > BigInt(MINOR_MAX)) {
        assert.throws(() => feeMinor(r, a, how), RangeError);
        return;
      }
      const fee = feeMinor(r, a, how);
      assert.ok(Number.isSafeInteger(fee) && fee >= 0);
      assert.equal(BigInt(fee), want);
    }), RUNS);
  });

  it('feeMinor: never above the cap; taken from the amount → never above the amount (and never refused)', () => {
    fc.assert(fc.property(rule, amount, (r, a) => {
      const fee = feeMinor(r, a, 'from_amount');
      assert.ok(fee <= a);
      if (r.cap_minor !== null) assert.ok(fee <= r.cap_minor);
    }), RUNS);
  });

  it('feeMinor: a larger amount → a fee at least as large (monotone), either way it is charged', () => {
    fc.assert(fc.property(rule, amount, amount, charge, (r, x, y, how) => {
      const [lo, hi] = x <= y ? [x, y] : [y, x];
      fc.pre(expected(r, hi, how) <= BigInt(MINOR_MAX));
      assert.ok(feeMinor(r, lo, how) <= feeMinor(r, hi, how), `${lo} → ${feeMinor(r, lo, how)}, ${hi} → ${feeMinor(r, hi, how)}`);
    }), RUNS);
  });

  it('feeMinor: known values → flat + bps rounded down, capped, exact where a float is not', () => {
    assert.equal(feeMinor({ flat_minor: 30, percent_bps: 290, cap_minor: null }, 1_000, 'from_amount'), 59, '$10.00 at 2.9% + 30¢');
    assert.equal(feeMinor({ flat_minor: 0, percent_bps: 150, cap_minor: 200_000 }, 1_234_567, 'from_amount'), 18_518, '18,518.505 → 18,518');
    assert.equal(feeMinor({ flat_minor: 0, percent_bps: 150, cap_minor: 200_000 }, 20_000_000, 'from_amount'), 200_000, 'capped');
    assert.equal(feeMinor({ flat_minor: 10_000, percent_bps: 150, cap_minor: 200_000 }, 1_000_033, 'on_top'), 25_000, '15,000.495 → 15,000');
    assert.equal(feeMinor({ flat_minor: 20, percent_bps: 150, cap_minor: null }, 1, 'from_amount'), 1, 'a collection of 1 pays 1, not 20');
    assert.equal(feeMinor({ flat_minor: 20, percent_bps: 150, cap_minor: null }, 1, 'on_top'), 20, 'a fee on top is the flat fee');
    assert.equal(feeMinor({ flat_minor: 0, percent_bps: 0, cap_minor: null }, MINOR_MAX, 'on_top'), 0);
    // 9,007,199,254,740,991 × 7,777 / 10,000 is …068.4; the same sum in floats lands on …069.
    assert.equal(Math.floor((MINOR_MAX * 7_777) / 10_000), 7_004_898_860_412_069);
    assert.equal(feeMinor({ flat_minor: 0, percent_bps: 7_777, cap_minor: null }, MINOR_MAX, 'on_top'), 7_004_898_860_412_068);
  });

  it('feeMinor: amount zero, negative, fractional, NaN, infinite or past 2^53 → RangeError', () => {
    const r: FeeRule = { flat_minor: 10, percent_bps: 100, cap_minor: null };
    for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, MINOR_MAX + 1, 2 ** 60]) {
      assert.throws(() => feeMinor(r, bad, 'on_top'), RangeError, String(bad));
      assert.throws(() => feeMinor(r, bad, 'from_amount'), RangeError, String(bad));
    }
  });

  it('feeMinor: an uncapped fee on top past 2^53 → RangeError; the same fee taken from the amount → the amount', () => {
    const r: FeeRule = { flat_minor: 1, percent_bps: BPS_PER_WHOLE, cap_minor: null };
    assert.throws(() => feeMinor(r, MINOR_MAX, 'on_top'), RangeError);
    assert.equal(feeMinor(r, MINOR_MAX, 'from_amount'), MINOR_MAX);
    assert.equal(feeMinor({ flat_minor: MINOR_MAX, percent_bps: 0, cap_minor: null }, 1, 'on_top'), MINOR_MAX, 'at the bound: held');
  });
});

describe('bpsOfMinor', () => {
  it('bpsOfMinor: 0 bps → 0, 10 000 bps → the amount, anything between → at most the amount', () => {
    fc.assert(fc.property(amount, fc.integer({ min: 0, max: BPS_PER_WHOLE }), (a, bps) => {
      const part = bpsOfMinor(a, bps);
      assert.ok(Number.isSafeInteger(part) && part >= 0 && part <= a);
      assert.equal(bpsOfMinor(a, 0), 0);
      assert.equal(bpsOfMinor(a, BPS_PER_WHOLE), a);
    }), RUNS);
  });

  it('bpsOfMinor: splitting an amount in two never raises the percentage, and loses at most one minor unit', () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: MINOR_MAX }), fc.integer({ min: 0, max: MINOR_MAX }), fc.integer({ min: 0, max: BPS_PER_WHOLE }), (x, y, bps) => {
      fc.pre(x + y <= MINOR_MAX);
      const whole = bpsOfMinor(x + y, bps);
      const split = bpsOfMinor(x, bps) + bpsOfMinor(y, bps);
      assert.ok(split <= whole && whole <= split + 1, `${x} + ${y} at ${bps}: ${split} vs ${whole}`);
    }), RUNS);
  });

  it('bpsOfMinor: bps outside 0…10 000 → assertion (a rule that passed its schema cannot have it); bad amount → RangeError', () => {
    assert.throws(() => bpsOfMinor(100, 10_001), assert.AssertionError);
    assert.throws(() => bpsOfMinor(100, -1), assert.AssertionError);
    assert.throws(() => bpsOfMinor(-1, 100), RangeError);
    assert.equal(bpsOfMinor(0, 100), 0);
  });
});

describe('FeeRuleSchema', () => {
  it('FeeRuleSchema: integer flat and cap in 0…2^53 − 1 (cap may be null), bps in 0…10 000 → valid; anything else → invalid', () => {
    assert.ok(Value.Check(FeeRuleSchema, { flat_minor: 0, percent_bps: 0, cap_minor: null }));
    assert.ok(Value.Check(FeeRuleSchema, { flat_minor: MINOR_MAX, percent_bps: BPS_PER_WHOLE, cap_minor: MINOR_MAX }));
    for (const bad of [
      { flat_minor: -1, percent_bps: 0, cap_minor: null },
      { flat_minor: 0, percent_bps: 10_001, cap_minor: null },
      { flat_minor: 0, percent_bps: 1.5, cap_minor: null },
      { flat_minor: 0, percent_bps: 0, cap_minor: -1 },
      { flat_minor: MINOR_MAX + 1, percent_bps: 0, cap_minor: null },
      { flat_minor: 0, percent_bps: 0 },
      { flat_minor: 0, percent_bps: 0, cap_minor: null, min_minor: 1 },
    ]) assert.equal(Value.Check(FeeRuleSchema, bad), false, JSON.stringify(bad));
  });
});

describe('one rule everywhere', () => {
  it('collectionFeeMinor: every configured method and currency → feeMinor taken from the amount', () => {
    const entries = Object.entries(collectionFees as Record<string, Record<string, FeeRule>>).flatMap(([method, byCurrency]) => Object.entries(byCurrency).map(([currency, r]) => ({ method, currency, r })));
    fc.assert(fc.property(fc.constantFrom(...entries), amount, ({ method, currency, r }, a) => {
      assert.equal(collectionFeeMinor(method, currency, a), feeMinor(r, a, 'from_amount'));
    }), RUNS);
  });

  it('payoutFeeMinor: every configured beneficiary type and currency → feeMinor on top; wallet → 0', () => {
    const entries = Object.entries(payoutFees).flatMap(([type, table]) => (typeof table === 'string' ? [] : Object.entries(table as Record<string, FeeRule>).map(([currency, r]) => ({ type: type as BeneficiaryType, currency, r }))));
    assert.ok(entries.length > 0);
    fc.assert(fc.property(fc.constantFrom(...entries), amount, ({ type, currency, r }, a) => {
      assert.equal(payoutFeeMinor(type, currency, a), feeMinor(r, a, 'on_top'));
      assert.equal(payoutFeeMinor('wallet', currency, a), 0);
    }), RUNS);
  });

  it('serviceFeeMinor: every country, service and accepted method → feeMinor on top of provider_cost_minor', () => {
    const entries = listCountries().flatMap((c) => (SERVICE_CODES as readonly ServiceCode[]).flatMap((code) => acceptedPaymentMethods(c.code, code).map((method) => ({ country: c.code, code, method }))));
    assert.ok(entries.length > 0);
    fc.assert(fc.property(fc.constantFrom(...entries), fc.integer({ min: 1, max: 10 ** 12 }), ({ country, code, method }, a) => {
      assert.equal(serviceFeeMinor(country, code, method, a), feeMinor(serviceFeeRule(country, code, method)!, a, 'on_top'));
    }), RUNS);
  });
});
