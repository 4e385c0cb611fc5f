// The idempotency records of a shard file: an append-only table keyed by `seq`, the LSN of the WAL
// record that stored each one. Runs in the shard worker (and the CLI) that owns the file.
// Invariant: an insert touches only the table's right edge and one index insertion point per owner,
// so storing a record costs a few page writes whatever the table's size (no random-key b-tree).
import assert from 'node:assert/strict';
import type Database from 'better-sqlite3';
import { ownerOfScope, packIdemAt, type IdempotencyRecord, type IdemOp } from './tiers.ts';
import { scopeHash } from './scope-hash.ts';
import { Statements } from './statements.ts';
import { addChecksums, DamagedRowError, hasChecksumColumn, idemRowChecksum, numberedIdemFields, reportDamage, type IdemRowFields, type NumberedIdemRow } from './row-checks.ts';
import { OWNER_NUMBERS_SQL, OwnerNumbers, splitScope, WHOLE_SCOPE } from './owner-numbers.ts';

/**
 * Lookups go by `seq`, which the front end's index hands over with the key's hash; expiry goes by
 * (owner number, at_ms), the only index; start-up reads (h, partition, seq) from that index, not the rows.
 * A row names its owner by number (`o`, from owner_numbers) and keeps the key after it (`key`): the scope
 * is `owner:key`. `crc` is idemRowChecksum of the row as read (owner and scope resolved), the same value
 * the text layout stored, so a backup copies it as it is; it is checked whenever a record is replayed.
 */
export const IDEM_LOG_SQL = `${OWNER_NUMBERS_SQL}
  CREATE TABLE IF NOT EXISTS idem_log (
    seq INTEGER PRIMARY KEY, lsn INTEGER NOT NULL, partition INTEGER NOT NULL, o INTEGER NOT NULL,
    h INTEGER NOT NULL, key TEXT NOT NULL, fingerprint TEXT NOT NULL, status INTEGER NOT NULL,
    json TEXT, error TEXT, at_ms INTEGER NOT NULL, crc INTEGER);
  CREATE INDEX IF NOT EXISTS idem_log_age ON idem_log (o, at_ms, partition, h);`;

/** The text layout's columns (files written before owner numbers; a read-only open may still meet one). */
const TEXT_COLUMNS = 'lsn, partition, owner, h, scope, fingerprint, status, json, error, at_ms';

/**
 * A numbered file's rows up to an LSN (`?`) in the backup's columns (scope, partition, owner, h,
 * fingerprint, status, json, error, at_ms, lsn, crc), from the shard file attached as `schema`: owner and
 * scope resolved as reads resolve them, the checksum as stored (restore checks it: a number whose mapping
 * was altered gives another owner, and fails there). Needs `kobo_owner_of_scope` registered (ownerOfScope).
 */
export function idemBackupSelect(schema: string): string {
  return `SELECT CASE WHEN l.o = ${WHOLE_SCOPE} THEN l.key ELSE coalesce(w.owner, '') || ':' || l.key END, l.partition,
      CASE WHEN l.o = ${WHOLE_SCOPE} THEN kobo_owner_of_scope(l.key) ELSE coalesce(w.owner, '') END, l.h, l.fingerprint, l.status, l.json, l.error, l.at_ms, l.lsn, l.crc
    FROM ${schema}.idem_log l LEFT JOIN ${schema}.owner_numbers w ON w.n = l.o WHERE l.lsn <= ?`;
}

/** True when a file's `idem_log` names owners by number (the `o` column). */
export function idemNumbered(db: Database.Database, schema = 'main'): boolean {
  return db.prepare(`SELECT 1 FROM pragma_table_info('idem_log', '${schema}') WHERE name = 'o'`).get() !== undefined;
}

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

