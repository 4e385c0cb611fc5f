// The expiry index of sandbox collections waiting for their payer, kept in the shard file rather than in
// the heap and every snapshot image (a client may leave millions unpaid). Runs in the shard (and the
// recovery) that owns the file.
// Invariant: a row is a hint, written in the same sqlite transaction as the record that made the
// payment wait; the sweep decides from the payment itself and drops rows whose payment waits no more.
import type Database from 'better-sqlite3';
import { Statements } from './statements.ts';
import { relayoutTable } from './relayout.ts';
import { addChecksums, DamagedRowError, dueRowChecksum, hasChecksumColumn, reportDamage } from './row-checks.ts';

// Keyed by owner, then expiry: a batch's new rows (each expiring a day after its sandbox-clock now) all go
// to the right edge of one owner's range, a page or two per commit. Keyed by partition first, as it was,
// each busy partition's rows went to a page of their own, rewritten (and checkpointed) at every commit:
// about 5 KB written per collection with 16 busy partitions.
// `crc` covers the other columns (dueRowChecksum), checked when the sweep reads a row.
export const DUE_SQL = `
  CREATE TABLE IF NOT EXISTS due (
    owner TEXT NOT NULL, expires_at_ms INTEGER NOT NULL, partition INTEGER NOT NULL, id TEXT NOT NULL,
    lsn INTEGER NOT NULL, crc INTEGER, PRIMARY KEY (owner, expires_at_ms, partition, id)) WITHOUT ROWID;`;

/** The columns every layout of the table had (what a relayout copies over). */
export const DUE_COLUMNS = 'partition, owner, expires_at_ms, id, lsn';
/** Columns as the backup copies them: with each row's checksum. */
export const DUE_BACKUP_COLUMNS = `${DUE_COLUMNS}, crc`;
const DUE_CHECKED_COLUMNS = ['owner', 'expires_at_ms', 'partition', 'id', 'lsn'] as const;

/** A waiting collection: whose clock decides, and when its instructions expire on it. */
export interface DueEntry {
  id: string;
  owner: string;
  expiresAtMs: number;
}

export interface DueOp {
  op: 'set' | 'drop';
  entry: DueEntry;
}

/** A change of one WAL record (its LSN: a torn tail takes its rows back). */
export interface DueChange extends DueOp {
  lsn: number;
  partition: number;
}

/** A row the sweep found due, with the partition whose shard decides it. */
export interface DueRow extends DueEntry {
  partition: number;
}

export class DueLog {
  private readonly statements: Statements;
  /** Null until first asked: a read-only open of a file from before row checksums has no `crc`. */
  private checksummed: boolean | null = null;

  constructor(private readonly db: Database.Database) {
    this.statements = new Statements(db);
  }

  /**
   * Files written with the partition-first key get the owner-first one, and rows written before row
   * checksums get theirs (each once, at open, in one transaction).
   */
  static migrate(db: Database.Database): void {
    const createOld = DUE_SQL.replace(', crc INTEGER', '');
    relayoutTable(db, { table: 'due', isOld: (sql) => /PRIMARY KEY \(partition,/.test(sql), createSql: createOld, columns: DUE_COLUMNS });
    addChecksums(db, 'due', DUE_CHECKED_COLUMNS, dueRowChecksum);
  }

  apply(changes: readonly DueChange[]): void {
    if (changes.length === 0) return;
    // Replay writes the same set again (a row a sweep dropped comes back once and is dropped again).
    const set = this.statements.get('INSERT OR IGNORE INTO due (owner, expires_at_ms, partition, id, lsn, crc) VALUES (?, ?, ?, ?, ?, ?)');
    const drop = this.statements.get('DELETE FROM due WHERE owner = ? AND expires_at_ms = ? AND partition = ? AND id = ?');
    for (const c of changes) {
      const row = { owner: c.entry.owner, expires_at_ms: c.entry.expiresAtMs, partition: c.partition, id: c.entry.id, lsn: c.lsn };
      if (c.op === 'set') set.run(row.owner, row.expires_at_ms, row.partition, row.id, row.lsn, dueRowChecksum(row));
      else drop.run(c.entry.owner, c.entry.expiresAtMs, c.partition, c.entry.id);
    }
  }

  /** Owners with rows, in order (one index seek each: there are few owners and many rows). */
  owners(): string[] {
    const next = this.statements.get('SELECT owner FROM due WHERE owner > ? ORDER BY owner LIMIT 1').pluck();
    const owners: string[] = [];
    for (let after = ''; ; ) {
      const owner = next.get(after) as string | undefined;
      if (owner === undefined) return owners;
      owners.push(owner);
      after = owner;
    }
  }

  /**
   * The owner's rows expiring before `cutoffMs`, oldest first, at most `limit`, in every partition. A
   * row that fails its checksum is left out (reported at fatal, once): the sweep never acts on it.
   */
  dueOf(owner: string, cutoffMs: number, limit: number): DueRow[] {
    this.checksummed ??= hasChecksumColumn(this.db, 'due');
    const rows = this.statements
      .get(`SELECT id, partition, expires_at_ms, lsn${this.checksummed ? ', crc' : ''} FROM due WHERE owner = ? AND expires_at_ms < ? ORDER BY expires_at_ms LIMIT ?`)
      .all(owner, cutoffMs, limit) as Array<{ id: string; partition: number; expires_at_ms: number; lsn: number; crc?: number | null }>;
    const out: DueRow[] = [];
    for (const r of rows) {
      if (this.checksummed && dueRowChecksum(Object.assign({}, r, { owner })) !== r.crc) {
        reportDamage(new DamagedRowError('due', `${r.id} (owner ${owner}, LSN ${r.lsn})`), { partition: r.partition });
        continue;
      }
      out.push({ id: r.id, owner, expiresAtMs: r.expires_at_ms, partition: r.partition });
    }
    return out;
  }

  /** Rows of records a torn tail lost. (Rows those records dropped stay dropped: their payments waited no more before.) */
  cutFrom(lsn: number): void {
    this.statements.get('DELETE FROM due WHERE lsn >= ?').run(lsn);
  }

  count(): number {
    return this.statements.get('SELECT count(*) FROM due').pluck().get() as number;
  }
}
