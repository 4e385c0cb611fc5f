// Micro-benchmarks of the shard's hot path: ledger ops, machine steps, command execution, WAL group
// commit (fsync-bound, synchronous=FULL), and snapshot encode/restore of a 10k-customer partition.
// Run: npx tsx bench/micro.bench.ts. Each group has a baseline measured in the same run; the "× base"
// column is mean time over the baseline's mean time. Results also go to bench/.out/micro.json.
// The process pins itself to core 1, so the hop group's two threads share one core as kobo's do on core 0.
import fs from 'node:fs';
import { Worker } from 'node:worker_threads';
import os from 'node:os';
import path from 'node:path';
import { Bench, type Task } from 'tinybench';
import { ulid } from 'ulid';
import { randomFillSync } from 'node:crypto';
import { applyLedgerOp, emptyLedger, systemAccountId, newAccount, type LedgerState } from '../src/ledger/ledger.ts';
import { nextStatus } from '../machines/step.ts';
import { mintId } from '../src/ids.ts';
import { transactionMachine } from '../machines/transaction.machine.ts';
import { execute } from '../src/shard/dispatch.ts';
import type { Command } from '../src/shard/protocol.ts';
import { emptyPartition, type PartitionState } from '../src/shard/state.ts';
import { ShardStore } from '../src/store/shard-store.ts';
import { compressImageSync, decompressImage } from '../src/store/snapshot.ts';
import { decodePartition, encodePartition } from '../src/shard/partition-image.ts';
import { addCustomer, addFundedWallet, contextOf, CURRENCY, ownerOf } from './lib/fixtures.ts';
import { fmt, machine, table, writeResult } from './lib/report.ts';
import { machineBusySeconds, pinSelf, waitForQuiet } from './lib/proc.ts';

const NOW_MS = Date.UTC(2025, 0, 15, 12);
const OWNER = ownerOf('test', 'acct_bench0001');
const SNAPSHOT_CUSTOMERS = 10_000;

interface Row {
  group: string;
  name: string;
  opsPerSec: number;
  meanUs: number;
  p99Us: number;
  timesBaseline: number;
  samples: number;
  note: string;
}

interface Spec {
  name: string;
  /** Operations per call of `fn`: sub-microsecond ops run in a loop so the timer's own cost does not dominate. */
  inner: number;
  /** Items per operation, e.g. records per WAL batch (shown as items/s in the note). */
  items?: number;
  note?: string;
  fn: () => void | Promise<void>;
}

/** This process runs on core 1 only (pinned in main), so only that core's other work can disturb it. */
const BENCH_CORE = 1;
/** Other processes' CPU on BENCH_CORE, in cores, over each group (the machine can be shared with other work). */
const foreignCoresByGroup = new Map<string, number>();
const FOREIGN_CORES_MAX = 0.2;
const ATTEMPTS_MAX = 3;

