// The cold table of a shard file: finished entities, one row per (id, kind, LSN) version, read back by
// id. Runs in the shard worker (and the CLI) that owns the file.
// Invariant: a row is written in the same sqlite transaction as the WAL record whose LSN it carries, and
// (id, kind, lsn) names one body forever: replay writes the same row again, never another.
import type Database from 'better-sqlite3';
import { crc32 } from 'node:zlib';
import { ENTITY_KINDS, type EntityKind } from './tiers.ts';
import { Statements } from './statements.ts';
import { relayoutTable } from './relayout.ts';
import { DamagedRowError } from './row-checks.ts';
import { decodeColdBody, encodeColdBody } from './cold-codec.ts';

/**
 * One WITHOUT ROWID b-tree keyed (id, kind, lsn): ids are ULIDs, so a slice of new rows goes to the tree's
 * right edge, and the id is stored once. The rowid layout before this one (a table plus a unique index on
 * (id, kind, lsn)) stored every id twice: ~80 B more on disk a bank-transfer payment, whose two rows point
 * into the log and hold no body. The first layout, keyed (kind, id, lsn), kept half-kilobyte bodies written
 * in the request's transaction at two insertion points (one per kind); rows are now derived after the
 * fsync in slices, and a finished body is deflated (~150 B, cold-codec.ts). Both older layouts move at open.
 */
export const COLD_SQL = `
  CREATE TABLE IF NOT EXISTS cold (
    kind INTEGER NOT NULL, id TEXT NOT NULL, lsn INTEGER NOT NULL, partition INTEGER NOT NULL,
    body TEXT NOT NULL, crc INTEGER NOT NULL, PRIMARY KEY (id, kind, lsn)) WITHOUT ROWID;`;

export const COLD_COLUMNS = 'kind, id, lsn, partition, body, crc';

/** A finished entity's row: one version per (kind, id, lsn); the LSN of the record that wrote it. */
export interface ColdRow {
  kind: EntityKind;
  id: string;
  lsn: number;
  partition: number;
  body: string;
  /**
   * The log record at `lsn` holds this very body (the entity as that record created it): the row is
   * stored empty and read from the log until the log row is truncated, when it takes its body.
   */
  inLog?: true;
}

/** The body of a row that points into the log record at its LSN. */
export const IN_LOG_BODY = '';

const KIND_CODE = new Map<EntityKind, number>(ENTITY_KINDS.map((kind, i) => [kind, i]));

export function kindCode(kind: EntityKind): number {
  return KIND_CODE.get(kind)!;
}

/**
 * Finished-entity rows whose body no longer matches its checksum, in a shard file or a backup (both
 * keep the table as `cold` with these columns); none when the file has no such table.
 */
export function* damagedColdRows(db: Database.Database): IterableIterator<{ kind: number; id: string; lsn: number }> {
  if (db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'cold'").get() === undefined) return;
  for (const row of db.prepare('SELECT kind, id, lsn, body, crc FROM cold').iterate() as IterableIterator<{ kind: number; id: string; lsn: number; body: string | Buffer; crc: number }>) {
    if (crc32(row.body) !== row.crc) yield { kind: row.kind, id: row.id, lsn: row.lsn };
  }
}

interface CheckedBody {
  lsn: number;
  /** JSON text, IN_LOG_BODY, or a body deflated by cold-codec.ts (the checksum covers the stored bytes). */
  body: string | Buffer;
  crc: number;
}

function checked(kind: EntityKind, id: string, row: CheckedBody | undefined): string | undefined {
  if (row === undefined) return undefined;
  if (crc32(row.body) !== row.crc) throw new DamagedRowError('cold', `${kind} ${id} (LSN ${row.lsn})`);
  try {
    return decodeColdBody(kind, row.body);
  } catch {
    throw new DamagedRowError('cold', `${kind} ${id} (LSN ${row.lsn}): its stored body does not decode`);
  }
}

export class ColdTable {
  private readonly statements: Statements;

  constructor(private readonly db: Database.Database) {
    this.statements = new Statements(db);
  }

  /** Files written with an older layout (see COLD_SQL) are moved to this one once, at open. */
  static migrate(db: Database.Database): void {
    relayoutTable(db, { table: 'cold', isOld: (sql) => !/PRIMARY KEY \(id, kind, lsn\)/i.test(sql), createSql: COLD_SQL, columns: COLD_COLUMNS });
  }

  /** Idempotent: replay writes the same (kind, id, lsn) with the same body. */
  write(rows: readonly ColdRow[]): void {
    if (rows.length === 0) return;
    const insert = this.statements.get(`INSERT OR REPLACE INTO cold (${COLD_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)`);
    for (const row of rows) {
      // A whole body is stored deflated with its kind's dictionary (~5× smaller; see cold-codec.ts).
      const body = row.inLog === true ? IN_LOG_BODY : encodeColdBody(row.kind, row.body);
      insert.run(kindCode(row.kind), row.id, row.lsn, row.partition, body, crc32(body));
    }
  }

  /** Like read, with the version's LSN (a body that points into the log is resolved by the caller). */
  readRow(kind: EntityKind, id: string, beforeLsn: number): { lsn: number; body: string } | undefined {
    const row = (
      beforeLsn === Number.POSITIVE_INFINITY
        ? this.statements.get('SELECT lsn, body, crc FROM cold WHERE id = ? AND kind = ? ORDER BY lsn DESC LIMIT 1').get(id, kindCode(kind))
        : this.statements.get('SELECT lsn, body, crc FROM cold WHERE id = ? AND kind = ? AND lsn < ? ORDER BY lsn DESC LIMIT 1').get(id, kindCode(kind), beforeLsn)
    ) as CheckedBody | undefined;
    const body = checked(kind, id, row);
    return body === undefined ? undefined : { lsn: row!.lsn, body };
  }

  /**
   * The newest version written before `beforeLsn` (Infinity: the newest of all). Its checksum is checked
   * at every read: a damaged row raises DamagedRowError rather than answer with altered money.
   */
  read(kind: EntityKind, id: string, beforeLsn: number): string | undefined {
    const row = (
      beforeLsn === Number.POSITIVE_INFINITY
        ? this.statements.get('SELECT lsn, body, crc FROM cold WHERE id = ? AND kind = ? ORDER BY lsn DESC LIMIT 1').get(id, kindCode(kind))
        : this.statements.get('SELECT lsn, body, crc FROM cold WHERE id = ? AND kind = ? AND lsn < ? ORDER BY lsn DESC LIMIT 1').get(id, kindCode(kind), beforeLsn)
    ) as CheckedBody | undefined;
    return checked(kind, id, row);
  }

  /** The version written with the record at exactly `lsn` (what a WAL record that names its entity by id wrote). */
  readExact(kind: EntityKind, id: string, lsn: number): string | undefined {
    const row = this.statements.get('SELECT lsn, body, crc FROM cold WHERE id = ? AND kind = ? AND lsn = ?').get(id, kindCode(kind), lsn) as CheckedBody | undefined;
    return checked(kind, id, row);
  }

  /** Rows of a torn final batch go with it. Rare (start-up only), so the scan needs no index on lsn. */
  cutFrom(lsn: number): void {
    this.db.prepare('DELETE FROM cold WHERE lsn >= ?').run(lsn);
  }

  *ids(kind: EntityKind): IterableIterator<string> {
    yield* this.db.prepare('SELECT DISTINCT id FROM cold WHERE kind = ?').pluck().iterate(kindCode(kind)) as IterableIterator<string>;
  }

  count(): number {
    return (this.db.prepare('SELECT count(*) AS n FROM cold').get() as { n: number }).n;
  }
}
