// Sandbox FX: mid rates from data/reference/fx.json, the spread, and conversion between named currencies
// (their ISO 4217 exponents looked up here; the arithmetic and rounding are src/money/convert.ts). Any thread.
// Rates are exact decimals held as bigint fractions; no float ever touches money.
// Invariant: convertMinor rounds down, so a conversion never yields more than the exact value.
import fxData from '../../data/reference/fx.json' with { type: 'json' };
import { convertMinorAt, parseRate, rateDeviationBps, scaleRateBps, type Exponents, type Rate } from '../money/convert.ts';
import { currencyExponent } from './currencies.ts';
import { TIER_ORDER, tierLimits } from './limits.ts';

const USD_RATES: ReadonlyMap<string, Rate> = new Map(Object.entries(fxData.rates).map(([code, text]) => [code, parseRate(text)]));
for (const code of USD_RATES.keys()) {
  if (currencyExponent(code) === undefined) throw new Error(`fx: ${code} in fx.json is not an ISO 4217 currency`);
  // An exchange can open a wallet in any of these currencies; without tier limits nothing could ever
  // move out of it again (every debit is checked against them), so the data must list them.
  for (const tier of TIER_ORDER) {
    if (tierLimits(tier, code) === undefined) throw new Error(`fx: ${code} in fx.json has no ${tier} limits in tiers.json`);
  }
}

/** Every currency kobo converts (and so can hold a wallet in). */
export function fxCurrencies(): readonly string[] {
  return [...USD_RATES.keys()];
}

export const SPREAD_BPS = BigInt(fxData.spread_bps);
export const QUOTE_TTL_MS = fxData.quote_ttl_seconds * 1000;

export function supportsPair(from: string, to: string): boolean {
  return from !== to && USD_RATES.has(from) && USD_RATES.has(to);
}

/** Units of `to` per unit of `from`, before spread. */
export function midRate(from: string, to: string): Rate {
  const f = USD_RATES.get(from);
  const t = USD_RATES.get(to);
  if (f === undefined || t === undefined) throw new Error(`fx: no rate for ${from}/${to}`);
  return { num: t.num * f.den, den: t.den * f.num };
}

/**
 * How far a mid rate for from → to (a live connector's) is from the reference mid, in basis points of
 * the reference, rounded up (src/money/convert.ts rateDeviationBps): `deviationBps(…) <= band` holds
 * exactly when |rate − reference| × 10 000 ≤ band × reference. The pair must have a reference rate.
 */
export function deviationBps(from: string, to: string, rate: Rate): bigint {
  return rateDeviationBps(rate, midRate(from, to));
}

/** The customer's rate: mid less the spread. */
export function customerRate(from: string, to: string): Rate {
  return customerRateAt(midRate(from, to));
}

/** The customer's rate at a given mid (the reference table's, or a live FX connector's). */
export function customerRateAt(mid: Rate): Rate {
  return scaleRateBps(mid, -SPREAD_BPS);
}

/**
 * Converts `amountMinor` of `from` into minor units of `to` at `rate`, rounding down (floor): the
 * fraction of a minor unit stays with the house, so no conversion creates money.
 */
export function convertMinor(amountMinor: number, from: string, to: string, rate: Rate): number {
  const result = convertMinorChecked(amountMinor, from, to, rate);
  if (result === null) throw new RangeError('fx: converted amount exceeds the safe integer range');
  return result;
}

/** convertMinor, or null when the converted amount would pass Number.MAX_SAFE_INTEGER (callers reject it). */
export function convertMinorChecked(amountMinor: number, from: string, to: string, rate: Rate): number | null {
  return convertMinorAt(amountMinor, exponentsOf(from, to), rate, 'down');
}

function exponentsOf(from: string, to: string): Exponents {
  const expFrom = currencyExponent(from);
  const expTo = currencyExponent(to);
  if (expFrom === undefined || expTo === undefined) throw new Error(`fx: unknown currency ${from} or ${to}`);
  return { from: expFrom, to: expTo };
}

/**
 * What a customer paying in `source` is charged for `amountMinor` of `destination`: at mid plus the
 * spread, rounded up (ceil), so the house never delivers value it was not paid for.
 */
export function costInSourceMinor(amountMinor: number, destination: string, source: string, mid?: Rate): { amountMinor: number; rate: Rate } {
  const cost = costInSourceMinorChecked(amountMinor, destination, source, mid);
  if (cost === null) throw new RangeError('fx: converted amount exceeds the safe integer range');
  return cost;
}

/** costInSourceMinor, or null when the cost would pass Number.MAX_SAFE_INTEGER (callers reject it). */
export function costInSourceMinorChecked(amountMinor: number, destination: string, source: string, /** units of source per destination; default: the reference table's */ mid: Rate = midRate(destination, source)): { amountMinor: number; rate: Rate } | null {
  const rate = scaleRateBps(mid, SPREAD_BPS);
  const amount = convertMinorAt(amountMinor, exponentsOf(destination, source), rate, 'up');
  return amount === null ? null : { amountMinor: amount, rate };
}
