// The receiver's helper: verify a kobo webhook delivery's signature and freshness.
// Published for integrators (see README); no kobo imports, only node:crypto, so it can be copied as is.
// Invariant: accepts only a timestamp within 5 minutes of now and an HMAC that matches in constant time.
import { createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'x-service-signature';
export const TIMESTAMP_HEADER = 'x-service-timestamp';
export const TOLERANCE_SECONDS = 300;

export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

export type VerifyResult = { ok: true } | { ok: false; reason: 'missing_headers' | 'stale_timestamp' | 'bad_signature' };

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const record = headers as Record<string, string | string[] | undefined>;
  const value = record[name] ?? Object.entries(record).find(([k]) => k.toLowerCase() === name)?.[1];
  return Array.isArray(value) ? value[0] : value;
}

/** `sha256=<hex HMAC-SHA256 of "timestamp.body">`, keyed by the subscription's signing secret. */
export function signature(secret: string, timestamp: string, rawBody: string | Buffer): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.`).update(rawBody).digest('hex')}`;
}

export function verifyWebhook(secret: string, rawBody: string | Buffer, headers: WebhookHeaders, nowMs: number = Date.now()): VerifyResult {
  const sent = header(headers, SIGNATURE_HEADER);
  const timestamp = header(headers, TIMESTAMP_HEADER);
  if (sent === undefined || timestamp === undefined || !/^\d{1,12}$/.test(timestamp)) return { ok: false, reason: 'missing_headers' };
  if (Math.abs(nowMs / 1000 - Number(timestamp)) > TOLERANCE_SECONDS) return { ok: false, reason: 'stale_timestamp' };
  const expected = Buffer.from(signature(secret, timestamp, rawBody));
  const actual = Buffer.from(sent);
  if (actual.length !== expected.length || !timingSafeEqual(actual, expected)) return { ok: false, reason: 'bad_signature' };
  return { ok: true };
}
