// The front end's index of idempotency keys: which partition holds each key's stored result, and
// which keys have a request in flight. Main thread; rebuilt from the shards at start-up.
// Invariant: two requests with one key never both execute; the second waits and gets the first's result.
import { isStoredResult, type StoredReply } from '../shard/state.ts';

export const IDEMPOTENCY_KEY_LENGTH_MAX = 255;

export class IdempotencyIndex {
  private readonly partitionOf = new Map<string, number>();
  private readonly inFlight = new Map<string, Promise<void>>();

  restore(scope: string, partition: number): void {
    this.partitionOf.set(scope, partition);
  }

  /** The shard dropped this key's record (past retention): the key is free again. */
  forget(scope: string): void {
    if (!this.inFlight.has(scope)) this.partitionOf.delete(scope);
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
    const known = this.partitionOf.get(scope);
    if (known !== undefined) return execute(known, true);
    let done!: () => void;
    this.inFlight.set(scope, new Promise<void>((resolve) => (done = resolve)));
    try {
      const reply = await execute(partition, false);
      if (isStoredResult(reply.status)) this.partitionOf.set(scope, partition);
      return reply;
    } finally {
      this.inFlight.delete(scope);
      done();
    }
  }
}
