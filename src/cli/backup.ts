// `kobo snapshot`: one SQLite file with every partition's image at its LSN, the finished entities,
// idempotency and expiry rows, events and wallet ledger entries up to that LSN (each row checksummed),
// the layout, API keys (hashed), sandbox clocks, webhook tables and, written last, a manifest of it all.
// Runs in the CLI. Online (a server holds the data dir) it only reads, at one cut across the shards;
// offline it holds the data dir's lock for its whole run. Restore is in restore.ts.
// Invariant: a restored data dir recovers to exactly the state the backup was taken from.
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { describeHolder, lockHolder, tryLockDataDir } from '../store/dir-lock.ts';
import { ShardStore } from '../store/shard-store.ts';
import { recoverShard } from '../shard/recovery.ts';
import { compressImageSync, snapshotRow } from '../store/snapshot.ts';
import { encodePartition } from '../shard/partition-image.ts';
import { partitionsOf, readLayout, shardFile } from '../shard/layout.ts';
import { openDatabase } from '../store/shard-store.ts';
import { CONTROL_SCHEMA_SQL, ControlStore } from '../store/control-store.ts';
import { DUE_BACKUP_COLUMNS, DUE_TEXT_SQL, dueBackupSelect, dueNumbered } from '../store/due-log.ts';
import { kindCode } from '../store/cold-table.ts';
import type { DerivedBatch } from '../store/derived-rows.ts';
import { ENTITY_KINDS, ownerOfScope } from '../store/tiers.ts';
import { scopeHash } from '../store/scope-hash.ts';
import { crc32 } from 'node:zlib';
import { dueRowChecksum, idemRowChecksum, type IdemRowFields } from '../store/row-checks.ts';
import { makeDir } from '../store/private-files.ts';
import { idemBackupSelect, idemNumbered as idemNumberedIn } from '../store/idem-log.ts';
import { BACKUP_FORMAT, writeManifest } from './backup-manifest.ts';
import { copyListRows, LIST_BACKUP_SQL } from './backup-lists.ts';

/** The tables of webhooks.db a backup carries (as `webhook_<name>`): all of them. */
export const WEBHOOK_TABLES = ['subscriptions', 'events', 'deliveries', 'attempts', 'front_idempotency'] as const;

/** The shard file's tiered tables, copied whole (rows up to the backup's LSN) into the backup. */
const TIER_TABLES_SQL = `
  CREATE TABLE IF NOT EXISTS cold (kind INTEGER NOT NULL, id TEXT NOT NULL, lsn INTEGER NOT NULL, partition INTEGER NOT NULL,
    body TEXT NOT NULL, crc INTEGER NOT NULL, PRIMARY KEY (kind, id, lsn)) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS idem (scope TEXT PRIMARY KEY, partition INTEGER NOT NULL, owner TEXT NOT NULL, h INTEGER NOT NULL,
    fingerprint TEXT NOT NULL, status INTEGER NOT NULL, json TEXT, error TEXT, at_ms INTEGER NOT NULL, lsn INTEGER NOT NULL, crc INTEGER) WITHOUT ROWID;
  ${DUE_TEXT_SQL}`;
export const TIER_COLUMNS = {
  cold: 'kind, id, lsn, partition, body, crc',
  idem: 'scope, partition, owner, h, fingerprint, status, json, error, at_ms, lsn, crc',
  due: DUE_BACKUP_COLUMNS,
} as const;

export interface SnapshotResult {
  file: string;
  partitions: number;
  bytes: number;
  compacted: boolean;
}

/** How long the backup asks the server to hold cross-shard steps, and how long it waits for the hold. */
const CUT_HOLD_MS = 10_000;
/** The server refuses a hold asked longer ago than 20 s (FORWARDS_HOLD_STALE_MS), so this stays below it. */
const CUT_WAIT_MS = 15_000;
const CUT_ATTEMPTS_MAX = 3;