/** The columns idemRowChecksum covers in the text layout, in the order the checksum migration passes them. */
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
  /** Null until first asked: false only for a read-only open of a file whose rows name owners by text. */
  private numberedNow: boolean | null = null;
  private readonly owners: OwnerNumbers;

  constructor(private readonly db: Database.Database) {
    this.statements = new Statements(db);
    this.owners = new OwnerNumbers(db);
  }

  /** Rows written before checksums get theirs once, at a writable open (after the table exists). */
  static addChecksums(db: Database.Database): void {
    if (IdemLog.isNumbered(db)) return;
    addChecksums(db, 'idem_log', IDEM_CHECKED_COLUMNS, idemRowChecksum);
  }

  private static isNumbered(db: Database.Database): boolean {
    return idemNumbered(db);
  }

  private get numbered(): boolean {
    return (this.numberedNow ??= IdemLog.isNumbered(this.db));
  }

  /**
   * A table whose rows name their owner by text moves to owner numbers, once, at a writable open, in one
   * transaction (a kill -9 leaves the old table whole or the new one complete). Run after addChecksums:
   * each row keeps its checksum, which covers the same resolved fields, so a damaged scope stays damaged.
   * The owner comes from the scope, as put always derived it (an owner column altered on disk is not
   * carried over: it never decided anything the scope did not).
   */
  static relayout(db: Database.Database): void {
    const sql = db.prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'idem_log'").pluck().get() as string | undefined;
    if (sql === undefined || IdemLog.isNumbered(db)) return;
    db.function('kobo_scope_owner', { deterministic: true }, (scope) => splitScope(scope as string)?.owner ?? null);
    db.function('kobo_scope_key', { deterministic: true }, (scope) => splitScope(scope as string)?.key ?? (scope as string));
    db.transaction(() => {
      db.exec('DROP INDEX IF EXISTS idem_log_age');
      db.exec('ALTER TABLE idem_log RENAME TO idem_log_text_owners');
      db.exec(IDEM_LOG_SQL);
      const owners = new OwnerNumbers(db);
      for (const owner of db.prepare('SELECT DISTINCT kobo_scope_owner(scope) FROM idem_log_text_owners WHERE kobo_scope_owner(scope) IS NOT NULL ORDER BY 1').pluck().all() as string[]) owners.numberOf(owner, true);
      db.exec(`INSERT INTO idem_log (seq, lsn, partition, o, h, key, fingerprint, status, json, error, at_ms, crc)
        SELECT t.seq, t.lsn, t.partition, coalesce(w.n, ${WHOLE_SCOPE}), t.h, kobo_scope_key(t.scope), t.fingerprint, t.status, t.json, t.error, t.at_ms, t.crc
        FROM idem_log_text_owners t LEFT JOIN owner_numbers w ON w.owner = kobo_scope_owner(t.scope)`);
      db.exec('DROP TABLE idem_log_text_owners');
    })();
  }

  /** Forgets cached owner numbers: numbers made in a write transaction that rolled back are not in the file. */
  forgetNumbers(): void {
    this.owners.forget();
  }

  /** The row's owner number and key (made on first use), or WHOLE_SCOPE and the scope when it does not split. */
  private stored(scope: string, create: boolean): { o: number; key: string } | undefined {
    const split = splitScope(scope);
    if (split === null) return { o: WHOLE_SCOPE, key: scope };
    const o = this.owners.numberOf(split.owner, create);
    return o === undefined ? undefined : { o, key: split.key };
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
    assert(this.numbered, 'idempotency rows written into a file whose rows were not moved to owner numbers');
    const insert = this.stmt(
      'INSERT INTO idem_log (seq, lsn, partition, o, h, key, fingerprint, status, json, error, at_ms, crc) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (seq) DO NOTHING',
    );
    const fields = { lsn, partition, owner: ownerOfScope(record.scope), h: record.h ?? scopeHash(record.scope), scope: record.scope, fingerprint: record.fingerprint, status: record.status, json: inLog ? IN_LOG_JSON : (record.json ?? null), error, at_ms: record.atMs };
    const { o, key } = this.stored(record.scope, true)!;
    const args = [lsn, partition, o, fields.h, key, record.fingerprint, record.status, fields.json, error, record.atMs, idemRowChecksum(fields)] as const;
    if (insert.run(lsn, ...args).changes === 1) return lsn;
    const holder = this.stmt('SELECT o, key FROM idem_log WHERE seq = ?').get(lsn) as { o: number; key: string };
    if (holder.o === o && holder.key === key) return lsn;
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
    const row = this.rowAt(seq);
    if (row === undefined) return undefined;
    if (this.checksummed && idemRowChecksum(row) !== row.crc) throw new DamagedRowError('idem_log', `at seq ${seq} (LSN ${row.lsn}, partition ${row.partition})`);
    if (row.scope !== scope) return undefined;
    const record: IdempotencyRecord = { scope: row.scope, fingerprint: row.fingerprint, status: row.status, atMs: row.at_ms };
    if (row.json !== null) record.json = row.json;
    if (row.error !== null) record.error = JSON.parse(row.error) as { code: string; message: string };
    return record;
  }

  /** The row at `seq` with its owner and scope resolved (a number's mapping checked: DamagedRowError). */
  private rowAt(seq: number): (IdemRowFields & { crc?: number | null }) | undefined {
    const crc = this.checksummed === true ? ', crc' : '';
    if (!this.numbered) return this.stmt(`SELECT ${TEXT_COLUMNS}${crc} FROM idem_log WHERE seq = ?`).get(seq) as (IdemRowFields & { crc?: number | null }) | undefined;
    const row = this.stmt(`SELECT l.lsn, l.partition, l.o, l.key, NULL AS mapped, l.h, l.fingerprint, l.status, l.json, l.error, l.at_ms${crc === '' ? '' : ', l.crc'} FROM idem_log l WHERE seq = ?`).get(seq) as
      | (NumberedIdemRow & { crc?: number | null })
      | undefined;
    if (row === undefined) return undefined;
    if (row.o !== WHOLE_SCOPE) row.mapped = this.owners.ownerOf(row.o);
    return Object.assign(numberedIdemFields(row), { crc: row.crc });
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
        for (const scope of op.scopes) {
          const at = this.stored(scope, false);
          if (at !== undefined) collect(this.stmt('DELETE FROM idem_log WHERE o = ? AND key = ? RETURNING h, partition, seq').all(at.o, at.key) as Array<{ h: number; partition: number; seq: number }>);
        }
      } else {
        // Expiry covers the whole file (every partition here is this shard's): the first partition's
        // sweep deletes, the rest find an empty range. Replaying it again deletes nothing new, since a
        // record stored later is younger than any cutoff that came before it.
        // A number whose mapping is damaged keeps its rows (reported): expiring them by a guessed owner's
        // cutoff could free a key too early. Whole-scope rows (not kobo's) expire by the default cutoff.
        for (const o of this.ownerNumbers()) {
          let cutoff = op.defaultCutoffMs;
          if (o !== WHOLE_SCOPE) {
            try {
              cutoff = op.cutoffMs[this.owners.ownerOf(o)] ?? op.defaultCutoffMs;
            } catch (error) {
              if (!(error instanceof DamagedRowError)) throw error;
              reportDamage(error);
              continue;
            }
          }
          collect(this.stmt('DELETE FROM idem_log WHERE o = ? AND at_ms < ? RETURNING h, partition, seq').all(o, cutoff) as Array<{ h: number; partition: number; seq: number }>);
        }
      }
    }
    return removed;
  }

  /** Owner numbers with stored records, read by seeking the (o, at_ms) index from one number to the next. */
  private ownerNumbers(): number[] {
    const owners: number[] = [];
    const next = this.stmt('SELECT o FROM idem_log WHERE o > ? ORDER BY o LIMIT 1').pluck();
    for (let o = next.get(-1) as number | undefined; o !== undefined; o = next.get(o) as number | undefined) owners.push(o);
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
    const order = `ORDER BY ${this.numbered ? 'o' : 'owner'}, at_ms, partition, h, seq`;
    for (const h of this.stmt(`SELECT h FROM idem_log INDEXED BY idem_log_age ${order}`).pluck().iterate() as IterableIterator<number>) {
      if (at >= out.length) break;
      out[at] = h;
      at += 2;
    }
    at = 1;
    const packed = this.stmt(`SELECT seq * 1024 + partition FROM idem_log INDEXED BY idem_log_age ${order}`).pluck();
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
