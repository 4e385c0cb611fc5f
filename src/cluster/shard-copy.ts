// A copy of one shard's files (`shard-<n>.db` and its derived file) at one moment, for a per-shard image in
// the object store (shard-images.ts). Runs as `kobo cluster image-shard` in a process of its own, started
// by the node holding the shard while its host writes the files (a read transaction: VACUUM INTO).
// Invariant: the derived file is copied after the shard file, so it covers every image the shard copy holds
// (its rows past the shard copy's log are cut when the copy is opened, as after a crash).
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { ShardStore } from '../store/shard-store.ts';
import { derivedFileOf } from '../store/derived-file.ts';
import { shardFile } from '../shard/layout.ts';

/** The copy's last log row (what the stream must hold before the copy may stand for it); lastLsn 0: an empty log. */
export interface ShardCopy {
  lastLsn: number;
  lsnFirst: number;
  n: number;
  crc: number;
}

/** How far back from the last LSN the copy's last row may start (a row is one group commit's records). */
const ROW_RECORDS_MAX = 1_000_000;

function vacuumInto(from: string, to: string): void {
  const db = new Database(from, { readonly: true, fileMustExist: true });
  try {
    db.prepare('VACUUM INTO ?').run(to);
  } finally {
    db.close();
  }
}

export function copyShardFiles(dataDir: string, shard: number, outDir: string): ShardCopy {
  if (!Number.isInteger(shard) || shard < 0) throw new Error(`cluster image-shard: --shard must be a shard number, got ${shard}`);
  const source = path.join(dataDir, shardFile(shard));
  if (!fs.existsSync(source)) throw new Error(`cluster image-shard: no ${source}`);
  if (fs.existsSync(outDir) && fs.readdirSync(outDir).length > 0) throw new Error(`cluster image-shard: ${outDir} is not empty`);
  fs.mkdirSync(outDir, { recursive: true });
  const copy = path.join(outDir, shardFile(shard));
  vacuumInto(source, copy);
  if (fs.existsSync(derivedFileOf(source))) vacuumInto(derivedFileOf(source), derivedFileOf(copy));
  const store = new ShardStore(copy);
  try {
    const lastLsn = store.lsnNext - 1;
    if (lastLsn === 0) return { lastLsn: 0, lsnFirst: 0, n: 0, crc: 0 };
    for (let lsnFirst = lastLsn; lsnFirst > 0 && lsnFirst > lastLsn - ROW_RECORDS_MAX; lsnFirst -= 1) {
      const row = store.rowAt(lsnFirst);
      if (row === undefined) continue;
      if (lsnFirst + row.n - 1 !== lastLsn) break;
      return { lastLsn, lsnFirst, n: row.n, crc: row.crc };
    }
    throw new Error(`cluster image-shard: the copy of shard ${shard} has no live log row ending at LSN ${lastLsn}`);
  } finally {
    store.close();
    // Each file whole in itself (its journal folded in): the image is the two files' bytes.
    for (const file of [copy, derivedFileOf(copy)]) if (fs.existsSync(file)) selfContained(file);
  }
}

function selfContained(file: string): void {
  const db = new Database(file);
  try {
    db.pragma('journal_mode = DELETE');
  } finally {
    db.close();
  }
  if (fs.existsSync(`${file}-wal`)) throw new Error(`cluster image-shard: ${file} kept its journal`);
}
