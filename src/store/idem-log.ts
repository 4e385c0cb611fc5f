// The idempotency records of a shard file: an append-only table keyed by `seq`, the LSN of the WAL
// record that stored each one. Runs in the shard worker (and the CLI) that owns the file.
// Invariant: an insert touches only the table's right edge and one index insertion point per owner,
// so storing a record costs a few page writes whatever the table's size (no random-key b-tree).
import assert from 'node:assert/strict';
import type Database from 'better-sqlite3';
import { ownerOfScope, packIdemAt, type IdempotencyRecord, type IdemOp } from './tiers.ts';
import { scopeHash } from './scope-hash.ts';
import { Statements } from './statements.ts';
import { addChecksums, DamagedRowError, hasChecksumColumn, idemRowChecksum, type IdemRowFields } from './row-checks.ts';

/**
 * Lookups go by `seq`, which the front end's index hands over with the key's hash; expiry goes by
 * (owner, at_ms), the only index; start-up reads (h, partition, seq) from that index, not the rows.
 * `crc` covers every other column (idemRowChecksum); it is checked whenever a record is replayed.
 */
export const IDEM_LOG_SQL = `
  CREATE TABLE IF NOT EXISTS idem_log (
    seq INTEGER PRIMARY KEY, lsn INTEGER NOT NULL, partition INTEGER NOT NULL, owner TEXT NOT NULL,
    h INTEGER NOT NULL, scope TEXT NOT NULL, fingerprint TEXT NOT NULL, status INTEGER NOT NULL,
    json TEXT, error TEXT, at_ms INTEGER NOT NULL, crc INTEGER);
  CREATE INDEX IF NOT EXISTS idem_log_age ON idem_log (owner, at_ms, partition, h);`;

/** Idempotency changes of one record, tagged with its LSN (a torn tail takes them back too). */
export interface IdemChange {
  lsn: number;
  partition: number;
  op: IdemOp;
  /** A put whose reply is in the log record at `lsn`: the row keeps it empty until that log row goes. */
  inLog?: true;
}

/** The `json` of a row whose reply is in the log record at its LSN. */
export const IN_LOG_JSON = '';

/** The columns idemRowChecksum covers, in the order the checksum migration passes them. */
export const IDEM_CHECKED_COLUMNS = ['lsn', 'partition', 'owner', 'h', 'scope', 'fingerprint', 'status', 'json', 'error', 'at_ms'] as const;

/** A record as the backup file and the pre-`idem_log` table hold it. */
export interface IdemRowOut {
  scope: string;
  partition: number;
  fingerprint: string;
  status: number;
  json: string | null;
  error: string | null;
  at_ms: number;
  lsn: number;
}

export class IdemLog {
  private readonly statements: Statements;
  /** Null until first asked: a read-only open of a file from before row checksums has no `crc`. */
  private checksummed: boolean | null = null;

  constructor(private readonly db: Database.Database) {
    this.statements = new Statements(db);
  }

  /** Rows written before checksums get theirs once, at a writable open (after the table exists). */
  static addChecksums(db: Database.Database): void {
    addChecksums(db, 'idem_log', IDEM_CHECKED_COLUMNS, idemRowChecksum);
  }

  private stmt(sql: string): Database.Statement {
    return this.statements.get(sql);
  }

  /**
   * Stores a record at `seq` = its LSN. Idempotent: replaying the same put finds its own row. Two
   * records of one LSN (only in images and tables written before this layout) take negative seqs.
   */
  put(lsn: number, partition: number, record: IdempotencyRecord, inLog = false): number {
    const error = inLog || record.error === undefined ? null : JSON.stringify(record.error);
    const insert = this.stmt(
      'INSERT INTO idem_log (seq, lsn, partition, owner, h, scope, fingerprint, status, json, error, at_ms, crc) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (seq) DO NOTHING',
    );
    const fields = { lsn, partition, owner: ownerOfScope(record.scope), h: record.h ?? scopeHash(record.scope), scope: record.scope, fingerprint: record.fingerprint, status: record.status, json: inLog ? IN_LOG_JSON : (record.json ?? null), error, at_ms: record.atMs };
    const args = [lsn, partition, fields.owner, fields.h, record.scope, record.fingerprint, record.status, fields.json, error, record.atMs, idemRowChecksum(fields)] as const;
    if (insert.run(lsn, ...args).changes === 1) return lsn;
    const holder = this.stmt('SELECT scope FROM idem_log WHERE seq = ?').pluck().get(lsn) as string;
    if (holder === record.scope) return lsn;
    // A reply in the log is found at the row's LSN: a v2 record stores one key at its own LSN, so a
    // second row for it cannot arise (only images and files from before idem_log had two a LSN).
    assert(!inLog, `idempotency row: the reply of ${record.scope} is in log record ${lsn}, whose row holds another key`);
    const lowest = this.stmt('SELECT min(seq) FROM idem_log').pluck().get() as number;
    const seq = Math.min(lowest, 0) - 1;
    insert.run(seq, ...args);
    return seq;
  }

