// The front end's index of idempotency keys: which partition holds each key's stored result, and
// which keys have a request in flight. Main thread; rebuilt from the shards at start-up. Keyed by a
// 48-bit hash of the scope (a number, not a string, per remembered key).
// Invariant: two requests with one key never both execute; the second waits and gets the first's result.
import { isStoredResult, type StoredReply } from '../schemas/reply.schema.ts';
import { scopeHash } from '../store/scope-hash.ts';
import { packIdemAt, unpackIdemAt } from '../store/tiers.ts';
import { HashIndex } from './hash-index.ts';
import assert from 'node:assert/strict';
import { ChurnMap } from './churn-map.ts';

export const IDEMPOTENCY_KEY_LENGTH_MAX = 255;

/**
 * What the front end reads for an Idempotency-Key header that was sent with an empty value. uWS gives ''
 * for both absent and empty; this value (never a valid key) lets the empty one be refused as such.
 */
export const IDEMPOTENCY_KEY_SENT_EMPTY = '\u0000';

/**
 * Why a header key cannot be used, or null. Keys are printable ASCII, as the IETF Idempotency-Key
 * field (a structured-field string) defines them: uWS hands header bytes over one char per byte and
 * drops bytes >= 0x80 at either end of a value, so `é-order-7` arrives as `-order-7`, and two different
 * non-ASCII keys could name one payment. Such bytes inside a key are refused here; at its ends they
 * cannot be seen, which the README says.
 */
export function idempotencyKeyProblem(key: string): string | null {
  if (key === IDEMPOTENCY_KEY_SENT_EMPTY) return 'Idempotency-Key was sent empty (or with nothing but non-ASCII bytes); send printable ASCII.';
  if (key.length > IDEMPOTENCY_KEY_LENGTH_MAX) return `Idempotency-Key must be at most ${IDEMPOTENCY_KEY_LENGTH_MAX} characters.`;
  if (!/^[\x20-\x7e]+$/.test(key)) return 'Idempotency-Key must be printable ASCII (0x20–0x7E).';
  return null;
}

/** The header's value, with an empty one that was sent told apart from none (see IDEMPOTENCY_KEY_SENT_EMPTY). */
export function idempotencyKeyHeader(req: { getHeader(name: string): string; forEach(cb: (key: string, value: string) => void): void }): string {
  const key = req.getHeader('idempotency-key');
  if (key !== '') return key;
  let sent = false;
  req.forEach((name) => {
    if (name === 'idempotency-key') sent = true;
  });
  return sent ? IDEMPOTENCY_KEY_SENT_EMPTY : '';
}

/**
 * True when a stored result shows a customer other than `customerId`: `data.customer_id`, or one level
 * down (an order's `{ order, payment }`). Idempotency keys are scoped to the account, so a key scoped to
 * one customer could otherwise replay, by reusing a key, a result the account made for another.
 */
export function storedForAnotherCustomer(json: string | undefined, customerId: string): boolean {
  if (json === undefined) return false;
  const data = (JSON.parse(json) as { data?: unknown }).data;
  if (typeof data !== 'object' || data === null) return false;
  const shown = [data, ...Object.values(data)].flatMap((o) => (typeof o === 'object' && o !== null && 'customer_id' in o ? [(o as { customer_id: unknown }).customer_id] : []));
  return shown.some((id) => typeof id === 'string' && id !== customerId);
}

/** What a customer-scoped key gets for a key whose stored result is another customer's. */
export const FOREIGN_REPLAY: StoredReply = Object.freeze({ status: 403, error: { code: 'FORBIDDEN', message: 'This Idempotency-Key holds a result of another customer; a customer-scoped key cannot replay it.' } });

export class IdempotencyIndex {
  /**
   * hash → where a record with that hash is stored, packed (packIdemAt: partition and row); several
   * in the rare case of a collision. A typed-array table: it holds every key of the retention period.
   */
  private readonly storedAt = new HashIndex();
  /** Keys with a request in flight, and who waits for each (null: nobody yet); one insert and delete a request. */
  private readonly inFlight = new ChurnMap<string, Array<() => void> | null>();

  restore(hash: number, packedAt: number): void {
    this.storedAt.add(hash, packedAt);
  }

  /** These records are gone (past retention): their keys are free again. */
  forget(pairs: ReadonlyArray<readonly [hash: number, packedAt: number]>): void {
    for (const [hash, packedAt] of pairs) this.storedAt.remove(hash, packedAt);
  }

  /** Remembered keys (locations). */
  get size(): number {
    return this.storedAt.size;
  }

  /**
   * Runs `execute` at `partition` unless the key already has a stored result, in which case the
   * partition that holds it replays the record at its row (or refuses a different payload with
   * IDEMPOTENCY_REPLAY). `execute(partition, seq)`: seq null runs the command as new. A request whose
   * key is in flight waits for it first. Written as one promise chain, not an async function: this runs
   * for every keyed POST, and the async form's frames and awaits were a visible share of what a POST
   * allocates (each of them alive until the batch's fsync).
   */
  run(
    scope: string,
    partition: number,
    execute: (partition: number, seq: number | null, hash: number) => Promise<StoredReply>,
  ): Promise<StoredReply> {
    if (this.inFlight.has(scope)) return this.afterInFlight(scope).then(() => this.run(scope, partition, execute));
    this.inFlight.set(scope, null);
    const hash = scopeHash(scope);
    const known = this.storedAt.get(hash);
    let result: Promise<StoredReply>;
    try {
      result = known.length === 0 ? execute(partition, null, hash).then((reply) => this.stored(hash, partition, reply)) : this.replayOrRun(known, hash, partition, execute);
    } catch (error) {
      this.release(scope);
      return Promise.reject(error);
    }
    // The index learns a new record before anyone waiting on the key is let go.
    return result.then(
      (reply) => {
        this.release(scope);
        return reply;
      },
      (error: unknown) => {
        this.release(scope);
        throw error;
      },
    );
  }

  /** Each record stored with this hash is asked in turn (a miss is another scope with the same hash); none: run as new. */
  private async replayOrRun(
    known: readonly number[],
    hash: number,
    partition: number,
    execute: (partition: number, seq: number | null, hash: number) => Promise<StoredReply>,
  ): Promise<StoredReply> {
    for (const packedAt of known) {
      const at = unpackIdemAt(packedAt);
      const replayed = await execute(at.partition, at.seq, hash);
      if (replayed.miss !== true) return replayed;
    }
    return this.stored(hash, partition, await execute(partition, null, hash));
  }

  /** A command run as new: where its result was stored goes into the index. */
  private stored(hash: number, partition: number, reply: StoredReply): StoredReply {
    if (isStoredResult(reply.status)) {
      assert(reply.seq !== undefined, 'idempotency: a stored result must say where it was stored');
      this.restore(hash, packIdemAt(partition, reply.seq));
    }
    return reply;
  }

  /** Resolves once the request in flight with this key has its answer. */
  private afterInFlight(scope: string): Promise<void> {
    return new Promise((resolve) => {
      let waiters = this.inFlight.get(scope);
      if (waiters === null || waiters === undefined) this.inFlight.set(scope, (waiters = []));
      waiters.push(resolve);
    });
  }

  private release(scope: string): void {
    const waiters = this.inFlight.get(scope);
    this.inFlight.delete(scope);
    if (waiters !== null && waiters !== undefined) for (const resolve of waiters) resolve();
  }
}
