// The one fee rule: flat_minor + floor(amount × percent_bps / 10 000), capped at cap_minor, and for a
// fee taken out of the amount (a collection) never more than the amount. Any thread; pure; bigint inside.
// Used by collections, payouts, service quotes and orders, and promotions (the percentage part).
// Invariant: a fee is a safe integer ≥ 0, never above its cap, and never decreases as the amount grows.
import assert from 'node:assert/strict';
import Type, { type Static } from 'typebox';
import { assertMinor, assertPositiveMinor, isMinor, MINOR_MAX, toMinor } from './minor.ts';

/** Basis points in a whole: 10 000 bps = 100 %. */
export const BPS_PER_WHOLE = 10_000;

const Minor = Type.Integer({ minimum: 0, maximum: MINOR_MAX });

/** A fee as the reference data writes it (fees.json, payout-fees.json, services/fees.json). */
export const FeeRuleSchema = Type.Object(
  {
    flat_minor: Minor,
    percent_bps: Type.Integer({ minimum: 0, maximum: BPS_PER_WHOLE }),
    cap_minor: Type.Union([Minor, Type.Null()]),
  },
  { additionalProperties: false },
);

export type FeeRule = Static<typeof FeeRuleSchema>;

/**
 * How the fee is charged. `from_amount`: taken out of the amount (a collection credits amount − fee),
 * so it is capped at the amount as well. `on_top`: added to the amount (payouts, service orders).
 */
export type FeeCharge = 'from_amount' | 'on_top';

/**
 * floor(amount × bps / 10 000), exact for every safe amount, rounded down so the fraction of a minor
 * unit stays with the payer. At most the amount, since bps ≤ 10 000. Throws RangeError on an amount that
 * is not a non-negative safe integer.
 */
export function bpsOfMinor(amountMinor: number, bps: number): number {
  assertMinor(amountMinor);
  assert(Number.isInteger(bps) && bps >= 0 && bps <= BPS_PER_WHOLE, `fee: basis points must be an integer in 0…${BPS_PER_WHOLE}, got ${bps}`);
  const product = amountMinor * bps;
  // A safe product is exact, and so are its remainder and the division of what is left (a multiple of
  // 10 000): no float rounding, and no bigint allocated on every payment. Larger products go through bigint.
  if (product <= Number.MAX_SAFE_INTEGER) return (product - (product % BPS_PER_WHOLE)) / BPS_PER_WHOLE;
  return Number((BigInt(amountMinor) * BigInt(bps)) / BigInt(BPS_PER_WHOLE));
}

/**
 * The fee on `amountMinor` under `rule`. Throws RangeError when the amount is not a positive safe
 * integer, or when an uncapped fee charged on top would pass Number.MAX_SAFE_INTEGER (a fee taken from
 * the amount never can): never a rounded float.
 */
export function feeMinor(rule: FeeRule, amountMinor: number, charge: FeeCharge): number {
  assertPositiveMinor(amountMinor);
  assert(isMinor(rule.flat_minor) && (rule.cap_minor === null || isMinor(rule.cap_minor)), 'fee: a rule is checked against FeeRuleSchema when its file loads');
  const share = bpsOfMinor(amountMinor, rule.percent_bps);
  const sum = rule.flat_minor + share;
  if (Number.isSafeInteger(sum)) {
    // Two safe integers whose float sum is safe add exactly (a true sum past 2^53 never lands below it).
    let fast = sum;
    if (rule.cap_minor !== null && fast > rule.cap_minor) fast = rule.cap_minor;
    if (charge === 'from_amount' && fast > amountMinor) fast = amountMinor;
    return fast;
  }
  let fee = BigInt(rule.flat_minor) + BigInt(share);
  if (rule.cap_minor !== null && fee > BigInt(rule.cap_minor)) fee = BigInt(rule.cap_minor);
  if (charge === 'from_amount' && fee > BigInt(amountMinor)) fee = BigInt(amountMinor);
  const minor = toMinor(fee);
  if (minor === null) throw new RangeError(`fee on ${amountMinor} exceeds the safe integer range`);
  return minor;
}
