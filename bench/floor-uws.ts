// The durable floor: a bare uWebSockets.js server that makes each POST durable the way kobo does and does
// nothing else (no auth, routing, validation, ledger, state machines). Spawned by bench/http.bench.ts.
// Modes: `batchrow` writes log v2's one row a batch (kobo's codec) and nothing else; `sqlite` writes the rows
// log version 1 wrote on the request path (WAL record, payment and transaction cold rows with their bodies,
// idempotency row with the reply, expiry row), one sqlite transaction a batch, then fdatasyncs the sqlite
// journal off the thread; `file` appends the same bytes to a plain file, one write a
// batch, then fdatasyncs it; `echo` appends only the request bodies and answers a constant (no JSON at all);
// `derived` is `batchrow` plus the rows log v2 derives for each payment after the fsync, in kobo's own
// tables of a second file (two list rows, two cold rows pointing into the log, an idempotency row, an
// expiry row), a chunk a loop turn as kobo writes them: what kobo's row set costs with none of its logic.
// Either way a reply leaves only after its batch is on disk.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { crc32 } from 'node:zlib';
import { uws, type HttpResponse } from '../src/http/uws.ts';
import { openDatabase } from '../src/store/shard-store.ts';
import { COLD_SQL, IN_LOG_BODY, kindCode } from '../src/store/cold-table.ts';
import { DUE_SQL } from '../src/store/due-log.ts';
import { IDEM_LOG_SQL, IN_LOG_JSON } from '../src/store/idem-log.ts';
import { LIST_SQL } from '../src/store/list-index.ts';
import { DERIVED_CACHE_KIB, DERIVED_TX_ROWS_MAX } from '../src/store/derived-file.ts';
import { DERIVED_CHUNK_ROWS } from '../src/shard/derived-writes.ts';
import { DERIVED_PAGE_SIZE_BYTES } from '../src/store/open-database.ts';
import { listRowChecksum } from '../src/store/row-checks.ts';
import { DUE_TEXT_SQL } from '../src/store/due-log.ts';
import { logSegmentSql, walSegmentSql } from '../src/journal/log-segments.ts';
import { encodeLogBody, logRowChecksum } from '../src/journal/log-record.ts';
import { dueRowChecksum, idemRowChecksum } from '../src/store/row-checks.ts';
import { FrontIdempotencyStore } from '../src/http/idempotency-store.ts';
import { mintId } from '../src/ids.ts';

const MODE = process.argv[2] ?? 'sqlite';
if (MODE !== 'sqlite' && MODE !== 'batchrow' && MODE !== 'derived' && MODE !== 'file' && MODE !== 'echo') throw new Error(`floor-uws: mode must be sqlite, batchrow, derived, file or echo, not ${MODE}`);
const ECHO_REPLY = '{"data":{"object":"ping","received":true}}';
const BODY_BYTES_MAX = 64 * 1024;
const BATCH_MAX = 1024;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kobo-floor-'));

interface Pending {
  res: HttpResponse;
  aborted: boolean;
  reply: string;
  /** The request body (echo mode writes only this). */
  body: Buffer;
}

/** What one POST makes durable, with the sizes kobo's bank-transfer rows have (WAL 417 B, cold 495 + 541 B, reply 679 B). */
interface Rows {
  lsn: number;
  partition: number;
  owner: string;
  scope: string;
  fingerprint: string;
  key: string;
  customerId: string;
  paymentId: string;
  txnId: string;
  payment: string;
  txn: string;
  record: string;
  reply: string;
  atMs: number;
}

