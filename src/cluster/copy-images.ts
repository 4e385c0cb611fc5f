// A follower's own images of its copy: each shard file is recovered as a server's start recovers it (with
// the derived rows replay implies), each partition with records after its image is imaged at the copy's
// last LSN, then the log is truncated as the owner's is after its images (truncate-covered.ts). Runs as
// `kobo cluster image-copy`, started by the node supervisor while its shard followers let go of the files.
// Invariant: an image is written only once the derived rows of the records it covers are in the file;
// a row leaves the live log only when truncateWal allows it (both kept images of its partition cover it).
import path from 'node:path';
import { ShardStore } from '../store/shard-store.ts';
import { partitionsOf, readLayout, shardFile } from '../shard/layout.ts';
import { recoverShard } from '../shard/recovery.ts';
import { rebuildListIndex } from '../shard/list-rebuild.ts';
import { encodePartition } from '../shard/partition-image.ts';
import { compressImageSync, snapshotRow } from '../store/snapshot.ts';
import { truncateCovered } from '../store/truncate-covered.ts';
import { copyPosition } from './follower.ts';

export interface CopyImaged {
  shard: number;
  lastLsn: number;
  replayed: number;
  imaged: number;
  /** Records this run took out of the copy's live log, and those still in it. */
  archived: number;
  live: number;
  /** Left alone: the file holds records past the copy's stream position (see below). */
  skipped: boolean;
}

/** `only`: the shards to image (per-shard ownership: the ones this node follows; its own hosts write the others). */
export async function imageCopy(dataDir: string, options: { walRetainRecords: number; only?: readonly number[] }): Promise<CopyImaged[]> {
  const { shards } = readLayout(dataDir);
  const done: CopyImaged[] = [];
  for (let shard = 0; shard < shards; shard += 1) {
    if (options.only !== undefined && !options.only.includes(shard)) continue;
    const store = new ShardStore(path.join(dataDir, shardFile(shard)));
    try {
      // Records past the stream position are a former owner's own until the stream delivers them again:
      // they may be cut then, with every image at or after them, and an image this run took there would
      // have let truncation archive records no image left would cover. Such a shard waits for its follower.
      const lastLsn = store.lsnNext - 1;
      if (copyPosition(store).lsn < lastLsn) {
        done.push({ shard, lastLsn, replayed: 0, imaged: 0, archived: 0, live: store.walCount(), skipped: true });
        continue;
      }
      const recovered = recoverShard(store, { partitions: partitionsOf(shard, shards) });
      rebuildListIndex(store, recovered.states);
      store.writeDerived();
      let imaged = 0;
      const image = (partition: number): void => {
        store.writeSnapshot(snapshotRow({ partition, lsn: recovered.lastLsn, takenAtMs: Date.now(), body: compressImageSync(encodePartition(recovered.states.get(partition)!)) }));
        imaged += 1;
      };
      if (recovered.replayed > 0) {
        // Only partitions with records after their image are encoded again.
        const imagedAt = (partition: number): number => recovered.snapshotLsn.get(partition) ?? 0;
        const moved = new Set<number>();
        for (const row of store.walAfter(Math.min(...[...recovered.snapshotLsn.values()].map(Number)))) if (row.lsn > imagedAt(row.partition)) moved.add(row.partition);
        for (const partition of recovered.states.keys()) if (moved.has(partition)) image(partition);
      }
      // The owner images a partition that blocks truncation at its next round (it stays marked dirty);
      // this process has no next round, so such a partition is imaged now, if its newest image is older
      // than the copy's last LSN, and truncation runs again. Each partition at most once a run.
      let archived = 0;
      for (;;) {
        const truncated = await truncateCovered(store, options.walRetainRecords);
        archived += truncated.records;
        const again = [...truncated.blockers].filter((p) => recovered.states.has(p) && (store.snapshotsOf(p)[0]?.lsn ?? 0) < recovered.lastLsn);
        if (again.length === 0) break;
        for (const partition of again) image(partition);
      }
      done.push({ shard, lastLsn: recovered.lastLsn, replayed: recovered.replayed, imaged, archived, live: store.walCount(), skipped: false });
    } finally {
      store.close();
    }
  }
  return done;
}