/** Queues an operator action and waits for the server's result (null: not applied in time). */
async function serverAction(control: ControlStore, kind: 'forwards.hold' | 'forwards.release', target: string): Promise<string | null> {
  const id = control.queueAction({ kind, target, payload: { holdMs: CUT_HOLD_MS } }, Date.now());
  const applied = await control.appliedAction(id, CUT_WAIT_MS);
  return applied === undefined ? null : (applied.result ?? '');
}

/**
 * Every shard file opened for reading at one cut of a running server. A cross-shard transfer moves in
 * steps on two shards (debit here, credit there, the answer back here), so files read one after
 * another could hold a later step without the earlier one: money made or lost in the copy. The server
 * holds cross-shard steps until each already sent is durable; each file's read transaction then opens
 * while nothing crosses, and the hold is released. A hold that ended before every file was open (it
 * overflowed or expired) gives no cut: the stores are closed and the cut is tried again.
 */
async function openAtOneCut(dataDir: string, shards: number): Promise<ShardStore[]> {
  const open = (): ShardStore[] => Array.from({ length: shards }, (_, shard) => new ShardStore(path.join(dataDir, shardFile(shard)), { readonly: true }));
  if (shards === 1) return open();
  const control = new ControlStore(dataDir);
  try {
    for (let attempt = 1; attempt <= CUT_ATTEMPTS_MAX; attempt += 1) {
      const hold = `backup-${process.pid}-${Date.now()}-${attempt}`;
      const held = await serverAction(control, 'forwards.hold', hold);
      if (held === null) throw new Error('snapshot: the running server did not answer the request to pause cross-shard transfers; is it healthy?');
      if (held !== 'ok') continue;
      const stores = open();
      if ((await serverAction(control, 'forwards.release', hold)) === 'ok') return stores;
      for (const store of stores) store.close();
    }
    throw new Error(`snapshot: no consistent cut across the shards in ${CUT_ATTEMPTS_MAX} attempts (cross-shard transfers kept the hold from settling); try again when traffic is lower`);
  } finally {
    control.close();
  }
}

/**
 * Offline (no server), the backup takes the data dir's lock and holds it to the end: it writes fresh
 * images into the shard files, and a server starting meanwhile would replay under it. Online, the
 * server holds the lock and the backup only reads. Another CLI holding it (a restore) is waited out by
 * the operator, never raced.
 */
export async function takeSnapshot(dataDir: string, outFile: string, progress: (m: string) => void = () => {}): Promise<SnapshotResult> {
  const layout = readLayout(dataDir);
  const lock = tryLockDataDir(dataDir, 'kobo snapshot');
  const holder = lock === null ? lockHolder(dataDir) : null;
  if (lock === null && holder !== null && holder.name !== 'server') {
    throw new Error(`snapshot: ${dataDir} is in use by ${describeHolder(dataDir)}; try again when it has finished`);
  }
  const online = lock === null;
  progress(online ? 'a server runs on the data dir: reading at one cut across the shards' : "holding the data dir's lock: no server can start until the backup is written");
  try {
    makeDir(path.dirname(outFile));
    if (fs.existsSync(outFile)) throw new Error(`snapshot: ${outFile} exists; choose another --out`);
    const cut = online ? await openAtOneCut(dataDir, layout.shards) : null;
    // Written beside --out and renamed into place only when complete: a failure leaves no file that
    // looks like a backup.
    const partial = `${outFile}.partial-${process.pid}`;
    const backup = new Database(partial);
    try {
      return fillBackup(backup, { dataDir, layout, cut, online, progress, partial, outFile });
    } catch (error) {
      if (backup.open) backup.close();
      for (const file of [partial, `${partial}-journal`]) fs.rmSync(file, { force: true });
      throw error;
    }
  } finally {
    lock?.release();
  }
}

interface BackupFill {
  dataDir: string;
  layout: ReturnType<typeof readLayout>;
  cut: ShardStore[] | null;
  online: boolean;
  progress: (m: string) => void;
  partial: string;
  outFile: string;
}

