// The log's truncation after a round of images: ShardStore.truncateWal again and again, one segment
// (one sqlite transaction) a call, until it archives nothing more. One code path for the owner's shard
// (snapshotAll, a turn of its event loop between segments) and a cluster follower's `kobo cluster
// image-copy` on its copy. Runs wherever the file is open for writing.
// Invariant: truncateWal alone decides what leaves the live log; this only repeats it.
import type { ShardStore } from './shard-store.ts';

export interface Truncated {
  /** Records taken out of the live log (archived, or dropped for a version-1 segment). */
  records: number;
  segments: number;
  /** Partitions whose images do not yet cover the oldest segment: imaging each again unblocks it. */
  blockers: Set<number>;
}

/**
 * Archives every segment the kept images cover beyond the newest `retainRecords` and at or below
 * `lsnMax` (what every copy of the log holds: an archived row is never cut as a diverged tail, so a row
 * the cluster's stream may still refuse must stay live); `between` runs after each.
 */
export async function truncateCovered(store: ShardStore, retainRecords: number, between: () => Promise<void> = async () => {}, lsnMax = Number.POSITIVE_INFINITY): Promise<Truncated> {
  const done: Truncated = { records: 0, segments: 0, blockers: new Set() };
  for (;;) {
    const { dropped, blockers } = store.truncateWal(retainRecords, lsnMax);
    for (const partition of blockers) done.blockers.add(partition);
    if (dropped === 0) return done;
    done.records += dropped;
    done.segments += 1;
    await between();
  }
}
