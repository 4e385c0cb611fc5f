// A follower's own images of its copy: each shard file is recovered as a server's start would recover it
// (the derived rows replay implies are written) and, if anything was replayed, every partition is imaged
// at the copy's last LSN, so a takeover's recovery replays only what came after. Runs as `kobo cluster
// image-copy`, a process the node supervisor starts while its shard followers pause.
// Invariant: an image is written only once the derived rows of the records it covers are in the file.
import path from 'node:path';
import { ShardStore } from '../store/shard-store.ts';
import { partitionsOf, readLayout, shardFile } from '../shard/layout.ts';
import { recoverShard } from '../shard/recovery.ts';
import { rebuildListIndex } from '../shard/list-rebuild.ts';
import { encodePartition } from '../shard/partition-image.ts';
import { compressImageSync, snapshotRow } from '../store/snapshot.ts';

export interface CopyImaged {
  shard: number;
  lastLsn: number;
  replayed: number;
  imaged: number;
}

export function imageCopy(dataDir: string): CopyImaged[] {
  const { shards } = readLayout(dataDir);
  const done: CopyImaged[] = [];
  for (let shard = 0; shard < shards; shard += 1) {
    const store = new ShardStore(path.join(dataDir, shardFile(shard)));
    try {
      const recovered = recoverShard(store, { partitions: partitionsOf(shard, shards) });
      rebuildListIndex(store, recovered.states);
      store.writeDerived();
      let imaged = 0;
      if (recovered.replayed > 0) {
        // Only partitions with records after their image are encoded again.
        const imagedAt = (partition: number): number => recovered.snapshotLsn.get(partition) ?? 0;
        const moved = new Set<number>();
        for (const row of store.walAfter(Math.min(...[...recovered.snapshotLsn.values()].map(Number)))) if (row.lsn > imagedAt(row.partition)) moved.add(row.partition);
        for (const [partition, state] of recovered.states) {
          if (!moved.has(partition)) continue;
          store.writeSnapshot(snapshotRow({ partition, lsn: recovered.lastLsn, takenAtMs: Date.now(), body: compressImageSync(encodePartition(state)) }));
          imaged += 1;
        }
      }
      done.push({ shard, lastLsn: recovered.lastLsn, replayed: recovered.replayed, imaged });
    } finally {
      store.close();
    }
  }
  return done;
}
