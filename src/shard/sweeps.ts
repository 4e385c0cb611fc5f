// The shard's periodic sweeps: idempotency records past retention, unused quotes past expiry, and
// sandbox collections nobody paid before their instructions expired. Runs in the shard runtime that
// starts them. Each sweep only enqueues commands; what it expires is decided (and logged) by them.
// Invariant: a sweep measures time on each owner's sandbox clock, as that owner's requests do.
import { EXPIRE_AGAIN_AFTER_MS, EXPIRE_CANDIDATES_MAX } from './handlers/payments.ts';
import type { DueEntry } from '../store/due-log.ts';
import type { ShardStore } from '../store/shard-store.ts';
import type { Command } from './protocol.ts';
import type { PartitionState } from './state.ts';

export interface SweepContext {
  /** The sweeps' cadences and the idempotency retention (the shard's worker data). */
  data: { idempotencyRetentionMs: number; idempotencySweepMs: number; quoteSweepMs: number; collectionSweepMs: number };
  partitions: readonly number[];
  states: ReadonlyMap<number, PartitionState>;
  clockOffsets: ReadonlyMap<string, number>;
  store: ShardStore;
  enqueue: (cmd: Command) => void;
  /** Writes the waiting derived rows (the collection sweep reads the expiry table). */
  writeDerived: () => void;
  isClosed: () => boolean;
}

/** Starts the sweeps on their intervals; returns the timers for the runtime to clear at stop. */
export function startSweeps(s: SweepContext): Array<ReturnType<typeof setInterval>> {
  const { data, partitions, states, clockOffsets, store, enqueue, writeDerived } = s;
  const timers: Array<ReturnType<typeof setInterval>> = [];
  /**
   * Idempotency records past retention are forgotten (an event, so replay forgets them too), measured on
   * each owner's sandbox clock; the front end is told, so the keys are free again.
   */
  function sweepIdempotency(): void {
    const nowMs = Date.now();
    const cutoffMs = Object.fromEntries([...clockOffsets].map(([owner, offset]) => [owner, nowMs + offset - data.idempotencyRetentionMs]));
    for (const partition of partitions) {
      enqueue({ k: 'idem.expire', cutoffMs, defaultCutoffMs: nowMs - data.idempotencyRetentionMs, owner: 'system:idempotency', nowMs, partition });
    }
  }
  timers.push(setInterval(sweepIdempotency, data.idempotencySweepMs).unref());

  /** Each owner's sandbox-clock now, for sweeps that must agree with what that owner's requests see. */
  function ownerNows(nowMs: number): Record<string, number> {
    return Object.fromEntries([...clockOffsets].map(([owner, offset]) => [owner, nowMs + offset]));
  }

  function sweepQuotes(): void {
    const nowMs = Date.now();
    const cutoffMs = ownerNows(nowMs);
    for (const partition of partitions) {
      const state = states.get(partition)!;
      if (state.quotes.size === 0 && state.serviceQuotes.size === 0) continue;
      enqueue({ k: 'quotes.expire', cutoffMs, defaultCutoffMs: nowMs, owner: 'system:quotes', nowMs, partition });
    }
  }
  timers.push(setInterval(sweepQuotes, data.quoteSweepMs).unref());

  /**
   * Sandbox collections nobody paid before their instructions expired fail (EXPIRED) and leave the heap.
   * One read of the file's `due` table (owner by owner, each at its sandbox-clock now) finds the rows due
   * in every partition; each partition's command gets its own and decides from the payments themselves.
   */
  function sweepCollections(): void {
    if (s.isClosed()) return;
    // The expiry rows of recent collections may still wait in memory: the sweep reads the table.
    writeDerived();
    const nowMs = Date.now();
    const cutoffMs = ownerNows(nowMs);
    const byPartition = new Map<number, DueEntry[]>();
    let found = 0;
    for (const owner of store.due.owners()) {
      for (const row of store.due.dueOf(owner, cutoffMs[owner] ?? nowMs, EXPIRE_CANDIDATES_MAX - found)) {
        let candidates = byPartition.get(row.partition);
        if (candidates === undefined) byPartition.set(row.partition, (candidates = []));
        candidates.push({ id: row.id, owner: row.owner, expiresAtMs: row.expiresAtMs });
        found += 1;
      }
      if (found >= EXPIRE_CANDIDATES_MAX) break;
    }
    for (const [partition, candidates] of byPartition) {
      if (!states.has(partition)) continue;
      enqueue({ k: 'payments.expire', cutoffMs, defaultCutoffMs: nowMs, owner: 'system:payments', nowMs, partition, candidates });
    }
    // A backlog drains in slices: look again soon (rows of collections expired meanwhile are dropped then).
    if (found >= EXPIRE_CANDIDATES_MAX && !s.isClosed()) setTimeout(sweepCollections, EXPIRE_AGAIN_AFTER_MS).unref();
  }
  timers.push(setInterval(sweepCollections, data.collectionSweepMs).unref());
  return timers;
}
