// The fingerprint of an idempotent request, stored with every kept result (the shard's idempotency
// records and their log records, the front end's table): a retry must carry the same one. Pure; any thread.
// Format: base64url of the first 16 bytes of SHA-256("METHOD path\n" + raw body), 22 characters. Builds
// before 2026-11-27 stored the whole digest as 64 hex characters; `sameRequest` still matches those.
import { hash } from 'node:crypto';

/** Characters of a fingerprint in the current format. */
export const FINGERPRINT_CHARS = 22;
/** Characters of a fingerprint stored by earlier builds (the whole SHA-256 in hex). */
const FINGERPRINT_HEX_CHARS = 64;

export function requestFingerprint(method: string, path: string, rawBody: Buffer): string {
  // 128 bits tell two requests under one key apart (a collision needs ~2^64 tries by the key's own
  // client); the stored bytes are paid in every idempotency row and log record.
  const digest = hash('sha256', Buffer.concat([Buffer.from(`${method} ${path}\n`), rawBody]), 'buffer');
  return digest.subarray(0, 16).toString('base64url');
}

/** Whether a stored fingerprint (either format) names the same request as a fresh one. */
export function sameRequest(stored: string, fresh: string): boolean {
  if (stored === fresh) return true;
  if (stored.length !== FINGERPRINT_HEX_CHARS || fresh.length !== FINGERPRINT_CHARS) return false;
  return stored.slice(0, 32) === Buffer.from(fresh, 'base64url').toString('hex');
}