function fillBackup(backup: Database.Database, { dataDir, layout, cut, online, progress, partial, outFile }: BackupFill): SnapshotResult {
  backup.exec(`
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE partitions (partition INTEGER PRIMARY KEY, lsn INTEGER NOT NULL, body BLOB NOT NULL, crc INTEGER NOT NULL);
  `);
  backup.exec(CONTROL_SCHEMA_SQL);
  backup.exec(TIER_TABLES_SQL);
  backup.exec(LIST_BACKUP_SQL);
  const insert = backup.prepare('INSERT INTO partitions (partition, lsn, body, crc) VALUES (?, ?, ?, ?)');
  let count = 0;
  const lsnOf = new Map<number, number>();
  for (let shard = 0; shard < layout.shards; shard += 1) {
    // Offline, the shard's own file also gets the fresh images, so the next start replays less.
    const store = cut?.[shard] ?? new ShardStore(path.join(dataDir, shardFile(shard)), { readonly: false });
    let held: DerivedBatch = { cold: [], idem: [], due: [] };
    try {
      // Offline, the replay writes the rows it derives into the shard file, as a server's start does: the
      // images written below make the next start replay only after them, so rows of the records before
      // them that a killed server still held in memory would otherwise be in no file at all. Online, the
      // server owns the file: the replay keeps them in memory and the backup takes them from there.
      const recovered = recoverShard(store, { partitions: partitionsOf(shard, layout.shards), readonly: online });
      for (const [partition, state] of recovered.states) {
        const body = compressImageSync(encodePartition(state));
        const row = snapshotRow({ partition, lsn: recovered.lastLsn, takenAtMs: Date.now(), body });
        insert.run(partition, row.lsn, row.body, row.crc);
        if (!online) store.writeSnapshot(row);
        count += 1;
      }
      lsnOf.set(shard, recovered.lastLsn);
      // Rows the replay derived from log records after the images: a running server may not have
      // written them to their tables yet (log v2 writes them after the fsync, in bulk).
      held = store.takeHeldDerived();
      progress(`shard ${shard}: ${recovered.states.size} partitions at LSN ${recovered.lastLsn}`);
      const tiered = copyTiers(backup, store.rowsDb.name, lsnOf.get(shard) ?? 0);
      addDerived(backup, held);
      // A backup restores without the log: rows that point into it take their bodies now.
      const resolved = resolveFromLog(backup, store);
      progress(`shard ${shard}: ${tiered.cold} finished entities, ${tiered.idem} idempotency records (${resolved} read from the log)`);
      // Events and statement lines are derived rows no image holds, from records truncation may drop.
      const listed = copyListRows(backup, store, shard, recovered.lastLsn, held);
      progress(`shard ${shard}: ${listed.events} events, ${listed.entries} wallet ledger entries`);
    } finally {
      store.close();
    }
  }
  const control = openDatabase(path.join(dataDir, 'control.db'), { readonly: true });
  try {
    const keys = control.prepare('SELECT * FROM api_keys').all() as Array<Record<string, unknown>>;
    const insertKey = backup.prepare('INSERT INTO api_keys VALUES (@id, @hash, @prefix, @account, @env, @scopes, @ip_allow, @customer_id, @status, @created_at_ms, @expires_at_ms, @label)');
    for (const key of keys) insertKey.run(key);
    for (const clock of control.prepare('SELECT owner, offset_ms FROM clocks').all() as Array<{ owner: string; offset_ms: number }>) {
      backup.prepare('INSERT INTO clocks VALUES (?, ?)').run(clock.owner, clock.offset_ms);
    }
  } finally {
    control.close();
  }
  const webhooksFile = path.join(dataDir, 'webhooks.db');
  if (fs.existsSync(webhooksFile)) {
    // Subscriptions (with secrets), events and delivery history travel with the backup, and so do the
    // idempotency records of the POSTs the front answers itself (subscriptions, the sandbox clock, ...):
    // without them a client retrying such a POST after a restore would create or move things twice.
    backup.prepare('ATTACH DATABASE ? AS wh').run(webhooksFile);
    for (const table of WEBHOOK_TABLES) {
      // front_idempotency is made by the server's first start: a webhooks.db older than it has none.
      if (backup.prepare("SELECT 1 FROM wh.sqlite_master WHERE type = 'table' AND name = ?").get(table) === undefined) continue;
      backup.exec(`CREATE TABLE webhook_${table} AS SELECT * FROM wh.${table}`);
    }
    backup.exec('DETACH DATABASE wh');
  }
  const meta = backup.prepare('INSERT INTO meta VALUES (?, ?)');
  meta.run('format', BACKUP_FORMAT);
  meta.run('shards', String(layout.shards));
  meta.run('partitions', String(layout.partitions));
  meta.run('taken_at', new Date().toISOString());
  const manifest = writeManifest(backup);
  progress(`manifest: ${manifest.partitions.length} partitions, ${Object.entries(manifest.rows).map(([t, n]) => `${t} ${n}`).join(', ')}; ${manifest.digest}`);
  backup.close();
  if (fs.existsSync(outFile)) throw new Error(`snapshot: ${outFile} appeared while the backup was written; choose another --out`);
  fs.renameSync(partial, outFile);
  return { file: outFile, partitions: count, bytes: fs.statSync(outFile).size, compacted: !online };
}