function rowsOf(lsn: number, rawBody: Buffer, key: string): Rows {
  const body = JSON.parse(rawBody.toString()) as { customer_id?: unknown; amount_minor?: unknown };
  const atMs = Date.now();
  const partition = 9;
  const paymentId = mintId(partition, atMs);
  const txnId = mintId(partition, atMs);
  const customerId = typeof body.customer_id === 'string' ? body.customer_id : '';
  const amountMinor = typeof body.amount_minor === 'number' ? body.amount_minor : 0;
  const owner = 'test:acct_4f2025bd1dfc';
  const created = new Date(atMs).toISOString();
  const payment = JSON.stringify({
    id: paymentId, owner, customerId, transactionId: txnId, method: 'bank_transfer', amountMinor, currency: 'NGN', status: 'pending',
    provider: { kind: 'sandbox', reference: `${paymentId}:1`, accountNumber: '9912345678', bankName: 'Kobo Sandbox Bank', accountName: 'KOBO/Bench Customer' },
    expiresAtMs: atMs + 86_400_000, attempt: 1, createdAtMs: atMs, updatedAtMs: atMs, metadata: {},
  });
  const txn = JSON.stringify({
    id: txnId, owner, customerId, kind: 'collection', status: 'pending', amountMinor, feeMinor: 0, currency: 'NGN', paymentId,
    reference: `ref_${paymentId}`, narration: 'Bank transfer collection', postings: [], history: [{ status: 'pending', atMs }], createdAtMs: atMs, updatedAtMs: atMs, metadata: {},
  });
  const scope = `${owner}:${key}`;
  // The fingerprint kobo computes for the same request.
  const fingerprint = FrontIdempotencyStore.fingerprint('POST', '/v1/payments', rawBody);
  const record = JSON.stringify([
    { t: 'txn.created', cold: txnId }, { t: 'payment.created', cold: paymentId },
    { t: 'customer.usage', id: customerId, day: Math.floor(atMs / 86_400_000), currency: 'NGN', deltaMinor: amountMinor },
    { t: 'idem.stored', record: { scope, fingerprint, atMs, status: 201 }, inRow: true },
  ]);
  const reply = JSON.stringify({
    data: {
      id: paymentId, object: 'payment', status: 'pending', customer_id: customerId, amount_minor: amountMinor, currency: 'NGN', method: 'bank_transfer',
      transaction_id: txnId, instructions: { bank_name: 'Kobo Sandbox Bank', account_number: '9912345678', account_name: 'KOBO/Bench Customer', expires_at: created },
      created_at: created, updated_at: created, metadata: {},
    },
  });
  return { lsn, partition, owner, scope, fingerprint, key, customerId, paymentId, txnId, payment, txn, record, reply, atMs };
}

/** Writes a batch's rows; returns the file descriptor to fdatasync. */
type Writer = (batch: ReadonlyArray<{ pending: Pending; rows: Rows | null }>, batchNo: number) => number;

/**
 * The idempotency table as version 1 wrote it on the request path (the owner as text in every row), which
 * this floor models; kobo's own rows have since moved to owner numbers and are written after the fsync.
 */
const V1_IDEM_LOG_SQL = `
  CREATE TABLE IF NOT EXISTS idem_log (
    seq INTEGER PRIMARY KEY, lsn INTEGER NOT NULL, partition INTEGER NOT NULL, owner TEXT NOT NULL,
    h INTEGER NOT NULL, scope TEXT NOT NULL, fingerprint TEXT NOT NULL, status INTEGER NOT NULL,
    json TEXT, error TEXT, at_ms INTEGER NOT NULL, crc INTEGER);
  CREATE INDEX IF NOT EXISTS idem_log_age ON idem_log (owner, at_ms, partition, h);`;

function sqliteWriter(): Writer {
  const file = path.join(dir, 'floor.db');
  const db = openDatabase(file, { deferredSync: true });
  db.exec(`${walSegmentSql('wal_1')}; ${COLD_SQL} ${V1_IDEM_LOG_SQL} ${DUE_TEXT_SQL}`);
  const wal = db.prepare('INSERT INTO wal_1 (lsn, partition, batch, body, crc) VALUES (?, ?, ?, ?, ?)');
  const cold = db.prepare('INSERT OR REPLACE INTO cold (kind, id, lsn, partition, body, crc) VALUES (?, ?, ?, ?, ?, ?)');
  const idem = db.prepare('INSERT INTO idem_log (seq, lsn, partition, owner, h, scope, fingerprint, status, json, error, at_ms, crc) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)');
  const due = db.prepare('INSERT INTO due (owner, expires_at_ms, partition, id, lsn, crc) VALUES (?, ?, ?, ?, ?, ?)');
  const write = db.transaction((batch: readonly Rows[], batchNo: number) => {
    for (const r of batch) {
      wal.run(r.lsn, r.partition, batchNo, r.record, crc32(r.record));
      cold.run(0, r.txnId, r.lsn, r.partition, r.txn, crc32(r.txn));
      cold.run(1, r.paymentId, r.lsn, r.partition, r.payment, crc32(r.payment));
      const idemRow = { lsn: r.lsn, partition: r.partition, owner: r.owner, h: r.lsn, scope: r.scope, fingerprint: r.fingerprint, status: 201, json: r.reply, error: null, at_ms: r.atMs };
      idem.run(r.lsn, r.lsn, r.partition, r.owner, r.lsn, r.scope, r.fingerprint, 201, r.reply, null, r.atMs, idemRowChecksum(idemRow));
      const dueRow = { owner: r.owner, expires_at_ms: r.atMs + 86_400_000, partition: r.partition, id: r.paymentId, lsn: r.lsn };
      due.run(dueRow.owner, dueRow.expires_at_ms, dueRow.partition, dueRow.id, dueRow.lsn, dueRowChecksum(dueRow));
    }
  });
  const journal = fs.openSync(`${file}-wal`, 'r');
  return (batch, batchNo) => {
    write(batch.map((item) => item.rows!), batchNo);
    return journal;
  };
}