  /**
   * The record at `seq` if it has this scope. Its checksum is checked first: a damaged row raises
   * DamagedRowError, never a replay of altered bytes nor a "miss" that would run the request again.
   */
  readAt(scope: string, seq: number): IdempotencyRecord | undefined {
    this.checksummed ??= hasChecksumColumn(this.db, 'idem_log');
    const row = this.stmt(`SELECT lsn, partition, owner, h, scope, fingerprint, status, json, error, at_ms${this.checksummed ? ', crc' : ''} FROM idem_log WHERE seq = ?`).get(seq) as
      | (IdemRowFields & { crc?: number | null })
      | undefined;
    if (row === undefined) return undefined;
    if (this.checksummed && idemRowChecksum(row) !== row.crc) throw new DamagedRowError('idem_log', `at seq ${seq} (LSN ${row.lsn}, partition ${row.partition})`);
    if (row.scope !== scope) return undefined;
    const record: IdempotencyRecord = { scope: row.scope, fingerprint: row.fingerprint, status: row.status, atMs: row.at_ms };
    if (row.json !== null) record.json = row.json;
    if (row.error !== null) record.error = JSON.parse(row.error) as { code: string; message: string };
    return record;
  }

  /**
   * Applies idempotency changes in order; returns [hash, packed location] of every record removed, so
   * the front end's index forgets exactly those (a colliding hash elsewhere stays).
   */
  apply(changes: readonly IdemChange[]): Array<[number, number]> {
    const removed: Array<[number, number]> = [];
    const collect = (rows: Array<{ h: number; partition: number; seq: number }>): void => {
      for (const row of rows) removed.push([row.h, packIdemAt(row.partition, row.seq)]);
    };
    for (let i = 0; i < changes.length; i += 1) {
      const { lsn, partition, op } = changes[i]!;
      if (op.op === 'put') this.put(lsn, partition, op.record, changes[i]!.inLog === true);
      else if (op.op === 'forget') {
        // Only WAL records written before expiry carried cutoffs name scopes: a scan, once, at replay.
        for (const scope of op.scopes) collect(this.stmt('DELETE FROM idem_log WHERE scope = ? RETURNING h, partition, seq').all(scope) as Array<{ h: number; partition: number; seq: number }>);
      } else {
        // Expiry covers the whole file (every partition here is this shard's): the first partition's
        // sweep deletes, the rest find an empty range. Replaying it again deletes nothing new, since a
        // record stored later is younger than any cutoff that came before it.
        for (const owner of this.owners()) {
          const cutoff = op.cutoffMs[owner] ?? op.defaultCutoffMs;
          collect(this.stmt('DELETE FROM idem_log WHERE owner = ? AND at_ms < ? RETURNING h, partition, seq').all(owner, cutoff) as Array<{ h: number; partition: number; seq: number }>);
        }
      }
    }
    return removed;
  }

  /** Owners with stored records, read by seeking the (owner, at_ms) index from one owner to the next. */
  private owners(): string[] {
    const owners: string[] = [];
    const next = this.stmt('SELECT owner FROM idem_log WHERE owner > ? ORDER BY owner LIMIT 1').pluck();
    for (let owner = next.get('') as string | undefined; owner !== undefined; owner = next.get(owner) as string | undefined) owners.push(owner);
    return owners;
  }

  /**
   * Every stored key for the front end's index as flat pairs [hash, packed location, …], read from the
   * covering index in two plucked passes (a million row objects would cost seconds at start-up).
   */
  locations(): Float64Array {
    const count = this.stmt('SELECT count(*) FROM idem_log').pluck().get() as number;
    const out = new Float64Array(2 * count);
    let at = 0;
    for (const h of this.stmt('SELECT h FROM idem_log INDEXED BY idem_log_age ORDER BY owner, at_ms, partition, h, seq').pluck().iterate() as IterableIterator<number>) {
      if (at >= out.length) break;
      out[at] = h;
      at += 2;
    }
    at = 1;
    const packed = this.stmt(`SELECT seq * 1024 + partition FROM idem_log INDEXED BY idem_log_age ORDER BY owner, at_ms, partition, h, seq`).pluck();
    for (const value of packed.iterate() as IterableIterator<number>) {
      if (at >= out.length) break;
      out[at] = value;
      at += 2;
    }
    return out;
  }

  /** Records stored by a torn final batch (LSN `lsn` on) go with it. */
  cutFrom(lsn: number): void {
    this.stmt('DELETE FROM idem_log WHERE seq >= ? OR (seq < 0 AND lsn >= ?)').run(lsn, lsn);
  }

  count(): number {
    return this.stmt('SELECT count(*) FROM idem_log').pluck().get() as number;
  }

  /** Rows up to an LSN, in the backup's shape. */
  rowsUpTo(lsn: number): IterableIterator<IdemRowOut> {
    return this.db.prepare('SELECT scope, partition, fingerprint, status, json, error, at_ms, lsn FROM idem_log WHERE lsn <= ? ORDER BY seq').iterate(lsn) as IterableIterator<IdemRowOut>;
  }

  /** Puts a backup's (or the pre-`idem_log` table's) rows back, each at its LSN. */
  putRows(rows: Iterable<IdemRowOut>): number {
    let n = 0;
    for (const row of rows) {
      const record: IdempotencyRecord = { scope: row.scope, fingerprint: row.fingerprint, status: row.status, atMs: row.at_ms };
      if (row.json !== null) record.json = row.json;
      if (row.error !== null) record.error = JSON.parse(row.error) as { code: string; message: string };
      this.put(row.lsn, row.partition, record);
      n += 1;
    }
    return n;
  }
}
