// Signing of connector traffic, both ways: HMAC-SHA256 over `timestamp.body` with the connector's
// secret, sent as `Kobo-Timestamp` (unix seconds) and `Kobo-Signature: v1=<hex>`. Any thread.
// Invariant: a message verifies only with the right secret, the exact body bytes and a fresh timestamp.
import { createHmac, timingSafeEqual } from 'node:crypto';

export const TIMESTAMP_HEADER = 'kobo-timestamp';
export const SIGNATURE_HEADER = 'kobo-signature';
/** A signed message older or newer than this (seconds) is refused: replays of old captures fail. */
export const SIGNATURE_TOLERANCE_SECONDS = 300;

export function signatureOf(secret: string, timestamp: string, body: string): string {
  return `v1=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

export function signedHeaders(secret: string, body: string, nowMs: number = Date.now()): Record<string, string> {
  const timestamp = String(Math.floor(nowMs / 1000));
  return { 'Kobo-Timestamp': timestamp, 'Kobo-Signature': signatureOf(secret, timestamp, body) };
}

/** Null when the signature is good and fresh, else why not (for the log; the caller answers 401). */
export function signatureProblem(secret: string, timestamp: string | undefined, signature: string | undefined, body: string, nowMs: number = Date.now()): string | null {
  if (timestamp === undefined || !/^\d{1,12}$/.test(timestamp)) return 'missing or malformed Kobo-Timestamp';
  if (signature === undefined || signature === '') return 'missing Kobo-Signature';
  if (Math.abs(nowMs / 1000 - Number(timestamp)) > SIGNATURE_TOLERANCE_SECONDS) return 'stale Kobo-Timestamp';
  const expected = Buffer.from(signatureOf(secret, timestamp, body));
  const given = Buffer.from(signature);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) return 'bad Kobo-Signature';
  return null;
}
