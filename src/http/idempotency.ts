// The front end's index of idempotency keys: which partition holds each key's stored result, and
// which keys have a request in flight. Main thread; rebuilt from the shards at start-up. Keyed by a
// 48-bit hash of the scope (a number, not a string, per remembered key).
// Invariant: two requests with one key never both execute; the second waits and gets the first's result.
import { isStoredResult, type StoredReply } from '../shard/state.ts';
import { scopeHash } from '../store/scope-hash.ts';

export const IDEMPOTENCY_KEY_LENGTH_MAX = 255;

export class IdempotencyIndex {
  /** hash → the partition holding a record with that hash (several, in the rare case of a collision). */
  private readonly partitionOf = new Map<number, number | number[]>();
  private readonly inFlight = new Map<string, Promise<void>>();

  restore(hash: number, partition: number): void {
    const known = this.partitionOf.get(hash);
    if (known === undefined) this.partitionOf.set(hash, partition);
    else if (typeof known === 'number') {
      if (known !== partition) this.partitionOf.set(hash, [known, partition]);
    } else if (!known.includes(partition)) known.push(partition);
  }

  /** A shard holds no record with this hash any more (past retention): such keys are free again there. */
  forget(pairs: ReadonlyArray<readonly [hash: number, partition: number]>): void {
    for (const [hash, partition] of pairs) {
      const known = this.partitionOf.get(hash);
      if (known === partition) this.partitionOf.delete(hash);
      else if (Array.isArray(known)) {
        const rest = known.filter((p) => p !== partition);
        if (rest.length === 1) this.partitionOf.set(hash, rest[0]!);
        else this.partitionOf.set(hash, rest);
      }
    }
  }

  get size(): number {
    return this.partitionOf.size;
  }

  /**
   * Runs `execute` at `partition` unless the key already has a stored result, in which case the
   * partition that holds it replays (or refuses a different payload with IDEMPOTENCY_REPLAY).
   */
  async run(
    scope: string,
    partition: number,
    execute: (partition: number, replay: boolean) => Promise<StoredReply>,
  ): Promise<StoredReply> {
    for (let waited = this.inFlight.get(scope); waited !== undefined; waited = this.inFlight.get(scope)) await waited;
    const hash = scopeHash(scope);
    const known = this.partitionOf.get(hash);
    let done!: () => void;
    this.inFlight.set(scope, new Promise<void>((resolve) => (done = resolve)));
    try {
      for (const candidate of known === undefined ? [] : typeof known === 'number' ? [known] : [...known]) {
        const replayed = await execute(candidate, true);
        // A miss is another scope with the same hash: this key has no result there.
        if (replayed.miss !== true) return replayed;
      }
      const reply = await execute(partition, false);
      if (isStoredResult(reply.status)) this.restore(hash, partition);
      return reply;
    } finally {
      this.inFlight.delete(scope);
      done();
    }
  }
}