/** Fills the backup's rows whose bodies are in the shard's log (cold entities, stored replies); returns how many. */
function resolveFromLog(backup: Database.Database, store: ShardStore): number {
  let n = 0;
  const coldRows = backup.prepare("SELECT kind, id, lsn FROM cold WHERE body = ''").all() as Array<{ kind: number; id: string; lsn: number }>;
  const setCold = backup.prepare('UPDATE cold SET body = ?, crc = ? WHERE kind = ? AND id = ? AND lsn = ?');
  const idemRows = backup.prepare("SELECT scope, partition, owner, h, fingerprint, status, json, error, at_ms, lsn FROM idem WHERE json = ''").all() as Array<IdemRowFields>;
  const setIdem = backup.prepare('UPDATE idem SET json = ?, error = ?, crc = ? WHERE scope = ?');
  backup.transaction(() => {
    for (const row of coldRows) {
      const body = store.createdInLog(ENTITY_KINDS[row.kind]!, row.id, row.lsn);
      setCold.run(body, crc32(body), row.kind, row.id, row.lsn);
      n += 1;
    }
    for (const row of idemRows) {
      const stored = store.storedInLog(row.scope, row.lsn);
      const filled = { ...row, json: stored.json ?? null, error: stored.error === undefined ? null : JSON.stringify(stored.error) };
      setIdem.run(filled.json, filled.error, idemRowChecksum(filled), row.scope);
      n += 1;
    }
  })();
  return n;
}

