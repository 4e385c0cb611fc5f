// When a shard writes the rows it derives from its log: list rows a chunk a turn into the list file's open
// transaction (list-file.ts), cold, idempotency and expiry rows a slice a turn once they pass their bound,
// everything on demand (images, stop, sweeps). Runs in the shard worker (or the main thread for an inline
// shard), beside its runtime.
// Invariant: a write is announced to the durable gate (the next fsync covers it) before any key it freed
// is handed back to the front end.
import type { ShardStore } from '../store/shard-store.ts';
import { DERIVED_PENDING_WEIGHT_MAX, DERIVED_SLICE_ROWS, ROWS_PENDING_MAX, type DerivedPart } from '../store/derived-rows.ts';

/**
 * List rows one turn adds to the list file's open transaction: small enough that a turn stays short
 * (~3.5 µs a row into three b-trees), large enough to keep up with a batch of 256 connections' payments.
 */
export const LIST_CHUNK_ROWS = 512;

export interface DerivedWrites {
  /** After a group commit: schedules slices if any part has passed its bound. */
  afterBatch(): void;
  /** Writes waiting rows of `part` now, at most `rowsMax` (all of them by default). */
  write(rowsMax?: number, part?: DerivedPart): void;
}

export function derivedWrites(options: {
  store: ShardStore;
  isClosed: () => boolean;
  /** A write committed: its rows become durable with the next fsync; `freed`: idempotency keys expiry freed. */
  wrote: (freed: Array<[number, number]>) => void;
}): DerivedWrites {
  const { store } = options;
  let scheduled = false;
  let listsScheduled = false;

  /** Which part of the waiting rows other than list rows is past `share` of its bound (null: none). */
  function overBound(share: number): DerivedPart | null {
    if (store.otherPending > ROWS_PENDING_MAX * share) return 'rows';
    return store.derivedWeight > DERIVED_PENDING_WEIGHT_MAX * share ? 'all' : null;
  }

  function write(rowsMax = Number.POSITIVE_INFINITY, part: DerivedPart = 'all'): void {
    const { freed, wrote } = store.writeDerived(rowsMax, part);
    if (wrote) options.wrote(freed);
  }

  /**
   * Writes waiting derived rows in turns of their own, a slice of one part each, until at most half of
   * every bound waits: request batches interleave (a single write of 20,000 rows held the shard ~100 ms;
   * p99 at 64 connections was 118 ms with slices of 2,000 rows, 70 ms with 500).
   */
  function schedule(): void {
    if (scheduled) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      if (options.isClosed()) return;
      const part = overBound(0.5);
      if (part === null) return;
      write(DERIVED_SLICE_ROWS, part);
      if (overBound(0.5) !== null) schedule();
    });
  }

  /**
   * List rows go into the list file's open transaction a chunk a turn, as they come, until none waits:
   * no turn writes a whole slice (a 2,000-row slice of list rows held the loop 8–26 ms, and was most of the
   * POST's p99), and the file commits every LIST_TX_ROWS_MAX rows.
   */
  function scheduleLists(): void {
    if (listsScheduled) return;
    listsScheduled = true;
    setImmediate(() => {
      listsScheduled = false;
      // While the list file's journal is checkpointed the rows wait: a transaction opened now would keep
      // the journal from restarting (the checkpoint's end schedules this again).
      if (options.isClosed() || store.listPending === 0 || store.listsCheckpointing) return;
      store.writeDerived(LIST_CHUNK_ROWS, 'lists');
      if (store.listPending > 0) scheduleLists();
    });
  }

  store.checkpointListsInWorker(() => {
    if (store.listPending > 0) scheduleLists();
  });

  return {
    afterBatch: () => {
      if (store.listPending > 0) scheduleLists();
      if (overBound(1) !== null) schedule();
    },
    write,
  };
}
