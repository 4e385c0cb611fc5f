// A 48-bit hash of an idempotency scope: the front end's index is keyed by it instead of the scope
// string, so a million remembered keys cost a number each, not a string. Both threads use it.
// Invariant: a collision is harmless: the shard checks the full scope and the front end then runs
// the request where it belongs (see IdempotencyIndex.run).
import { hash } from 'node:crypto';

/** The first 48 bits of SHA-1 (one-shot `crypto.hash`: the same digest as a Hash object, ~1 µs less). */
export function scopeHash(scope: string): number {
  return hash('sha1', scope, 'buffer').readUIntBE(0, 6);
}