/** Runs the group's tasks; a run during which other processes were busy is repeated and the cleanest kept. */
async function runGroup(group: string, options: { timeMs: number; iterations: number }, specs: Spec[]): Promise<Row[]> {
  let kept: { bench: Bench; foreign: number } | undefined;
  for (let attempt = 1; attempt <= ATTEMPTS_MAX; attempt += 1) {
    const bench = new Bench({ time: options.timeMs, iterations: options.iterations, warmupTime: 200, throws: true });
    for (const spec of specs) bench.add(spec.name, spec.fn);
    await waitForQuiet({ busyCoresMax: FOREIGN_CORES_MAX, waitMsMax: 120_000, core: BENCH_CORE });
    const busyBefore = machineBusySeconds(BENCH_CORE);
    const selfBefore = process.cpuUsage();
    const startedMs = Date.now();
    await bench.run();
    const self = process.cpuUsage(selfBefore);
    const foreign = Math.max(0, machineBusySeconds(BENCH_CORE) - busyBefore - (self.user + self.system) / 1e6) / ((Date.now() - startedMs) / 1000);
    if (kept === undefined || foreign < kept.foreign) kept = { bench, foreign };
    if (foreign <= FOREIGN_CORES_MAX) break;
    process.stderr.write(`${group}: other processes used ${foreign.toFixed(2)} of core ${BENCH_CORE} meanwhile (attempt ${attempt} of ${ATTEMPTS_MAX})\n`);
  }
  const bench = kept!.bench;
  foreignCoresByGroup.set(group, kept!.foreign);
  const rows: Row[] = [];
  let baselineMeanUs = 0;
  bench.tasks.forEach((task: Task, i) => {
    const spec = specs[i]!;
    const result = task.result;
    if (result === undefined || result.error !== undefined) throw new Error(`${spec.name}: ${result?.error?.message ?? 'no result'}`);
    const meanUs = (result.latency.mean * 1000) / spec.inner;
    const p99Us = ((result.latency.p99 ?? Number.NaN) * 1000) / spec.inner;
    if (i === 0) baselineMeanUs = meanUs;
    const opsPerSec = 1e6 / meanUs;
    const notes = [spec.note ?? ''];
    if (spec.inner > 1) notes.push(`loop of ${spec.inner}, p99 of loop means`);
    if (spec.items !== undefined) notes.push(`${fmt(opsPerSec * spec.items, 0)} records/s`);
    rows.push({
      group,
      name: spec.name,
      opsPerSec,
      meanUs,
      p99Us,
      timesBaseline: meanUs / baselineMeanUs,
      samples: result.latency.samples.length,
      note: notes.filter((n) => n !== '').join('; '),
    });
  });
  return rows;
}

// ---- in-memory: ledger, machines, command execution ---------------------------------------------

function fundedLedger(): { ledger: LedgerState; walletId: string } {
  const ledger = emptyLedger();
  const walletId = '01JHBENCH0000000000000000W';
  ledger.accounts.set(walletId, newAccount(walletId, 'wallet', CURRENCY));
  applyLedgerOp(ledger, { op: 'post', id: 'fund', txn: 'fund', dr: systemAccountId('collection_clearing', CURRENCY), cr: walletId, amt: 1_000_000_000, cur: CURRENCY });
  return { ledger, walletId };
}

function oneCustomerPartition(): { state: PartitionState; customerId: string } {
  const state = emptyPartition(7);
  const ctx = contextOf(state, NOW_MS);
  const customer = addCustomer(ctx, { owner: OWNER, seq: 1, tier: 'tier_3' });
  addFundedWallet(ctx, customer);
  return { state, customerId: customer.id };
}

function txnCreate(customerId: string, partition: number, idemScope: string | null): Command {
  return {
    k: 'txn.create',
    owner: OWNER,
    nowMs: NOW_MS,
    partition,
    customerScope: null,
    ...(idemScope === null ? {} : { idem: { scope: idemScope, fingerprint: 'f'.repeat(64) } }),
    body: { type: 'payment', customerId, amountMinor: 100, currency: CURRENCY, reference: null },
  };
}

const PRNG_POOL = Buffer.alloc(4096);
let prngAt = PRNG_POOL.length;
/** Random bytes drawn from one 4 KiB crypto fill instead of one getRandomValues call per character. */
function pooledPrng(): number {
  if (prngAt >= PRNG_POOL.length) {
    randomFillSync(PRNG_POOL);
    prngAt = 0;
  }
  return PRNG_POOL[prngAt++]! / 256;
}