/**
 * The floor of log v2's design: each command's ~400 B JSON record goes into ONE sqlite row per batch
 * (kobo's own row codec, deflated), nothing else is written on the request path.
 */
function batchRowWriter(): Writer {
  const file = path.join(dir, 'floor.db');
  const db = openDatabase(file, { deferredSync: true });
  db.exec(logSegmentSql('log_1'));
  const insert = db.prepare('INSERT INTO log_1 (lsn_first, n, batch, body, crc) VALUES (?, ?, ?, ?, ?)');
  const journal = fs.openSync(`${file}-wal`, 'r');
  return (batch, batchNo) => {
    const records = batch.map((item) => ({ partition: item.rows!.partition, body: item.rows!.record }));
    const body = encodeLogBody(records);
    const lsnFirst = batch[0]!.rows!.lsn;
    insert.run(lsnFirst, records.length, batchNo, body, logRowChecksum(lsnFirst, records.length, batchNo, body));
    return journal;
  };
}

/** Payments a loop turn derives: kobo's chunk of rows, six rows a payment. */
const DERIVED_CHUNK_PAYMENTS = Math.floor(DERIVED_CHUNK_ROWS / 6);

/**
 * The rows log v2 derives from a bank-transfer payment's record once it is durable, written as kobo writes
 * them: into the open transaction of the derived file, a chunk a turn, committed at a row bound with no
 * fsync of its own (an image makes them durable; this floor never takes one).
 */
function derivedRows(): (durable: readonly Rows[]) => void {
  const db = openDatabase(path.join(dir, 'floor-lists.db'), { deferredSync: true, pageSizeBytes: DERIVED_PAGE_SIZE_BYTES });
  // kobo checkpoints this file from a worker; the floor never checkpoints it (a run is seconds long), so it
  // pays less than kobo does: a floor, not a model.
  db.pragma('wal_autocheckpoint = 0');
  db.pragma(`cache_size = -${DERIVED_CACHE_KIB}`);
  db.exec(`${LIST_SQL}\n${IDEM_LOG_SQL}\n${DUE_SQL}\n${COLD_SQL}`);
  const owner = db.prepare('INSERT INTO list_owners (owner) VALUES (?)').run('test:acct_4f2025bd1dfc').lastInsertRowid as number;
  db.prepare('INSERT INTO owner_numbers (n, owner, crc) VALUES (?, ?, 0)').run(owner, 'test:acct_4f2025bd1dfc');
  const customerNumbers = new Map<string, number>();
  const customer = db.prepare('INSERT INTO list_customers (id, crc) VALUES (?, 0)');
  const list = db.prepare('INSERT OR REPLACE INTO lists (o, k, id, c, status, body, lsn, crc) VALUES (?, ?, ?, ?, ?, ?, ?, ?)');
  const cold = db.prepare('INSERT OR REPLACE INTO cold (kind, id, lsn, partition, body, crc) VALUES (?, ?, ?, ?, ?, ?)');
  const idem = db.prepare('INSERT INTO idem_log (seq, lsn, partition, o, h, key, fingerprint, status, json, error, at_ms, crc) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (seq) DO NOTHING');
  const due = db.prepare('INSERT INTO due (o, expires_at_ms, partition, id, lsn, crc) VALUES (?, ?, ?, ?, ?, ?)');
  const emptyCrc = crc32(IN_LOG_BODY);
  let waiting: Rows[] = [];
  let head = 0;
  let scheduled = false;
  let txRows = 0;
  const writeChunk = (): void => {
    scheduled = false;
    if (txRows === 0) db.exec('BEGIN');
    const end = Math.min(waiting.length, head + DERIVED_CHUNK_PAYMENTS);
    for (; head < end; head += 1) {
      const r = waiting[head]!;
      let c = customerNumbers.get(r.customerId);
      if (c === undefined) {
        c = Number(customer.run(r.customerId).lastInsertRowid);
        customerNumbers.set(r.customerId, c);
      }
      for (const [k, id] of [[2, r.txnId], [3, r.paymentId]] as const) {
        const row = { o: owner, k, id, c, status: 'pending', body: null, lsn: r.lsn };
        list.run(row.o, row.k, row.id, row.c, row.status, row.body, row.lsn, listRowChecksum(row));
      }
      cold.run(kindCode('txn'), r.txnId, r.lsn, r.partition, IN_LOG_BODY, emptyCrc);
      cold.run(kindCode('payment'), r.paymentId, r.lsn, r.partition, IN_LOG_BODY, emptyCrc);
      const idemRow = { lsn: r.lsn, partition: r.partition, owner: r.owner, h: r.lsn, scope: r.scope, fingerprint: r.fingerprint, status: 201, json: IN_LOG_JSON, error: null, at_ms: r.atMs };
      idem.run(r.lsn, r.lsn, r.partition, owner, r.lsn, r.key, r.fingerprint, 201, IN_LOG_JSON, null, r.atMs, idemRowChecksum(idemRow));
      const dueRow = { owner: r.owner, expires_at_ms: r.atMs + 86_400_000, partition: r.partition, id: r.paymentId, lsn: r.lsn };
      due.run(owner, dueRow.expires_at_ms, dueRow.partition, dueRow.id, dueRow.lsn, dueRowChecksum(dueRow));
      txRows += 6;
    }
    if (txRows >= DERIVED_TX_ROWS_MAX) {
      db.exec('COMMIT');
      txRows = 0;
    }
    if (head >= waiting.length) {
      waiting = [];
      head = 0;
    } else schedule();
  };
  const schedule = (): void => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(writeChunk);
  };
  return (durable) => {
    for (const r of durable) waiting.push(r);
    schedule();
  };
}

