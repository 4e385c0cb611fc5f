// The transaction PIN: its slow salted hash, and the step-up that transfers, service orders and a
// customer-scoped key's PIN change ask for. Reads the customer's PIN hash and recent wrong attempts from
// its shard, refuses while locked, verifies with scrypt off the event loop, and records a wrong PIN
// durably (a WAL event in the customer's partition). Main thread.
// Invariant: checks of one customer's PIN run one at a time, so parallel guesses cannot all pass the
// attempt limit before the first wrong one is recorded; a lock holds until its window has passed.
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import { reject } from '../errors.ts';
import type { Reply, RequestContext } from '../http/types.ts';
import { command, errorOf, type ApiDeps } from './deps.ts';

const scryptAsync = promisify(scrypt) as (pin: string, salt: Buffer, length: number, options: { N: number }) => Promise<Buffer>;
const PIN_SCRYPT_N = 16_384;

export async function hashPin(pin: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scryptAsync(pin, salt, 32, { N: PIN_SCRYPT_N });
  return `scrypt:${PIN_SCRYPT_N}:${salt.toString('base64')}:${hash.toString('base64')}`;
}

/** Constant-time check of a PIN against its stored `scrypt:N:salt:hash`. */
export async function verifyPin(pin: string, stored: string): Promise<boolean> {
  const [scheme, n, salt, hash] = stored.split(':');
  if (scheme !== 'scrypt' || n === undefined || salt === undefined || hash === undefined) return false;
  const expected = Buffer.from(hash, 'base64');
  const actual = await scryptAsync(pin, Buffer.from(salt, 'base64'), expected.length, { N: Number(n) });
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

export interface PinPolicy {
  /** Wrong PINs within `lockMs` that lock the customer's PIN (KOBO_PIN_ATTEMPTS_MAX). */
  attemptsMax: number;
  /** The window counted, and how long a lock lasts after the attempt that set it (KOBO_PIN_LOCK_MINUTES). */
  lockMs: number;
}

export const DEFAULT_PIN_POLICY: PinPolicy = { attemptsMax: 5, lockMs: 15 * 60_000 };

/** Checks queued per customer; an entry lives only while a check runs (bounded by requests in flight). */
const queues = new Map<string, Promise<unknown>>();

function serialised<T>(key: string, run: () => Promise<T>): Promise<T> {
  const previous = queues.get(key) ?? Promise.resolve();
  const next = previous.then(run, run);
  const tail = next.catch(() => undefined);
  queues.set(key, tail);
  void tail.then(() => {
    if (queues.get(key) === tail) queues.delete(key);
  });
  return next;
}

/** When the PIN is locked at `nowMs`, the time the lock ends; else null. */
export function pinLockedUntil(failuresAtMs: readonly number[], nowMs: number, policy: PinPolicy): number | null {
  const recent = failuresAtMs.filter((at) => at > nowMs - policy.lockMs);
  if (recent.length < policy.attemptsMax) return null;
  // Locked from the attemptsMax-th recent failure until lockMs after the latest one inside the window.
  const until = recent[recent.length - 1]! + policy.lockMs;
  return until > nowMs ? until : null;
}

/**
 * Null when the request may proceed: the customer has no PIN, or the right one was sent and the PIN
 * is not locked. Otherwise 403 PIN_REQUIRED (missing or wrong) or 403 PIN_LOCKED.
 */
export function pinCheck(deps: ApiDeps, ctx: RequestContext, customerId: string, partition: number): Promise<Reply | null> {
  return serialised(`${ctx.owner}:${customerId}`, async () => {
    const policy = deps.pinPolicy ?? DEFAULT_PIN_POLICY;
    const secret = await command(deps, ctx, partition, { k: 'customer.secret', id: customerId });
    if (secret.json === undefined) return secret;
    const data = (JSON.parse(secret.json) as { data: { pin_hash: string | null; pin_failures_at_ms?: number[] } }).data;
    if (data.pin_hash === null) return null;
    const lockedUntil = pinLockedUntil(data.pin_failures_at_ms ?? [], ctx.nowMs, policy);
    if (lockedUntil !== null) {
      const seconds = Math.max(1, Math.ceil((lockedUntil - ctx.nowMs) / 1000));
      return { ...errorOf(reject('PIN_LOCKED', `Too many wrong PINs: the PIN is locked for ${seconds} more seconds.`)), headers: { 'Retry-After': String(seconds) } };
    }
    if (ctx.transactionAuthorization === null) {
      return errorOf(reject('PIN_REQUIRED', 'This customer requires a transaction PIN: resend with X-Transaction-Authorization.'));
    }
    if (await verifyPin(ctx.transactionAuthorization, data.pin_hash)) return null;
    const recorded = await command(deps, ctx, partition, { k: 'customer.pin_failed', id: customerId });
    if (recorded.status >= 500) return recorded;
    const remaining = policy.attemptsMax - (data.pin_failures_at_ms ?? []).filter((at) => at > ctx.nowMs - policy.lockMs).length - 1;
    return errorOf(reject('PIN_REQUIRED', remaining > 0 ? `The transaction PIN is not correct (${remaining} ${remaining === 1 ? 'attempt' : 'attempts'} left before it locks).` : 'The transaction PIN is not correct; it is now locked.'));
  });
}