function inMemorySpecs(): Spec[] {
  const LOOP = 1000;
  const map = new Map<string, { n: number }>();
  const keys = Array.from({ length: LOOP }, (_, i) => `key-${i}`);
  for (const key of keys) map.set(key, { n: 0 });

  const posting = fundedLedger();
  const post = { op: 'post' as const, id: 'p', txn: 't', dr: systemAccountId('collection_clearing', CURRENCY), cr: posting.walletId, amt: 1, cur: CURRENCY };
  // Amounts of 1 keep every sum a small integer (no heap numbers) over the whole run, as real balances are.
  const holding = fundedLedger();
  const payable = systemAccountId('merchant_payable', CURRENCY);
  const holdIds = Array.from({ length: LOOP }, (_, i) => `hold-${i}`);

  const submit = { type: 'submit' as const, atMs: NOW_MS };
  const retry = { type: 'retry' as const, atMs: NOW_MS };

  const exec = oneCustomerPartition();
  const execIdem = oneCustomerPartition();
  const execWal = oneCustomerPartition();
  let seq = 0;

  return [
    {
      name: 'baseline: Map get + set',
      inner: LOOP,
      fn: () => {
        for (const key of keys) map.get(key)!.n += 1;
      },
    },
    {
      name: 'ledger post (applyLedgerOp)',
      inner: LOOP,
      fn: () => {
        for (let i = 0; i < LOOP; i += 1) applyLedgerOp(posting.ledger, post);
      },
    },
    {
      name: 'ledger hold + commit',
      inner: LOOP,
      fn: () => {
        for (const id of holdIds) {
          applyLedgerOp(holding.ledger, { op: 'hold', id, txn: 't', dr: holding.walletId, cr: payable, amt: 1, cur: CURRENCY });
          applyLedgerOp(holding.ledger, { op: 'commit', id });
        }
      },
    },
    {
      name: 'mintId (src/ids.ts, ulid per call)',
      inner: 1,
      note: 'every new id; a wallet payment mints 3',
      fn: () => {
        if (mintId(7, NOW_MS).length !== 26) throw new Error('bad id');
      },
    },
    {
      name: 'reference: ulid with a pooled crypto prng',
      inner: 1,
      note: 'not used by src; shows what minting can cost',
      fn: () => {
        if (ulid(NOW_MS, pooledPrng).length !== 26) throw new Error('bad id');
      },
    },
    {
      name: 'machine: txn pending -submit-> (nextStatus)',
      inner: 1,
      fn: () => {
        if (nextStatus(transactionMachine, 'pending', { failureCode: null }, submit) !== 'processing') throw new Error('bad step');
      },
    },
    {
      name: 'machine: txn failed -retry-> (guarded)',
      inner: 1,
      fn: () => {
        if (nextStatus(transactionMachine, 'failed', { failureCode: 'PROVIDER_ERROR' }, retry) !== 'pending') throw new Error('bad step');
      },
    },
    {
      name: 'execute txn.create (no idempotency key)',
      inner: 1,
      fn: () => {
        const r = execute(contextOf(exec.state, NOW_MS), txnCreate(exec.customerId, exec.state.partition, null));
        if (r.reply.status !== 201) throw new Error(`execute: ${r.reply.status} ${r.reply.error?.code ?? ''}`);
      },
    },
    {
      name: 'execute txn.create + idempotency record',
      inner: 1,
      note: 'as POST /v1/transactions sends it',
      fn: () => {
        seq += 1;
        const r = execute(contextOf(execIdem.state, NOW_MS), txnCreate(execIdem.customerId, execIdem.state.partition, `test:acct:k${seq}`));
        if (r.reply.status !== 201) throw new Error(`execute: ${r.reply.status} ${r.reply.error?.code ?? ''}`);
      },
    },
    {
      name: 'execute + idem + WAL body (JSON.stringify)',
      inner: 1,
      note: 'shard CPU per command before fsync',
      fn: () => {
        seq += 1;
        const r = execute(contextOf(execWal.state, NOW_MS), txnCreate(execWal.customerId, execWal.state.partition, `test:acct:k${seq}`));
        if (JSON.stringify(r.events).length === 0) throw new Error('empty');
      },
    },
  ];
}

// ---- WAL group commit ----------------------------------------------------------------------------

