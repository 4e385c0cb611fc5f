// Covers money reference data: ISO 4217 exponents, customer tier limits and collection fees.
// Runs under node:test on the main thread; pure data, no I/O beyond module load.
// Invariant checked: every figure is an integer in minor units and fee maths is exact.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { currencyExponent, isCurrencyCode } from '../../src/catalogue/currencies.ts';
import { TIER_DEFAULT, collectionFeeMinor, tierLimits, type TierName } from '../../src/catalogue/limits.ts';
import { fxCurrencies } from '../../src/catalogue/fx.ts';

const TIERS: TierName[] = ['tier_1', 'tier_2', 'tier_3'];
const CURRENCIES = ['NGN', 'GHS', 'KES', 'ZAR', 'UGX', 'USD', 'GBP', 'EUR', 'JPY', 'KWD'];

describe('currencies', () => {
  it('currencyExponent: JPY → 0, NGN → 2, KWD → 3, UGX → 0', () => {
    assert.equal(currencyExponent('JPY'), 0);
    assert.equal(currencyExponent('NGN'), 2);
    assert.equal(currencyExponent('KWD'), 3);
    assert.equal(currencyExponent('UGX'), 0);
  });

  it('currencyExponent: unknown ZZZ or lower-case ngn → undefined', () => {
    assert.equal(currencyExponent('ZZZ'), undefined);
    assert.equal(currencyExponent('ngn'), undefined);
  });

  it('currencyExponent: codes ISO gives no minor unit (XAU, XDR, XXX) → undefined', () => {
    for (const code of ['XAU', 'XDR', 'XXX']) assert.equal(currencyExponent(code), undefined, code);
  });

  it('isCurrencyCode: NGN, EUR, XAF → true; XXX, ZZZ, empty → false', () => {
    for (const code of ['NGN', 'EUR', 'XAF']) assert.equal(isCurrencyCode(code), true, code);
    for (const code of ['XXX', 'ZZZ', '', 'NG']) assert.equal(isCurrencyCode(code), false, code);
  });
});

describe('tierLimits', () => {
  it('TIER_DEFAULT: new customers → tier_1', () => {
    assert.equal(TIER_DEFAULT, 'tier_1');
  });

  it('tierLimits: tier_1 NGN → NGN 50,000.00 fits in one transaction', () => {
    const limits = tierLimits('tier_1', 'NGN');
    assert.ok(limits);
    assert.ok(limits.perTransactionMaxMinor >= 5_000_000);
    assert.deepEqual(limits, { perTransactionMaxMinor: 10_000_000, dailyMaxMinor: 50_000_000 });
  });

  it('tierLimits: every tier and currency → safe integers, per transaction ≤ daily', () => {
    for (const tier of TIERS) {
      for (const currency of CURRENCIES) {
        const limits = tierLimits(tier, currency);
        assert.ok(limits, `${tier} ${currency}`);
        assert.ok(Number.isSafeInteger(limits.perTransactionMaxMinor) && Number.isSafeInteger(limits.dailyMaxMinor));
        assert.ok(limits.perTransactionMaxMinor <= limits.dailyMaxMinor, `${tier} ${currency}`);
      }
    }
  });

  it('tierLimits: higher tier → never a lower limit', () => {
    for (const currency of CURRENCIES) {
      for (let i = 1; i < TIERS.length; i += 1) {
        const lower = tierLimits(TIERS[i - 1] as TierName, currency);
        const higher = tierLimits(TIERS[i] as TierName, currency);
        assert.ok(lower && higher);
        assert.ok(higher.perTransactionMaxMinor >= lower.perTransactionMaxMinor, currency);
        assert.ok(higher.dailyMaxMinor >= lower.dailyMaxMinor, currency);
      }
    }
  });

  it('tierLimits: currency without limits (CHF, ngn) → undefined', () => {
    assert.equal(tierLimits('tier_1', 'CHF'), undefined);
    assert.equal(tierLimits('tier_1', 'ngn'), undefined);
  });

  it('tierLimits: every currency an exchange can open a wallet in (the FX table, JPY and KWD among them) → limits in every tier', () => {
    assert.ok(fxCurrencies().includes('JPY') && fxCurrencies().includes('KWD'));
    for (const currency of fxCurrencies()) for (const tier of TIERS) assert.ok(tierLimits(tier, currency), `${tier} ${currency}`);
  });
});

describe('collectionFeeMinor', () => {
  it('collectionFeeMinor: card NGN 12,345.67 at 150 bps → 18518, fraction floored', () => {
    // 1_234_567 × 150 / 10_000 = 18_518.505
    assert.equal(collectionFeeMinor('card', 'NGN', 1_234_567), 18_518);
  });

  it('collectionFeeMinor: card NGN 200,000.00 → capped at NGN 2,000.00', () => {
    assert.equal(collectionFeeMinor('card', 'NGN', 20_000_000), 200_000);
  });

  it('collectionFeeMinor: card USD $10.00 → 2.9% + 30¢ = 59', () => {
    assert.equal(collectionFeeMinor('card', 'USD', 1_000), 59);
  });

  it('collectionFeeMinor: flat fee above a tiny amount → the amount, never more', () => {
    assert.equal(collectionFeeMinor('card', 'USD', 1), 1);
  });

  it('collectionFeeMinor: wallet → 0 in every currency', () => {
    for (const currency of CURRENCIES) assert.equal(collectionFeeMinor('wallet', currency, 1_000_000), 0, currency);
  });

  it('collectionFeeMinor: mobile_money KES 1,000.00 at 150 bps → 1500', () => {
    assert.equal(collectionFeeMinor('mobile_money', 'KES', 100_000), 1_500);
  });

  it('collectionFeeMinor: MAX_SAFE_INTEGER uncapped → exact integer, no float drift', () => {
    const amount = Number.MAX_SAFE_INTEGER;
    const fee = collectionFeeMinor('card', 'USD', amount);
    assert.equal(BigInt(fee), 30n + (BigInt(amount) * 290n) / 10_000n);
    assert.ok(Number.isSafeInteger(fee));
  });

  it('collectionFeeMinor: zero, negative, fractional or unsafe amount → RangeError', () => {
    for (const amount of [0, -100, 10.5, Number.NaN, Number.MAX_SAFE_INTEGER + 1]) {
      assert.throws(() => collectionFeeMinor('card', 'NGN', amount), RangeError, String(amount));
    }
  });

  it('collectionFeeMinor: method or currency without a configured fee → RangeError', () => {
    assert.throws(() => collectionFeeMinor('mobile_money', 'NGN', 10_000), RangeError);
    assert.throws(() => collectionFeeMinor('cheque', 'NGN', 10_000), RangeError);
    assert.throws(() => collectionFeeMinor('card', 'JPY', 10_000), RangeError);
  });
});
