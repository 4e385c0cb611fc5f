// Owns ISO 4217 lookups: which currency codes exist and how many minor-unit digits each has.
// Any thread; pure data, built once at module load from the currency-codes package.
// Invariant: a code is known only if ISO publishes a numeric minor unit for it, so every amount
// in a known currency has exactly one meaning in minor units.
import currencyCodes from 'currency-codes';

// ISO publishes "N.A." as the minor unit of these (metals, bond-market units, SDR, test and
// no-currency codes); the package's ingest script turns "N.A." into 0, which would wrongly make
// them look like zero-decimal currencies.
const NO_MINOR_UNIT: ReadonlySet<string> = new Set([
  'XAG', 'XAU', 'XBA', 'XBB', 'XBC', 'XBD', 'XDR', 'XPD', 'XPT', 'XSU', 'XTS', 'XUA', 'XXX',
]);

const EXPONENTS: ReadonlyMap<string, number> = new Map(
  currencyCodes.data
    .filter((record) => !NO_MINOR_UNIT.has(record.code) && Number.isInteger(record.digits))
    .map((record) => [record.code, record.digits]),
);

/** ISO 4217 minor-unit digits (JPY 0, NGN 2, KWD 3); undefined for unknown or lower-case codes. */
export function currencyExponent(code: string): number | undefined {
  return EXPONENTS.get(code);
}

/** True for an upper-case ISO 4217 code that has a numeric minor unit. */
export function isCurrencyCode(code: string): boolean {
  return EXPONENTS.has(code);
}