function sampleWalBody(): string {
  const { state, customerId } = oneCustomerPartition();
  const r = execute(contextOf(state, NOW_MS), txnCreate(customerId, state.partition, 'test:acct:k-body'));
  return JSON.stringify(r.events);
}

function walSpecs(dir: string, stores: ShardStore[]): Spec[] {
  const body = sampleWalBody();
  const raw = fs.openSync(path.join(dir, 'raw.bin'), 'a');
  const rawBuffer = Buffer.from(body);
  const batch = (n: number): Spec => {
    const store = new ShardStore(path.join(dir, `wal-${n}.db`));
    stores.push(store);
    const records = Array.from({ length: n }, (_, i) => ({ partition: i % 64, body }));
    return { name: `ShardStore.appendBatch ${n} record(s)`, inner: 1, items: n, fn: () => void store.appendBatch(records) };
  };
  return [
    {
      name: 'baseline: write + fdatasync (raw file)',
      inner: 1,
      note: `${rawBuffer.length} B`,
      fn: () => {
        fs.writeSync(raw, rawBuffer);
        fs.fdatasyncSync(raw);
      },
    },
    { ...batch(1), note: `${body.length} B/record` },
    batch(64),
    batch(512),
  ];
}

// ---- front end ↔ shard hop (MessagePort round trip, as pool.ts and worker.ts do per request) -------

const HOP_IN_FLIGHT = 64;

const ECHO_WORKER = `
const { parentPort } = require('node:worker_threads');
parentPort.on('message', (m) => parentPort.postMessage({ type: 'reply', n: m.n, reply: { status: 200, json: m.cmd.json } }));
`;

function hopSpecs(workers: Worker[]): Spec[] {
  const worker = new Worker(ECHO_WORKER, { eval: true });
  workers.push(worker);
  // A wallet.get command as the front end sends it, and a reply the size of a wallet view.
  const json = JSON.stringify({ data: { id: '01JHBENCH0000000000000000W', object: 'wallet', customer_id: '01JHBENCH0000000000000000C', currency: 'NGN', balance_minor: 499_999_900, available_minor: 499_999_900, held_minor: 0, incoming_minor: 0, created_at: '2025-01-15T12:00:00.000Z', updated_at: '2025-01-15T12:00:01.000Z' } });
  const command = (n: number) => ({ type: 'command', n, cmd: { k: 'wallet.get', id: '01JHBENCH0000000000000000W', owner: OWNER, nowMs: NOW_MS, partition: 7, customerScope: null, json } });
  const waiting = new Map<number, () => void>();
  worker.on('message', (m: { n: number }) => {
    const done = waiting.get(m.n);
    waiting.delete(m.n);
    done?.();
  });
  let n = 0;
  const roundTrips = (count: number): Promise<void> =>
    new Promise((resolve) => {
      let left = count;
      for (let i = 0; i < count; i += 1) {
        n += 1;
        waiting.set(n, () => {
          left -= 1;
          if (left === 0) resolve();
        });
        worker.postMessage(command(n));
      }
    });
  return [
    { name: 'baseline: structuredClone of command + reply', inner: 1, fn: () => void structuredClone([command(0), { type: 'reply', n: 0, reply: { status: 200, json } }]) },
    { name: 'postMessage round trip, 1 in flight', inner: 1, note: 'latency of one hop and back', fn: () => roundTrips(1) },
    { name: `postMessage round trip, ${HOP_IN_FLIGHT} in flight`, inner: HOP_IN_FLIGHT, note: 'per message, as under wrk -c64', fn: () => roundTrips(HOP_IN_FLIGHT) },
  ];
}

// ---- snapshots -----------------------------------------------------------------------------------

function bigPartition(): PartitionState {
  const state = emptyPartition(11);
  const ctx = contextOf(state, NOW_MS);
  for (let i = 0; i < SNAPSHOT_CUSTOMERS; i += 1) {
    const customer = addCustomer(ctx, { owner: OWNER, seq: i, tier: 'tier_3' });
    addFundedWallet(ctx, customer);
    const r = execute(ctx, txnCreate(customer.id, state.partition, `test:acct:snap-${i}`));
    if (r.reply.status !== 201) throw new Error('bigPartition: txn.create failed');
  }
  return state;
}

