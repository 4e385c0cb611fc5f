// Conversion of minor units between currencies: exact rational rates, each currency's ISO 4217 exponent,
// and one rounding rule per direction, written down. Any thread; pure; bigint only, no float.
// Invariant: 'down' never yields more than the exact value and 'up' never less; both differ from it by
// less than one minor unit, and a result that a number cannot hold is refused (null), never rounded.
import assert from 'node:assert/strict';
import { BPS_PER_WHOLE } from './fee.ts';
import { assertMinor, toMinor } from './minor.ts';

/** An exact positive rational: value = num / den. */
export interface Rate {
  num: bigint;
  den: bigint;
}

const RATE_PATTERN = /^(\d+)(?:\.(\d{1,12}))?$/;
const RATE_DIGITS = 10;

/** A plain decimal (up to 12 digits after the point) as an exact rate; throws on anything else or zero. */
export function parseRate(text: string): Rate {
  const match = RATE_PATTERN.exec(text);
  if (match === null) throw new Error(`fx: rate ${JSON.stringify(text)} is not a plain decimal`);
  const fraction = match[2] ?? '';
  const rate = { num: BigInt(match[1]! + fraction), den: 10n ** BigInt(fraction.length) };
  if (rate.num <= 0n) throw new Error(`fx: rate ${text} must be positive`);
  return rate;
}

/** A rate as a decimal string with RATE_DIGITS digits after the point (rounded down), for display. */
export function formatRate(rate: Rate): string {
  const scaled = (rate.num * 10n ** BigInt(RATE_DIGITS)) / rate.den;
  const text = scaled.toString().padStart(RATE_DIGITS + 1, '0');
  return `${text.slice(0, -RATE_DIGITS)}.${text.slice(-RATE_DIGITS)}`.replace(/\.?0+$/, '');
}

/** rate × (10 000 + bps) / 10 000, exactly: a spread of `bps` added (positive) or taken off (negative). */
export function scaleRateBps(rate: Rate, bps: bigint): Rate {
  return { num: rate.num * (BigInt(BPS_PER_WHOLE) + bps), den: rate.den * BigInt(BPS_PER_WHOLE) };
}

/**
 * How far `rate` is from `reference`, in basis points of the reference, rounded up: exact, so
 * `rateDeviationBps(rate, reference) <= band` holds exactly when |rate − reference| × 10 000 ≤
 * band × reference (a live FX rate checked against kobo's reference mid).
 */
export function rateDeviationBps(rate: Rate, reference: Rate): bigint {
  assert(rate.num > 0n && rate.den > 0n && reference.num > 0n && reference.den > 0n, 'fx: a rate is a positive fraction');
  // rate / reference = a / b (both over the common denominator rate.den × reference.den).
  const a = rate.num * reference.den;
  const b = reference.num * rate.den;
  const gap = a > b ? a - b : b - a;
  return (gap * BigInt(BPS_PER_WHOLE) + b - 1n) / b;
}

/**
 * How a converted amount is rounded to a whole minor unit. 'down' (floor): what a customer receives, so
 * a conversion never creates money. 'up' (ceil): what a customer is charged for value delivered in
 * another currency, so the house never delivers value it was not paid for.
 */
export type Rounding = 'down' | 'up';

/** ISO 4217 exponents of the two currencies (USD 2, JPY 0, KWD 3). */
export interface Exponents {
  from: number;
  to: number;
}

/**
 * amountMinor × rate × 10^(to − from), rounded as asked, or null when the result would pass
 * Number.MAX_SAFE_INTEGER. Throws RangeError on an amount that is not a non-negative safe integer.
 */
export function convertMinorAt(amountMinor: number, exponents: Exponents, rate: Rate, rounding: Rounding): number | null {
  assertMinor(amountMinor);
  assert(rate.num > 0n && rate.den > 0n, 'fx: a rate is a positive fraction');
  assert(Number.isInteger(exponents.from) && Number.isInteger(exponents.to) && exponents.from >= 0 && exponents.to >= 0, 'fx: exponents are ISO 4217 minor units');
  let num = BigInt(amountMinor) * rate.num;
  let den = rate.den;
  if (exponents.to >= exponents.from) num *= 10n ** BigInt(exponents.to - exponents.from);
  else den *= 10n ** BigInt(exponents.from - exponents.to);
  // Both are non-negative, so bigint division (which truncates) is floor, and (num + den − 1) / den is ceil.
  return toMinor(rounding === 'down' ? num / den : (num + den - 1n) / den);
}
