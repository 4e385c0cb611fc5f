// What the rows log v2 derives from one bank-transfer payment cost to write, through kobo's own writers
// (ListIndex, ColdTable, IdemLog, DueLog) into a derived file laid out as kobo's: two list rows (three
// b-trees each), two cold rows pointing into the log, one idempotency row, one expiry row. One
// transaction holds DERIVED_TX_ROWS_MAX rows, as in the shard; the file is never checkpointed during the
// run (kobo does that from a worker), so this is a floor of the rows' cost, not a model of the shard.
// The idempotency record carries its scope's hash, as the front end sends it with each command.
// Run: npx tsx bench/derived-rows.bench.ts [--payments 100000]. Pinned to core 1 like the other micro-benches.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ColdTable, COLD_SQL, type ColdRow } from '../src/store/cold-table.ts';
import { DERIVED_CACHE_KIB, DERIVED_TX_ROWS_MAX } from '../src/store/derived-file.ts';
import { DERIVED_CHUNK_ROWS } from '../src/shard/derived-writes.ts';
import { DueLog, DUE_SQL, type DueChange } from '../src/store/due-log.ts';
import { IdemLog, IDEM_LOG_SQL, type IdemChange } from '../src/store/idem-log.ts';
import { ListIndex, LIST_SQL, type ListChange } from '../src/store/list-index.ts';
import { DERIVED_PAGE_SIZE_BYTES, openDatabase } from '../src/store/open-database.ts';
import { mintId } from '../src/ids.ts';
import { scopeHash } from '../src/store/scope-hash.ts';
import { flag, fmt, median, table, writeResult } from './lib/report.ts';
import { CUSTOMERS } from './lib/http-seed.ts';
import { pinSelf } from './lib/proc.ts';

const PAYMENTS = Number(flag('payments', '100000'));
if (!(Number.isSafeInteger(PAYMENTS) && PAYMENTS >= 1_000 && PAYMENTS <= 2_000_000)) throw new Error('--payments takes 1000..2000000');
const OWNER = 'test:acct_4f2025bd1dfc';
const PARTITION = 9;
const ROUNDS = 3;

interface Payment {
  list: ListChange[];
  cold: ColdRow[];
  idem: IdemChange[];
  due: DueChange[];
}

/** The rows a pending bank-transfer payment derives, as the shard's passivation hands them over. */
function paymentRows(i: number, atMs: number): Payment {
  const paymentId = mintId(PARTITION, atMs);
  const txnId = mintId(PARTITION, atMs);
  const customerId = `01JHBENCH${String(i % CUSTOMERS).padStart(16, '0')}C`;
  const lsn = i + 1;
  const scope = `${OWNER}:bench-${i}`;
  return {
    list: [
      { kind: 'transaction', id: txnId, owner: OWNER, customerId, status: 'pending', body: null, lsn },
      { kind: 'payment', id: paymentId, owner: OWNER, customerId, status: 'pending', body: null, lsn },
    ],
    cold: [
      { kind: 'txn', id: txnId, lsn, partition: PARTITION, body: '', inLog: true },
      { kind: 'payment', id: paymentId, lsn, partition: PARTITION, body: '', inLog: true },
    ],
    idem: [{ lsn, partition: PARTITION, op: { op: 'put', record: { scope, fingerprint: 'a3f1c9e0b2d4f6a8c0e2b4d6f8a0c2e4', atMs, status: 201, h: scopeHash(scope) } }, inLog: true }],
    due: [{ op: 'set', entry: { id: paymentId, owner: OWNER, expiresAtMs: atMs + 86_400_000 }, lsn, partition: PARTITION }],
  };
}

type Part = 'list' | 'cold' | 'idem' | 'due';
const PARTS: Part[] = ['list', 'cold', 'idem', 'due'];

/** One round: every payment's rows into a fresh file; µs a payment by part and for the commits. */
function round(dir: string, payments: readonly Payment[]): Record<Part | 'commit', number> {
  const file = path.join(dir, `derived-${Date.now()}.db`);
  const db = openDatabase(file, { deferredSync: true, pageSizeBytes: DERIVED_PAGE_SIZE_BYTES });
  db.pragma(`cache_size = -${DERIVED_CACHE_KIB}`);
  db.pragma('wal_autocheckpoint = 0');
  db.exec(`${LIST_SQL}\n${IDEM_LOG_SQL}\n${DUE_SQL}\n${COLD_SQL}`);
  const index = new ListIndex(db);
  const cold = new ColdTable(db);
  const idem = new IdemLog(db);
  const due = new DueLog(db);
  const write: Record<Part, (p: Payment) => void> = {
    list: (p) => index.apply(p.list, []),
    cold: (p) => cold.write(p.cold),
    idem: (p) => void idem.apply(p.idem),
    due: (p) => due.apply(p.due),
  };
  const ns: Record<Part | 'commit', number> = { list: 0, cold: 0, idem: 0, due: 0, commit: 0 };
  // A chunk a turn, as the shard writes them: each part for the chunk's payments in turn.
  const chunk = Math.floor(DERIVED_CHUNK_ROWS / 6);
  let txRows = 0;
  try {
    for (let start = 0; start < payments.length; start += chunk) {
      if (txRows === 0) db.exec('BEGIN');
      const end = Math.min(payments.length, start + chunk);
      for (const part of PARTS) {
        const t0 = process.hrtime.bigint();
        for (let i = start; i < end; i += 1) write[part](payments[i]!);
        ns[part] += Number(process.hrtime.bigint() - t0);
      }
      txRows += (end - start) * 6;
      if (txRows >= DERIVED_TX_ROWS_MAX || end === payments.length) {
        const t0 = process.hrtime.bigint();
        db.exec('COMMIT');
        ns.commit += Number(process.hrtime.bigint() - t0);
        txRows = 0;
      }
    }
  } finally {
    db.close();
    for (const suffix of ['', '-wal', '-shm']) fs.rmSync(`${file}${suffix}`, { force: true });
  }
  const perPayment = { ...ns };
  for (const key of Object.keys(perPayment) as Array<Part | 'commit'>) perPayment[key] = ns[key] / 1e3 / payments.length;
  return perPayment;
}

async function main(): Promise<void> {
  await pinSelf(1);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kobo-bench-derived-'));
  try {
    const atMs = Date.now();
    const payments = Array.from({ length: PAYMENTS }, (_, i) => paymentRows(i, atMs + i));
    const rounds = Array.from({ length: ROUNDS }, () => round(dir, payments));
    const rows = [['rows of one payment', 'µs a payment (median of 3)', 'rounds']];
    let total = 0;
    for (const key of [...PARTS, 'commit'] as const) {
      const values = rounds.map((r) => r[key]);
      total += median(values);
      const label = { list: 'list rows (2; three b-trees each)', cold: 'cold rows (2; point into the log)', idem: 'idempotency row (1; two b-trees)', due: 'expiry row (1)', commit: `commits (one a ${DERIVED_TX_ROWS_MAX} rows)` }[key];
      rows.push([label, fmt(median(values), 2), values.map((v) => fmt(v, 2)).join(' / ')]);
    }
    rows.push(['all six rows', fmt(total, 2), '']);
    process.stdout.write(`derived rows of a bank-transfer payment, ${PAYMENTS.toLocaleString('en-US')} payments a round, ${CUSTOMERS} customers\n\n${table(rows)}\n`);
    const out = writeResult('derived-rows', { payments: PAYMENTS, customers: CUSTOMERS, rounds, medianTotalUs: total });
    process.stdout.write(`\nwritten ${path.relative(process.cwd(), out)}\n`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

await main();
