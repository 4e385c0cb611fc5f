// A 48-bit hash of an idempotency scope: the front end's index is keyed by it instead of the scope
// string, so a million remembered keys cost a number each, not a string. Both threads use it.
// Invariant: a collision is harmless: the shard checks the full scope and the front end then runs
// the request where it belongs (see IdempotencyIndex.run).
import { createHash } from 'node:crypto';

export function scopeHash(scope: string): number {
  return createHash('sha1').update(scope).digest().readUIntBE(0, 6);
}
