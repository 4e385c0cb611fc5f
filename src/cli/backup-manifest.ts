// A backup's manifest: the partition set, the row count of every table and a SHA-256 digest of every row
// of the file, written last by `kobo snapshot` and checked by `kobo restore` before anything moves.
// Runs in the CLI. Checksums prove each row unaltered; only the manifest proves none is missing.
// Invariant: a backup whose rows, counts or partitions differ from its manifest is never restored.
import { createHash } from 'node:crypto';
import type Database from 'better-sqlite3';

/** Backups with a manifest. The first format (`kobo-backup-1`) had none. */
export const BACKUP_FORMAT = 'kobo-backup-2';
export const LEGACY_BACKUP_FORMAT = 'kobo-backup-1';
/** The meta key holding the manifest (the one row the digest leaves out). */
const MANIFEST_KEY = 'manifest';
/** Tables of a backup file: more than this is not a file kobo wrote. */
const TABLES_MAX = 64;

export interface Manifest {
  /** The partition numbers imaged, ascending. */
  partitions: number[];
  /** Every table of the file → its row count. */
  rows: Record<string, number>;
  /** `sha256:<hex>` over every table's name and rows, in key order (meta's manifest row excepted). */
  digest: string;
}

function tablesOf(backup: Database.Database): string[] {
  const tables = backup.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").pluck().all() as string[];
  if (tables.length > TABLES_MAX) throw new Error(`the file has ${tables.length} tables; a kobo backup has at most ${TABLES_MAX}`);
  return tables;
}

/** `ORDER BY` the primary key, else the rowid: the same order whenever the same rows are read. */
function orderOf(backup: Database.Database, table: string): string {
  const keys = (backup.prepare('SELECT name, pk FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk').all(table) as Array<{ name: string }>).map((c) => `"${c.name}"`);
  return keys.length > 0 ? keys.join(', ') : 'rowid';
}

const quoted = (table: string): string => `"${table.replace(/"/g, '""')}"`;

/** One value as the digest reads it: blobs as hex, so a byte and its text never collide. */
function encodeValue(value: unknown): unknown {
  return Buffer.isBuffer(value) ? { blob: value.toString('hex') } : typeof value === 'bigint' ? String(value) : value;
}

function digestOf(backup: Database.Database, tables: readonly string[]): { digest: string; rows: Record<string, number> } {
  const hash = createHash('sha256');
  const rows: Record<string, number> = {};
  for (const table of tables) {
    hash.update(`table ${table}\n`);
    let n = 0;
    const where = table === 'meta' ? ` WHERE key <> '${MANIFEST_KEY}'` : '';
    const statement = backup.prepare(`SELECT * FROM ${quoted(table)}${where} ORDER BY ${orderOf(backup, table)}`).raw(true);
    for (const row of statement.iterate() as IterableIterator<unknown[]>) {
      hash.update(JSON.stringify(row.map(encodeValue)));
      hash.update('\n');
      n += 1;
    }
    rows[table] = n;
  }
  return { digest: `sha256:${hash.digest('hex')}`, rows };
}

function partitionsOf(backup: Database.Database): number[] {
  return backup.prepare('SELECT partition FROM partitions ORDER BY partition').pluck().all() as number[];
}

/** Computes the manifest of a complete backup and stores it (the last write before the file is closed). */
export function writeManifest(backup: Database.Database): Manifest {
  const { digest, rows } = digestOf(backup, tablesOf(backup));
  const manifest: Manifest = { partitions: partitionsOf(backup), rows, digest };
  backup.prepare('INSERT INTO meta (key, value) VALUES (?, ?)').run(MANIFEST_KEY, JSON.stringify(manifest));
  return manifest;
}

/**
 * What keeps the backup from being restored, or null. Without a manifest (`legacy`: a backup written
 * before manifests, restored only when the operator says so) the partition set is still checked.
 */
export function manifestProblem(backup: Database.Database, meta: ReadonlyMap<string, string>, options: { allowNoManifest: boolean }): string | null {
  const expected = Number(meta.get('partitions'));
  const partitions = partitionsOf(backup);
  const missing = Array.from({ length: expected }, (_, p) => p).filter((p) => !partitions.includes(p));
  if (!Number.isInteger(expected) || expected <= 0) return 'it does not say how many partitions it holds';
  if (missing.length > 0 || partitions.length !== expected) {
    return `it holds ${partitions.length} of its ${expected} partitions${missing.length > 0 ? ` (missing: ${missing.slice(0, 10).join(', ')}${missing.length > 10 ? ', …' : ''})` : ''}`;
  }
  const text = meta.get(MANIFEST_KEY);
  if (text === undefined) {
    if (meta.get('format') === LEGACY_BACKUP_FORMAT && options.allowNoManifest) return null;
    return meta.get('format') === LEGACY_BACKUP_FORMAT
      ? 'it was written before backups carried a manifest, so nothing proves it complete; restore it only with --allow-no-manifest'
      : 'its manifest is missing';
  }
  let manifest: Manifest;
  try {
    manifest = JSON.parse(text) as Manifest;
  } catch {
    return 'its manifest is not readable';
  }
  if (JSON.stringify(manifest.partitions) !== JSON.stringify(partitions)) return `its partitions differ from its manifest (${partitions.length} present, ${manifest.partitions?.length ?? 0} listed)`;
  const actual = digestOf(backup, tablesOf(backup));
  for (const table of new Set([...Object.keys(manifest.rows ?? {}), ...Object.keys(actual.rows)])) {
    const listed = manifest.rows?.[table];
    const found = actual.rows[table];
    if (listed !== found) return `table ${table} holds ${found ?? 'no'} rows; its manifest lists ${listed ?? 'no such table'}`;
  }
  if (actual.digest !== manifest.digest) return 'its rows differ from its manifest\'s digest (a row was altered)';
  return null;
}
