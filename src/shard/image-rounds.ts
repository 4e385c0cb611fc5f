// A shard's image rounds: which partitions changed since their last image, when a round is due, and the
// round itself (an image per changed partition, then truncation of the log segments every kept image
// covers). Runs in the shard's thread beside its runtime (shard-runtime.ts).
// Invariant: an image at LSN n is written only after every row the records up to n imply is committed and
// fsynced in the derived file, so replay from it never needs a row it would not derive again.
import type { ShardStore } from '../store/shard-store.ts';
import { compressImage, snapshotRow } from '../store/snapshot.ts';
import { truncateCovered } from '../store/truncate-covered.ts';
import { DERIVED_SLICE_ROWS } from '../store/derived-rows.ts';
import { encodePartition } from './partition-image.ts';
import type { PartitionState } from './state.ts';

export interface ImageRounds {
  /** After a group commit: marks the records' partitions changed; starts a round once enough records passed. */
  noteRecords(records: ReadonlyArray<{ partition: number }>): void;
  /** Images every changed partition (one a turn, so commands interleave); resolves with what it took. */
  run(): Promise<{ partitions: number; lsn: number }>;
}

export function imageRounds(options: {
  store: ShardStore;
  partitions: readonly number[];
  states: ReadonlyMap<number, PartitionState>;
  /** Records replayed at start: they count toward the first round. */
  recordsAtStart: number;
  /** A round starts after this many records (0: only on the timer or on demand). */
  everyRecords: number;
  /** Records always kept in the log after truncation. */
  retainRecords: number;
  isClosed: () => boolean;
  /** Writes waiting derived rows, at most `rowsMax` (all of them by default); returns how many. */
  writeDerived: (rowsMax?: number) => number;
  /** Resolves once every derived row of the records up to `lsn` is committed and fsynced in the derived file. */
  derivedDurable: (lsn: number) => Promise<void>;
  /** Resolves once every commit made so far is durable. */
  allDurable: () => Promise<void>;
  /** A write of the shard file committed (the next fsync covers it); `step` names it for crash tests. */
  committed: (step: 'snapshot.written' | 'log.truncated') => void;
  took: (seconds: number) => void;
}): ImageRounds {
  const { store, states } = options;
  let recordsSince = options.recordsAtStart;
  /** Partitions changed since their last image: only these are encoded again (all of them after a start). */
  const dirty = new Set<number>(options.partitions);
  let running = false;
  const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

  /**
   * The image's LSN is the last durable LSN at encoding (a record appended later marks the partition
   * changed again). Encoding one partition is short; compression runs on the libuv pool.
   */
  async function run(): Promise<{ partitions: number; lsn: number }> {
    if (running) return { partitions: 0, lsn: store.lsnNext - 1 };
    running = true;
    const started = performance.now();
    recordsSince = 0;
    let lsn = store.lsnNext - 1;
    let taken = 0;
    try {
      for (const partition of options.partitions) {
        if (!dirty.has(partition)) continue;
        await nextTurn();
        // A backlog of derived rows is written a slice a turn (commands interleave), the rest in the turn
        // that encodes the image.
        // (Rows of records the log has not yet made durable wait: the loop ends when a slice writes nothing.)
        while (store.derivedPending > DERIVED_SLICE_ROWS && !options.isClosed() && options.writeDerived(DERIVED_SLICE_ROWS) > 0) await nextTurn();
        const state = states.get(partition)!;
        dirty.delete(partition);
        taken += 1;
        lsn = store.lsnNext - 1;
        const json = encodePartition(state);
        // The derived file takes the rows up to the image (once the log holds their records durably), then
        // commits and fsyncs off this thread while the image compresses.
        const [body] = await Promise.all([compressImage(json), options.derivedDurable(lsn)]);
        store.writeSnapshot(snapshotRow({ partition, lsn, takenAtMs: Date.now(), body }));
        options.committed('snapshot.written');
      }
      // Segments every kept image covers (beyond the retained tail) are no longer needed to recover:
      // archived one per turn (the rows pointing into them keep reading them). A partition whose images
      // are older than its records in the oldest segment is imaged again next round, so an idle one never
      // pins it.
      if (taken > 0) {
        // Only rows every copy holds may leave: in cluster mode a row not yet acknowledged by the stream
        // could still be refused and cut, and the cut reaches the live log only.
        const acknowledgedLsn = store.lsnNext - 1;
        await options.allDurable();
        const { blockers } = await truncateCovered(store, options.retainRecords, async () => {
          options.committed('log.truncated');
          await nextTurn();
        }, acknowledgedLsn);
        for (const partition of blockers) dirty.add(partition);
        await options.allDurable();
      }
    } finally {
      running = false;
      options.took((performance.now() - started) / 1000);
    }
    return { partitions: taken, lsn };
  }

  return {
    run,
    noteRecords(records) {
      recordsSince += records.length;
      for (const record of records) dirty.add(record.partition);
      if (options.everyRecords > 0 && recordsSince >= options.everyRecords) void run();
    },
  };
}
