// Where partitions live: partition p belongs to shard p % shards, whose SQLite file is shard-<n>.db.
// Any thread. The layout of a data dir is fixed when it is created (meta.json records it).
// Invariant: every partition belongs to exactly one shard.
import fs from 'node:fs';
import path from 'node:path';
import { PARTITIONS } from '../config.ts';
import { makeDir } from '../store/private-files.ts';

export function shardOf(partition: number, shards: number): number {
  return partition % shards;
}

export function partitionsOf(shard: number, shards: number): number[] {
  const result: number[] = [];
  for (let p = shard; p < PARTITIONS; p += shards) result.push(p);
  return result;
}

export function shardFile(shard: number): string {
  return `shard-${shard}.db`;
}

export interface Layout {
  partitions: number;
  shards: number;
  createdAt: string;
}

/**
 * Reads the data dir's layout, writing it on first use. A different KOBO_SHARDS later would move
 * partitions between files, so it is refused with a clear message instead of silently mis-routing.
 */
export function ensureLayout(dataDir: string, shards: number): Layout {
  makeDir(dataDir);
  const file = path.join(dataDir, 'layout.json');
  if (fs.existsSync(file)) {
    const layout = JSON.parse(fs.readFileSync(file, 'utf8')) as Layout;
    if (layout.partitions !== PARTITIONS) throw new Error(`data dir ${dataDir} has ${layout.partitions} partitions; this build uses ${PARTITIONS}`);
    if (layout.shards !== shards) {
      throw new Error(`data dir ${dataDir} was created with KOBO_SHARDS=${layout.shards}; start with that value (KOBO_SHARDS=${shards} was given)`);
    }
    return layout;
  }
  const layout: Layout = { partitions: PARTITIONS, shards, createdAt: new Date().toISOString() };
  fs.writeFileSync(file, JSON.stringify(layout, null, 2));
  return layout;
}

export function readLayout(dataDir: string): Layout {
  const file = path.join(dataDir, 'layout.json');
  if (!fs.existsSync(file)) throw new Error(`no kobo data dir at ${dataDir} (layout.json missing)`);
  return JSON.parse(fs.readFileSync(file, 'utf8')) as Layout;
}