function snapshotSpecs(): { specs: Spec[]; jsonBytes: number; gzipBytes: number } {
  const state = bigPartition();
  const json = encodePartition(state);
  const gz = compressImageSync(json);
  const sizes = `${(json.length / 1e6).toFixed(1)} MB JSON, ${(gz.length / 1e6).toFixed(2)} MB gzip`;
  const specs: Spec[] = [
    { name: 'baseline: gzipSync of the image only', inner: 1, note: sizes, fn: () => void compressImageSync(json) },
    { name: 'encodePartition only (JSON)', inner: 1, fn: () => void encodePartition(state) },
    { name: 'snapshot encode: encodePartition + gzip', inner: 1, fn: () => void compressImageSync(encodePartition(state)) },
    { name: 'gunzip only', inner: 1, fn: () => void decompressImage(gz) },
    { name: 'decodePartition only', inner: 1, fn: () => void decodePartition(json) },
    {
      name: 'snapshot restore: gunzip + decodePartition',
      inner: 1,
      fn: () => {
        if (decodePartition(decompressImage(gz)).customers.size !== SNAPSHOT_CUSTOMERS) throw new Error('restore lost customers');
      },
    },
  ];
  return { specs, jsonBytes: json.length, gzipBytes: gz.length };
}

async function main(): Promise<void> {
  const m = machine();
  await pinSelf(BENCH_CORE);
  process.stdout.write(`micro benchmarks — ${m.nproc} cores, ${m.cpu}, node ${m.node}; this process pinned to core ${BENCH_CORE}\n\n`);
  const rows: Row[] = [];
  rows.push(...(await runGroup('in-memory', { timeMs: 1000, iterations: 64 }, inMemorySpecs())));

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kobo-bench-wal-'));
  const stores: ShardStore[] = [];
  try {
    rows.push(...(await runGroup('WAL (synchronous=FULL)', { timeMs: 2000, iterations: 32 }, walSpecs(dir, stores))));
  } finally {
    for (const store of stores) store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }

  const workers: Worker[] = [];
  try {
    rows.push(...(await runGroup('front end ↔ shard hop (2 threads, 1 core)', { timeMs: 1000, iterations: 64 }, hopSpecs(workers))));
  } finally {
    for (const worker of workers) await worker.terminate();
  }

  const snapshot = snapshotSpecs();
  rows.push(...(await runGroup(`snapshot (${SNAPSHOT_CUSTOMERS} customers+wallets+txns)`, { timeMs: 3000, iterations: 10 }, snapshot.specs)));

  let group = '';
  const out: string[][] = [['task', 'ops/s', 'mean µs', 'p99 µs', '× base', 'samples', 'note']];
  for (const row of rows) {
    if (row.group !== group) {
      group = row.group;
      out.push([`[${group}] other processes on core ${BENCH_CORE}: ${(foreignCoresByGroup.get(group) ?? 0).toFixed(2)}`, '', '', '', '', '', '']);
    }
    out.push([`  ${row.name}`, fmt(row.opsPerSec, 0), fmt(row.meanUs, 3), fmt(row.p99Us, 3), fmt(row.timesBaseline, 2), String(row.samples), row.note]);
  }
  process.stdout.write(`${table(out)}\n`);
  const file = writeResult('micro', { rows, foreignCoresByGroup: Object.fromEntries(foreignCoresByGroup), snapshot: { customers: SNAPSHOT_CUSTOMERS, jsonBytes: snapshot.jsonBytes, gzipBytes: snapshot.gzipBytes } });
  process.stdout.write(`\nwritten ${path.relative(process.cwd(), file)}\n`);
}

await main();
