// `kobo restore FILE`: replaces a data dir with a backup (backup.ts writes them). The whole backup is
// checked first (sqlite's check, every row's checksum, events' and ledger entries' too, the manifest),
// the new dir is built beside the old one, and only then swapped in, under the data dir's lock. Runs in
// the CLI. Invariant: no server runs on the dir from the first file moved to the last, and a dir left
// half-swapped (a restore killed meanwhile) is refused by the server until a restore completes.
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { dataDirLocked, describeHolder, HOLDER_FILE, LOCK_FILE, lockHolder, RESTORE_MARKER, tryLockDataDir, type DirLock } from '../store/dir-lock.ts';
import { openDatabase, ShardStore, snapshotChecksum } from '../store/shard-store.ts';
import type { IdemRowOut } from '../store/idem-log.ts';
import { decompressImage } from '../store/snapshot.ts';
import { decodePartition } from '../shard/partition-image.ts';
import { ensureLayout, shardFile } from '../shard/layout.ts';
import { CLUSTER_NODE_FILE } from '../cluster/cluster-config.ts';
import { CONTROL_SCHEMA_SQL } from '../store/control-store.ts';
import { DUE_BACKUP_COLUMNS, DUE_COLUMNS, type DueBackupRow } from '../store/due-log.ts';
import { damagedColdRows } from '../store/cold-table.ts';
import { damagedDueRows, damagedIdemRows, hasChecksumColumn } from '../store/row-checks.ts';
import { WebhookStore } from '../webhooks/store.ts';
import { FrontIdempotencyStore } from '../http/idempotency-store.ts';
import { makeDir } from '../store/private-files.ts';
import { TIER_COLUMNS, WEBHOOK_TABLES } from './backup.ts';
import { BACKUP_FORMAT, LEGACY_BACKUP_FORMAT, manifestProblem } from './backup-manifest.ts';
import { damagedListRows, restoreListRows } from './backup-lists.ts';

export interface RestoreResult {
  dataDir: string;
  previous: string | null;
  partitions: number;
}

export interface RestoreOptions {
  /** Restore a backup written before manifests (its completeness cannot be proved). */
  allowNoManifest?: boolean;
}

interface PartitionRow {
  partition: number;
  lsn: number;
  body: Buffer;
  crc: number;
}

interface Checked {
  shards: number;
  rows: PartitionRow[];
  /** The backup's idempotency and expiry rows carry checksums (every backup written since they have them). */
  rowChecksums: boolean;
}

/** A backup refused before anything moves: its sqlite pages, its manifest, its images and every row's checksum. */
function checkBackup(backup: Database.Database, backupFile: string, options: RestoreOptions): Checked {
  let meta: Map<string, string>;
  try {
    meta = new Map((backup.prepare('SELECT key, value FROM meta').all() as Array<{ key: string; value: string }>).map((r) => [r.key, r.value]));
  } catch (error) {
    // Not sqlite at all, truncated, or sqlite without kobo's tables: say so in the operator's terms.
    throw new Error(`restore: ${backupFile} is not a kobo backup, or is damaged (${(error as Error).message})`, { cause: error });
  }
  const format = meta.get('format');
  if (format !== BACKUP_FORMAT && format !== LEGACY_BACKUP_FORMAT) throw new Error(`restore: ${backupFile} is not a kobo backup`);
  const integrity = backup.pragma('integrity_check', { simple: true });
  if (integrity !== 'ok') throw new Error(`restore: ${backupFile} is damaged (sqlite integrity check: ${String(integrity)})`);
  const rows = backup.prepare('SELECT partition, lsn, body, crc FROM partitions ORDER BY partition').all() as PartitionRow[];
  for (const row of rows) {
    if (snapshotChecksum(row.partition, row.lsn, row.body) !== row.crc) throw new Error(`restore: partition ${row.partition} fails its checksum; the backup is damaged`);
    decodePartition(decompressImage(row.body));
  }
  for (const row of damagedColdRows(backup)) throw new Error(`restore: finished entity ${row.id} (LSN ${row.lsn}) fails its checksum; the backup is damaged`);
  for (const row of damagedIdemRows(backup, 'idem')) throw new Error(`restore: the ${row} fails its checksum; the backup is damaged`);
  for (const row of damagedDueRows(backup)) throw new Error(`restore: the ${row} fails its checksum; the backup is damaged`);
  for (const row of damagedListRows(backup)) throw new Error(`restore: the ${row} fails its checksum; the backup is damaged`);
  // Checksums name an altered row; only the manifest shows a row, a table or a partition gone.
  const incomplete = manifestProblem(backup, meta, { allowNoManifest: options.allowNoManifest === true });
  if (incomplete !== null) throw new Error(`restore: ${backupFile} is refused: ${incomplete}`);
  const rowChecksums = ['idem', 'due'].every((table) => backup.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(table) === undefined || hasChecksumColumn(backup, table));
  return { shards: Number(meta.get('shards')), rows, rowChecksums };
}

