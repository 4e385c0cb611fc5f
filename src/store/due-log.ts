// The expiry index of sandbox collections waiting for their payer, kept in the shard file rather than in
// the heap and every snapshot image (a client may leave millions unpaid). Runs in the shard (and the
// recovery) that owns the file.
// Invariant: a row is a hint, written in the same sqlite transaction as the record that made the
// payment wait; the sweep decides from the payment itself and drops rows whose payment waits no more.
import type Database from 'better-sqlite3';
import { Statements } from './statements.ts';

export const DUE_SQL = `
  CREATE TABLE IF NOT EXISTS due (
    partition INTEGER NOT NULL, owner TEXT NOT NULL, expires_at_ms INTEGER NOT NULL, id TEXT NOT NULL,
    lsn INTEGER NOT NULL, PRIMARY KEY (partition, owner, expires_at_ms, id)) WITHOUT ROWID;`;

/** Columns as the backup copies them. */
export const DUE_COLUMNS = 'partition, owner, expires_at_ms, id, lsn';

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

/** What the sweep asks of the file. */
export interface DueReader {
  /** Owners with rows in the partition, in order (one index seek each). */
  ownersOf(partition: number): string[];
  /** The owner's rows expiring before `cutoffMs`, oldest first, at most `limit`. */
  dueOf(partition: number, owner: string, cutoffMs: number, limit: number): DueEntry[];
}

export class DueLog implements DueReader {
  private readonly statements: Statements;

  constructor(db: Database.Database) {
    this.statements = new Statements(db);
  }

  apply(changes: readonly DueChange[]): void {
    if (changes.length === 0) return;
    // Replay writes the same set again (a row a sweep dropped comes back once and is dropped again).
    const set = this.statements.get('INSERT OR IGNORE INTO due (partition, owner, expires_at_ms, id, lsn) VALUES (?, ?, ?, ?, ?)');
    const drop = this.statements.get('DELETE FROM due WHERE partition = ? AND owner = ? AND expires_at_ms = ? AND id = ?');
    for (const c of changes) {
      if (c.op === 'set') set.run(c.partition, c.entry.owner, c.entry.expiresAtMs, c.entry.id, c.lsn);
      else drop.run(c.partition, c.entry.owner, c.entry.expiresAtMs, c.entry.id);
    }
  }

  ownersOf(partition: number): string[] {
    const next = this.statements.get('SELECT owner FROM due WHERE partition = ? AND owner > ? ORDER BY owner LIMIT 1').pluck();
    const owners: string[] = [];
    for (let after = ''; ; ) {
      const owner = next.get(partition, after) as string | undefined;
      if (owner === undefined) return owners;
      owners.push(owner);
      after = owner;
    }
  }

  dueOf(partition: number, owner: string, cutoffMs: number, limit: number): DueEntry[] {
    const rows = this.statements
      .get('SELECT id, expires_at_ms AS expiresAtMs FROM due WHERE partition = ? AND owner = ? AND expires_at_ms < ? ORDER BY expires_at_ms LIMIT ?')
      .all(partition, owner, cutoffMs, limit) as Array<{ id: string; expiresAtMs: number }>;
    return rows.map((r) => ({ id: r.id, owner, expiresAtMs: r.expiresAtMs }));
  }

  /** Rows of records a torn tail lost. (Rows those records dropped stay dropped: their payments waited no more before.) */
  cutFrom(lsn: number): void {
    this.statements.get('DELETE FROM due WHERE lsn >= ?').run(lsn);
  }

  count(): number {
    return this.statements.get('SELECT count(*) FROM due').pluck().get() as number;
  }
}