/** Applies derived rows (in their order) to the backup's cold, idempotency and expiry tables. */
function addDerived(backup: Database.Database, derived: DerivedBatch): void {
  const cold = backup.prepare(`INSERT OR REPLACE INTO cold (${TIER_COLUMNS.cold}) VALUES (?, ?, ?, ?, ?, ?)`);
  const idem = backup.prepare(`INSERT OR REPLACE INTO idem (${TIER_COLUMNS.idem}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  const dueSet = backup.prepare(`INSERT OR IGNORE INTO due (owner, expires_at_ms, partition, id, lsn, crc) VALUES (?, ?, ?, ?, ?, ?)`);
  const dueDrop = backup.prepare('DELETE FROM due WHERE owner = ? AND expires_at_ms = ? AND partition = ? AND id = ?');
  backup.transaction(() => {
    for (const row of derived.cold) cold.run(kindCode(row.kind), row.id, row.lsn, row.partition, row.body, crc32(row.body));
    for (const { lsn, partition, op } of derived.idem) {
      if (op.op === 'put') {
        const r = op.record;
        const fields = { lsn, partition, owner: ownerOfScope(r.scope), h: r.h ?? scopeHash(r.scope), scope: r.scope, fingerprint: r.fingerprint, status: r.status, json: r.json ?? null, error: r.error === undefined ? null : JSON.stringify(r.error), at_ms: r.atMs };
        idem.run(fields.scope, partition, fields.owner, fields.h, fields.fingerprint, fields.status, fields.json, fields.error, fields.at_ms, lsn, idemRowChecksum(fields));
      } else if (op.op === 'forget') {
        for (const scope of op.scopes) backup.prepare('DELETE FROM idem WHERE scope = ?').run(scope);
      } else {
        for (const owner of backup.prepare('SELECT DISTINCT owner FROM idem').pluck().all() as string[]) {
          backup.prepare('DELETE FROM idem WHERE owner = ? AND at_ms < ?').run(owner, op.cutoffMs[owner] ?? op.defaultCutoffMs);
        }
      }
    }
    for (const c of derived.due) {
      if (c.op === 'set') {
        const row = { owner: c.entry.owner, expires_at_ms: c.entry.expiresAtMs, partition: c.partition, id: c.entry.id, lsn: c.lsn };
        dueSet.run(row.owner, row.expires_at_ms, row.partition, row.id, row.lsn, dueRowChecksum(row));
      }
      else dueDrop.run(c.entry.owner, c.entry.expiresAtMs, c.partition, c.entry.id);
    }
  })();
}

/**
 * Copies a shard's cold, idempotency and expiry rows written up to `lsn` (a running server may be ahead)
 * from `rowsPath`: its derived file, or the shard file itself for a dir no writable open has moved yet.
 */
function copyTiers(backup: Database.Database, rowsPath: string, lsn: number): { cold: number; idem: number; due: number } {
  backup.prepare('ATTACH DATABASE ? AS s').run(rowsPath);
  try {
    const has = (table: string): boolean => backup.prepare("SELECT 1 FROM s.sqlite_master WHERE type = 'table' AND name = ?").get(table) !== undefined;
    // The shard file keeps idempotency records in `idem_log` (by LSN); the backup, by scope, as before.
    const copy = (table: keyof typeof TIER_COLUMNS, from: string): number =>
      has(from) ? backup.prepare(`INSERT OR REPLACE INTO ${table} (${TIER_COLUMNS[table]}) SELECT ${TIER_COLUMNS[table]} FROM s.${from} WHERE lsn <= ?`).run(lsn).changes : 0;
    // Expiry rows of collections still waiting at `lsn` (a row a sweep dropped after it is not copied:
    // that collection had been paid or had failed by then, and restored it may wait without expiring).
    // Every row keeps the checksum it was written with: restore checks it against the row it restores.
    // A file whose idempotency rows name their owner by number: owner and scope are resolved into the
    // backup's text columns, each row keeping its checksum (which covers the resolved fields).
    const idemNumbered = has('idem_log') && idemNumberedIn(backup, 's');
    if (idemNumbered) backup.function('kobo_owner_of_scope', { deterministic: true }, (scope) => ownerOfScope(scope as string));
    const idem = idemNumbered ? backup.prepare(`INSERT OR REPLACE INTO idem (${TIER_COLUMNS.idem}) ${idemBackupSelect('s')}`).run(lsn).changes : copy('idem', has('idem_log') ? 'idem_log' : 'idem');
    const due = has('due') && dueNumbered(backup, 's') ? backup.prepare(`INSERT OR REPLACE INTO due (${TIER_COLUMNS.due}) ${dueBackupSelect('s')}`).run(lsn).changes : copy('due', 'due');
    return { cold: copy('cold', 'cold'), idem, due };
  } finally {
    backup.exec('DETACH DATABASE s');
  }
}