/** Puts the backup's finished, idempotency and expiry rows of this shard's partitions into its fresh derived file. */
function restoreTiers(store: ShardStore, backupFile: string, shard: number, checked: Checked): void {
  const { shards } = checked;
  // They go into the shard's derived file (derived-file.ts), through its own connection.
  const db = store.rowsDb;
  db.prepare('ATTACH DATABASE ? AS bk').run(backupFile);
  try {
    const present = (table: string): boolean => db.prepare("SELECT 1 FROM bk.sqlite_master WHERE type = 'table' AND name = ?").get(table) !== undefined;
    // A backup from before finished entities left the heap has neither table.
    if (present('cold')) db.prepare(`INSERT INTO cold (${TIER_COLUMNS.cold}) SELECT ${TIER_COLUMNS.cold} FROM bk.cold WHERE partition % ? = ?`).run(shards, shard);
    if (present('due')) {
      // Each row keeps its checksum (checked above); a backup from before row checksums gets one now
      // (nothing to check it against). The shard file names owners by number: put back through the store.
      const columns = checked.rowChecksums ? DUE_BACKUP_COLUMNS : `${DUE_COLUMNS}, NULL AS crc`;
      const rows = db.prepare(`SELECT ${columns} FROM bk.due WHERE partition % ? = ?`).all(shards, shard) as DueBackupRow[];
      db.transaction(() => store.due.putBackupRows(rows))();
    }
    if (present('idem')) {
      // Put back through the store, which writes each row at its LSN with its checksum (checked above).
      const rows = db.prepare('SELECT scope, partition, fingerprint, status, json, error, at_ms, lsn FROM bk.idem WHERE partition % ? = ? ORDER BY lsn').all(shards, shard) as IdemRowOut[];
      db.transaction(() => store.idem.putRows(rows))();
    }
  } finally {
    db.exec('DETACH DATABASE bk');
  }
}

/** Writes the backup's shards, keys, clocks and webhook tables into `dir` (a fresh staging dir). */
function writeRestored(dir: string, backup: Database.Database, backupFile: string, checked: Checked, progress: (m: string) => void): void {
  const { shards, rows } = checked;
  ensureLayout(dir, shards);
  for (let shard = 0; shard < shards; shard += 1) {
    const mine = rows.filter((r) => r.partition % shards === shard);
    const store = new ShardStore(path.join(dir, shardFile(shard)));
    const baseLsn = Math.max(0, ...mine.map((r) => r.lsn));
    store.setMeta('base_lsn', String(baseLsn));
    for (const row of mine) store.writeSnapshot({ partition: row.partition, lsn: row.lsn, takenAtMs: Date.now(), body: row.body, crc: row.crc });
    restoreTiers(store, backupFile, shard, checked);
    // A backup from before events and entries travelled has neither table: the shard lists what follows.
    const listed = restoreListRows(store, backup, shard);
    store.close();
    progress(`shard ${shard}: ${mine.length} partitions, ${listed.events} events, ${listed.entries} wallet ledger entries restored (WAL continues after LSN ${baseLsn})`);
  }
  const control = openDatabase(path.join(dir, 'control.db'));
  control.exec(CONTROL_SCHEMA_SQL);
  const insertKey = control.prepare('INSERT INTO api_keys VALUES (@id, @hash, @prefix, @account, @env, @scopes, @ip_allow, @customer_id, @status, @created_at_ms, @expires_at_ms, @label)');
  for (const key of backup.prepare('SELECT * FROM api_keys').all() as Array<Record<string, unknown>>) insertKey.run(key);
  for (const clock of backup.prepare('SELECT owner, offset_ms FROM clocks').all() as Array<{ owner: string; offset_ms: number }>) {
    control.prepare('INSERT INTO clocks VALUES (?, ?)').run(clock.owner, clock.offset_ms);
  }
  control.close();
  const webhooks = new WebhookStore(dir);
  // The front's idempotency table is made by its store (the server's, at start): made here first, so
  // the backup's records (each with the checksum every replay checks) land in it.
  void new FrontIdempotencyStore(webhooks.db, 0);
  webhooks.db.prepare('ATTACH DATABASE ? AS bk').run(backupFile);
  for (const table of WEBHOOK_TABLES) {
    const present = webhooks.db.prepare("SELECT 1 FROM bk.sqlite_master WHERE name = ?").get(`webhook_${table}`);
    if (present !== undefined) webhooks.db.exec(`INSERT INTO ${table} SELECT * FROM bk.webhook_${table}`);
  }
  webhooks.db.exec('DETACH DATABASE bk');
  webhooks.close();
}