function fileWriter(): Writer {
  const fd = fs.openSync(path.join(dir, 'floor.log'), 'a');
  return (batch) => {
    const parts: string[] = [];
    for (const { rows: r } of batch) parts.push(r!.record, r!.txn, r!.payment, r!.scope, r!.fingerprint, r!.reply, '\n');
    fs.writeSync(fd, Buffer.from(parts.join('')));
    return fd;
  };
}

function echoWriter(): Writer {
  const fd = fs.openSync(path.join(dir, 'floor.log'), 'a');
  return (batch) => {
    fs.writevSync(fd, batch.map((item) => item.pending.body));
    return fd;
  };
}

const writer = MODE === 'sqlite' ? sqliteWriter() : MODE === 'batchrow' || MODE === 'derived' ? batchRowWriter() : MODE === 'file' ? fileWriter() : echoWriter();
/** `derived`: takes the rows of records the log made durable. */
const derive = MODE === 'derived' ? derivedRows() : null;
let queue: Array<{ pending: Pending; rows: Rows | null }> = [];
let lsnNext = 1;
let batchNext = 1;
let flushScheduled = false;
/** Batches written and not yet synced, oldest first; one fdatasync at a time covers all written before it. */
let unsynced: Array<Array<{ pending: Pending; rows: Rows | null }>> = [];
let syncing = false;
let syncFd = -1;

function answer(pending: Pending): void {
  if (pending.aborted) return;
  pending.res.cork(() => {
    pending.res.writeStatus('201 Created').writeHeader('Content-Type', 'application/json').end(pending.reply);
  });
}

function syncIfBehind(): void {
  if (syncing || unsynced.length === 0) return;
  syncing = true;
  const covered = unsynced;
  unsynced = [];
  fs.fdatasync(syncFd, (error) => {
    if (error !== null) throw error;
    syncing = false;
    for (const batch of covered) {
      for (const item of batch) answer(item.pending);
      if (derive !== null) derive(batch.map((item) => item.rows!));
    }
    syncIfBehind();
  });
}

function flush(): void {
  flushScheduled = false;
  const taken = queue.splice(0, BATCH_MAX);
  syncFd = writer(taken, batchNext++);
  unsynced.push(taken);
  syncIfBehind();
  if (queue.length > 0) {
    flushScheduled = true;
    setImmediate(flush);
  }
}

const app = uws.App();
app.post('/*', (res, req) => {
  const key = req.getHeader('idempotency-key');
  const pending: Pending = { res, aborted: false, reply: ECHO_REPLY, body: Buffer.alloc(0) };
  res.onAborted(() => {
    pending.aborted = true;
  });
  const chunks: Buffer[] = [];
  let received = 0;
  res.onData((chunk, isLast) => {
    received += chunk.byteLength;
    if (received > BODY_BYTES_MAX) {
      pending.aborted = true;
      res.close();
      return;
    }
    chunks.push(Buffer.from(chunk.slice(0)));
    if (!isLast || pending.aborted) return;
    pending.body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
    const rows = MODE === 'echo' ? null : rowsOf(lsnNext++, pending.body, key);
    if (rows !== null) pending.reply = rows.reply;
    queue.push({ pending, rows });
    if (!flushScheduled) {
      flushScheduled = true;
      setImmediate(flush);
    }
  });
});

app.listen('127.0.0.1', 0, (socket) => {
  if (socket === false) {
    process.stderr.write('floor-uws: cannot listen\n');
    process.exit(1);
  }
  process.stdout.write(`listening on http://127.0.0.1:${uws.us_socket_local_port(socket)}\n`);
});
process.on('SIGTERM', () => {
  fs.rmSync(dir, { recursive: true, force: true });
  process.exit(0);
});
