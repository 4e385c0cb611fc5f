// The `snapshots` table of a shard file: each partition's newest two images (a damaged newest one can
// fall back to the other), each with a checksum over its partition, LSN and body. Store layer: the shard
// worker that owns the file, and the CLI. Invariant: writing an image keeps at most two per partition.
import { crc32 } from 'node:zlib';
import type Database from 'better-sqlite3';
import { Statements } from './statements.ts';

export const SNAPSHOTS_SQL = `
  CREATE TABLE IF NOT EXISTS snapshots (
    partition INTEGER NOT NULL, lsn INTEGER NOT NULL, taken_at_ms INTEGER NOT NULL,
    body BLOB NOT NULL, crc INTEGER NOT NULL, PRIMARY KEY (partition, lsn));`;

export interface SnapshotRow {
  partition: number;
  lsn: number;
  takenAtMs: number;
  body: Buffer;
  crc: number;
}

export function snapshotChecksum(partition: number, lsn: number, body: Buffer): number {
  return crc32(body, crc32(`${partition}:${lsn}:`));
}

export class SnapshotTable {
  private readonly statements: Statements;

  constructor(db: Database.Database) {
    this.statements = new Statements(db);
  }

  write(row: SnapshotRow): void {
    this.statements.get('INSERT OR REPLACE INTO snapshots (partition, lsn, taken_at_ms, body, crc) VALUES (?, ?, ?, ?, ?)').run(row.partition, row.lsn, row.takenAtMs, row.body, row.crc);
    // Older images are kept only as a fallback for one more generation; the WAL stays whole.
    this.statements
      .get(`DELETE FROM snapshots WHERE partition = ? AND lsn < (
         SELECT min(lsn) FROM (SELECT lsn FROM snapshots WHERE partition = ? ORDER BY lsn DESC LIMIT 2))`)
      .run(row.partition, row.partition);
  }

  /** Images of a partition, newest first. */
  of(partition: number): SnapshotRow[] {
    return this.statements.get('SELECT partition, lsn, taken_at_ms AS takenAtMs, body, crc FROM snapshots WHERE partition = ? ORDER BY lsn DESC').all(partition) as SnapshotRow[];
  }
}