/** The lock and its companions stay where they are while everything else is swapped. */
/** The lock, the restore marker and a cluster node's `cluster-node.json` (it says what the dir is part of, not what it holds). */
function keptInPlace(name: string): boolean {
  return name === HOLDER_FILE || name === CLUSTER_NODE_FILE || name === RESTORE_MARKER || name === LOCK_FILE || name.startsWith(`${LOCK_FILE}-`);
}

function syncDir(dir: string): void {
  const fd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Moves the old files aside and the staged ones in, inside the locked dir (the dir itself and its lock
 * file never move, so a server starting at any moment meets the held lock). The marker is there from the
 * first move to the last: killed in between, the dir holds neither set whole and a server refuses it.
 */
function swapIn(dataDir: string, staging: string, previous: string): string | null {
  const marker = path.join(dataDir, RESTORE_MARKER);
  fs.writeFileSync(marker, `restoring from ${staging}; the files it replaced go to ${previous}\n`);
  syncDir(dataDir);
  const old = fs.readdirSync(dataDir).filter((name) => !keptInPlace(name));
  if (old.length > 0) {
    makeDir(previous);
    for (const name of old) fs.renameSync(path.join(dataDir, name), path.join(previous, name));
  }
  for (const name of fs.readdirSync(staging)) fs.renameSync(path.join(staging, name), path.join(dataDir, name));
  fs.rmdirSync(staging);
  syncDir(dataDir);
  fs.rmSync(marker);
  syncDir(dataDir);
  return old.length > 0 ? previous : null;
}

function refusal(dataDir: string): Error {
  const holder = lockHolder(dataDir);
  if (holder !== null && holder.name !== 'server') return new Error(`restore: ${dataDir} is in use by ${describeHolder(dataDir)}; try again when it has finished`);
  return new Error(`restore: ${describeHolder(dataDir)} is using ${dataDir}; stop it first`);
}

/**
 * Replaces the data dir with a backup. The whole backup is checked before the data dir is touched; the
 * new dir is built beside the old one and swapped in under the data dir's lock, so no server starts on
 * it meanwhile and a damaged backup or a failure halfway leaves the data dir as it was.
 */
export function restoreBackup(dataDir: string, backupFile: string, progress: (m: string) => void = () => {}, options: RestoreOptions = {}): RestoreResult {
  // A quick refusal while a server runs (before a long check); the lock taken below is what decides.
  if (fs.existsSync(dataDir) && dataDirLocked(dataDir)) throw refusal(dataDir);
  if (!fs.existsSync(backupFile)) throw new Error(`restore: no backup at ${backupFile}`);
  const backup = new Database(backupFile, { readonly: true, fileMustExist: true });
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const staging = `${dataDir}.restoring-${stamp}`;
  let lock: DirLock | null = null;
  const created = !fs.existsSync(dataDir);
  try {
    const checked = checkBackup(backup, backupFile, options);
    makeDir(dataDir);
    lock = tryLockDataDir(dataDir, 'kobo restore');
    if (lock === null) throw refusal(dataDir);
    progress(`holding the data dir's lock: no server can start on ${dataDir} until the restore ends`);
    try {
      writeRestored(staging, backup, backupFile, checked, progress);
    } catch (error) {
      fs.rmSync(staging, { recursive: true, force: true });
      throw error;
    }
    const previous = swapIn(dataDir, staging, `${dataDir}.pre-restore-${stamp}`);
    if (previous !== null) progress(`moved the current data dir aside to ${previous}`);
    return { dataDir, previous, partitions: checked.rows.length };
  } catch (error) {
    // A dir this restore made and never filled goes again (only its lock files are in it).
    if (created && fs.existsSync(dataDir) && fs.readdirSync(dataDir).every(keptInPlace)) {
      lock?.release();
      lock = null;
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
    throw error;
  } finally {
    lock?.release();
    backup.close();
  }
}
