// Live FX mid rates for exchange quotes and cross-currency service quotes: asked of the operator's FX
// connector by the front end, then checked before any quote is priced with them. Main thread.
// Invariant: a rate reaches a shard only as a plain positive decimal within its pair's band around
// kobo's reference rate; anything else is the connector's fault, refused as 422 FX_QUOTE_UNAVAILABLE
// (or 502 when it did not answer), logged at warn and counted, never blamed on the client's amount.
import { randomUUID } from 'node:crypto';
import { deviationBps, supportsPair } from '../catalogue/fx.ts';
import { parseRate } from '../money/convert.ts';
import { reject } from '../errors.ts';
import type { Reply } from '../http/types.ts';
import { lookUp, railFor } from '../rails/rails.ts';
import { errorOf } from './deps.ts';

/** A mid rate is a plain positive decimal of at most 12 fraction digits (as in the reference table). */
const MID_RATE_PATTERN = /^(?!0+(?:\.0+)?$)\d{1,15}(?:\.\d{1,12})?$/;

/** A live rate kobo refused: why, and what it was checked against (for the log and /metrics). */
export interface FxRefusal {
  connector: string;
  /** `FROM/TO` */
  pair: string;
  reason: 'outside_band' | 'unusable';
  /** What the connector answered, cut to 64 characters. */
  rate: string;
  /** Deviation from the reference mid in basis points (outside_band only). */
  deviationBps?: string;
  bandBps: number;
}

/** How live rates are checked (KOBO_FX_BAND_BPS, KOBO_FX_PAIR_BANDS_BPS) and where refusals are reported. */
export interface FxTrust {
  bandBps: number;
  pairBandsBps: ReadonlyArray<{ pair: string; bps: number }>;
  refused: (refusal: FxRefusal) => void;
}

/** The band of a pair: its own (either direction), else the default. */
export function bandBpsOf(trust: Pick<FxTrust, 'bandBps' | 'pairBandsBps'>, from: string, to: string): number {
  return trust.pairBandsBps.find((b) => b.pair === `${from}/${to}` || b.pair === `${to}/${from}`)?.bps ?? trust.bandBps;
}

const unavailable = (message: string): Reply => errorOf(reject('FX_QUOTE_UNAVAILABLE', message));
const unsupported = (from: string, to: string): Reply => errorOf(reject('VALIDATION', `Unsupported pair: no live FX source is configured for ${from} → ${to}.`));

/**
 * The mid rate of the FX connector covering both currencies (rails.ts), once checked: no connector, no
 * reference rate to check it against, a refusal, a rate that is not a plain positive decimal or one
 * outside the pair's band → 422 FX_QUOTE_UNAVAILABLE, except that no connector for the pair, or no
 * reference rate for it, is an unsupported pair: 400 VALIDATION; no answer → 502 PROVIDER_FAILURE (retry with the
 * same Idempotency-Key).
 */
export async function liveMidRate(trust: FxTrust, owner: string, from: string, to: string, nowMs: number): Promise<string | Reply> {
  const connector = railFor(owner, 'fx', { currency: from }, { currency: to });
  // No source at all is an unsupported pair for the contract (400 VALIDATION); a source that fails us is 422.
  if (connector === null) return unsupported(from, to);
  // A rate kobo cannot check is a rate it cannot trust: the connector is not asked.
  if (!supportsPair(from, to)) return errorOf(reject('VALIDATION', `Unsupported pair: kobo has no reference rate for ${from} → ${to} to check a live rate against.`));
  const answer = await lookUp(owner, 'fx', [{ currency: from }, { currency: to }], `fx-${randomUUID()}`, { from_currency: from, to_currency: to }, nowMs);
  if (answer === null) return unsupported(from, to);
  if (answer.outcome === 'failed' || answer.outcome === 'terminal' || answer.outcome === 'not_found') {
    return unavailable(`The FX connector does not quote ${from} → ${to}.`);
  }
  if (answer.outcome !== 'settled') return errorOf(reject('PROVIDER_FAILURE', 'The FX rail did not answer; retry with the same Idempotency-Key.'));
  const bandBps = bandBpsOf(trust, from, to);
  const rate = answer.detail?.mid_rate;
  const pair = `${from}/${to}`;
  if (typeof rate !== 'string' || !MID_RATE_PATTERN.test(rate)) {
    trust.refused({ connector, pair, reason: 'unusable', rate: String(rate).slice(0, 64), bandBps });
    return unavailable(`The FX connector answered no usable rate for ${from} → ${to}.`);
  }
  const deviation = deviationBps(from, to, parseRate(rate));
  if (deviation > BigInt(bandBps)) {
    trust.refused({ connector, pair, reason: 'outside_band', rate, deviationBps: String(deviation), bandBps });
    return unavailable(`The FX connector's ${from} → ${to} rate is ${deviation} bps from kobo's reference rate, outside the ±${bandBps} bps band; no quote can be given now.`);
  }
  return rate;
}
