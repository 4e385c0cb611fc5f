// When a shard writes the rows it derives from its log into the derived file (derived-file.ts): a chunk a
// turn into the file's open transaction as they come (cold, idempotency and expiry rows once their record
// is durable in the log), a slice a turn when too much waits, everything up to an LSN on demand (images,
// stop, the front's index). Runs in the shard worker (or the main thread for an inline shard), beside its runtime.
// Invariant: idempotency keys expiry freed go back to the front only after the derived file's commit and
// fsync that made their deletion durable; no deleting row is written for a record the log may still lose.
import type { ShardStore } from '../store/shard-store.ts';
import { DERIVED_PENDING_WEIGHT_MAX, DERIVED_SLICE_ROWS } from '../store/derived-rows.ts';

/**
 * Rows one turn adds to the derived file's open transaction: small enough that a turn stays short
 * (~3.5 µs a list row into three b-trees, less for the others), large enough to keep up with a batch of
 * 256 connections' payments.
 */
export const DERIVED_CHUNK_ROWS = 512;

export interface DerivedWrites {
  /** After a group commit: schedules the next chunk. */
  afterBatch(): void;
  /** The log is durable up to `lsn`: rows of its records may now go into the derived file. */
  logDurable(lsn: number): void;
  /**
   * Writes waiting rows now, at most `rowsMax` (all of them by default), no cold, idempotency or expiry row
   * of a record past `lsnMax` or the log's durable end; returns how many.
   */
  write(rowsMax?: number, lsnMax?: number): number;
  /** Commits and fsyncs the derived file; resolves once that is done and the keys it freed are handed on. */
  durable(): Promise<void>;
}

export function derivedWrites(options: {
  store: ShardStore;
  isClosed: () => boolean;
  /** Rows went into the derived file's open transaction (crash tests stop here). */
  wrote: () => void;
  /** Idempotency keys whose deletion is durable in the derived file: the front may hand them out again. */
  freed: (pairs: Array<[number, number]>) => void;
}): DerivedWrites {
  const { store } = options;
  let scheduled = false;
  /** Every log record up to here is durable (replayed records at start are in the file already). */
  let durableLsn = store.lsnNext - 1;
  /** A fsync for freed keys runs: keys freed meanwhile go with the next one. */
  let releasing = false;

  function write(rowsMax = Number.POSITIVE_INFINITY, lsnMax = Number.POSITIVE_INFINITY): number {
    const written = store.writeDerived(rowsMax, 'all', Math.min(lsnMax, durableLsn));
    if (written > 0) options.wrote();
    if (store.derived.freedWaiting > 0) releaseFreed();
    return written;
  }

  function durable(): Promise<void> {
    return new Promise((resolve, reject) => store.derivedDurable((error, freed) => {
      if (error !== null) {
        reject(error);
        return;
      }
      if (freed.length > 0) options.freed(freed);
      resolve();
    }));
  }

  /**
   * Expiry freed keys: the file commits and fsyncs now rather than at its row bound (expiry runs on the
   * sweep's period, so this costs a commit a period), and the keys go out once it has.
   */
  function releaseFreed(): void {
    if (releasing) return;
    releasing = true;
    durable().then(() => {
      releasing = false;
      if (store.derived.freedWaiting > 0 && !options.isClosed()) releaseFreed();
    }, (error: unknown) => {
      // A failed fsync leaves the file's state unknown: stop, as after a failed log fsync.
      throw error;
    });
  }

  /**
   * One chunk a turn until nothing written can wait no longer: request batches interleave (a 2,000-row slice
   * held the loop 5–26 ms). While the file's journal is checkpointed rows wait (a transaction opened now
   * would keep the journal from restarting; the checkpoint's end schedules this again), unless half the
   * weight bound waits: then a slice goes in regardless.
   */
  function schedule(): void {
    if (scheduled) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      if (options.isClosed() || store.derivedPending === 0) return;
      const heavy = store.derivedWeight > DERIVED_PENDING_WEIGHT_MAX / 2;
      if (store.derived.checkpointing && !heavy) return;
      if (write(heavy ? DERIVED_SLICE_ROWS : DERIVED_CHUNK_ROWS) > 0) schedule();
    });
  }

  store.derived.checkpointInWorker(() => {
    if (store.derivedPending > 0) schedule();
  });

  return {
    afterBatch: () => {
      if (store.derivedPending > 0) schedule();
    },
    logDurable: (lsn) => {
      if (lsn <= durableLsn) return;
      durableLsn = lsn;
      if (store.derivedPending > 0) schedule();
    },
    write,
    durable,
  };
}
