// Minor units: an amount is a whole number of its currency's smallest unit that a JavaScript number
// holds exactly (0 … 2^53 − 1). Any thread; pure. Money arithmetic that could pass 2^53 runs in bigint
// and comes back through toMinor, which refuses what a number cannot hold instead of rounding it.
// Invariant: no function here returns a float, a negative amount or one past Number.MAX_SAFE_INTEGER.

/** The largest amount kobo holds, in minor units of any currency. */
export const MINOR_MAX = Number.MAX_SAFE_INTEGER;

/** A non-negative safe integer: an amount that can be held as a number without loss. */
export function isMinor(value: number): boolean {
  return Number.isSafeInteger(value) && value >= 0;
}

/** Throws RangeError unless `amountMinor` is a positive safe integer (an amount a client may move). */
export function assertPositiveMinor(amountMinor: number, name = 'amountMinor'): void {
  if (!isMinor(amountMinor) || amountMinor === 0) throw new RangeError(`${name} must be a positive safe integer, got ${amountMinor}`);
}

/** Throws RangeError unless `amountMinor` is a non-negative safe integer. */
export function assertMinor(amountMinor: number, name = 'amountMinor'): void {
  if (!isMinor(amountMinor)) throw new RangeError(`${name} must be a non-negative safe integer, got ${amountMinor}`);
}

/** A bigint result as minor units, or null when it is negative or passes MINOR_MAX (callers refuse it). */
export function toMinor(value: bigint): number | null {
  return value < 0n || value > BigInt(MINOR_MAX) ? null : Number(value);
}
