// What history costs: N wallet payments (each created with an Idempotency-Key and settled by the rail)
// run through the shard's own execute → passivate → group commit into a real shard file, then: heap
// retained per finished payment (after full GC), the front-end idempotency index per key, a
// partition's snapshot image before and after, disk per payment, and restart (recovery) time.
// Run: node --expose-gc --import tsx bench/history.bench.ts [--payments N] [--retain R] (defaults 1,000,000 and
// the server's default WAL retention, 100,000 records).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PARTITIONS } from '../src/config.ts';
import { execute } from '../src/shard/dispatch.ts';
import { Passivation } from '../src/shard/passivate.ts';
import { emptyPartition, type PartitionState } from '../src/shard/state.ts';
import { ShardStore } from '../src/store/shard-store.ts';
import { DERIVED_PENDING_WEIGHT_MAX } from '../src/store/derived-rows.ts';
import { recoverShard, tiersOf } from '../src/shard/recovery.ts';
import { compressImageSync, snapshotRow } from '../src/store/snapshot.ts';
import { encodePartition } from '../src/shard/partition-image.ts';
import { packIdemAt } from '../src/store/tiers.ts';
import { IdempotencyIndex } from '../src/http/idempotency.ts';
import { scopeHash } from '../src/store/scope-hash.ts';
import type { Command } from '../src/shard/protocol.ts';
import { addCustomer, addFundedWallet, contextOf, ownerOf } from './lib/fixtures.ts';
import { fmt, heapAfterGc, machine, table, writeResult } from './lib/report.ts';

const NOW_MS = Date.UTC(2026, 10, 23, 12);
const CUSTOMERS_PER_PARTITION = 16;
const BATCH_PAYMENTS = 500;
/** 50 batches of 500 payments = 50,000 WAL records: the server's default snapshot cadence. */
const SNAPSHOT_EVERY_BATCHES = 50;
const TARGET_BYTES_PER_PAYMENT_MAX = 200;
const TARGET_RESTART_MS_MAX = 5_000;

function retainArg(): number {
  const at = process.argv.indexOf('--retain');
  return at < 0 ? 100_000 : Number(process.argv[at + 1]);
}

function paymentsArg(): number {
  const at = process.argv.indexOf('--payments');
  const value = at < 0 ? 1_000_000 : Number(process.argv[at + 1]);
  if (!Number.isInteger(value) || value < 1_000) throw new Error('--payments must be an integer ≥ 1000');
  return value;
}


function dirBytes(dir: string): number {
  return fs.readdirSync(dir).reduce((sum, name) => sum + fs.statSync(path.join(dir, name)).size, 0);
}

interface Shard {
  store: ShardStore;
  states: Map<number, PartitionState>;
  passivation: Passivation;
}

/**
 * The worker's flush, minus the thread: execute each command, note what it touched, commit once.
 * Outbox events are acknowledged in the next commit, as the webhook dispatcher does once it has them.
 */
function commit(shard: Shard, commands: Command[]): string[] {
  const acks: Command[] = [];
  for (const state of shard.states.values()) {
    if (state.outbox.size > 0) acks.push({ k: 'outbox.ack', ids: [...state.outbox.keys()], owner: 'system:webhooks', nowMs: NOW_MS, partition: state.partition });
  }
  commands = [...acks, ...commands];
  const records: Array<{ partition: number; body: string }> = [];
  const replies: string[] = [];
  const lsnBase = shard.store.lsnNext;
  for (const cmd of commands) {
    const state = shard.states.get(cmd.partition)!;
    const executed = execute({ ...contextOf(state, cmd.nowMs) }, cmd);
    if (executed.events.length > 0) {
      records.push({ partition: cmd.partition, body: JSON.stringify(executed.events) });
      shard.passivation.note(state, lsnBase + records.length - 1);
    }
    if (executed.reply.status >= 300) throw new Error(`bench: ${cmd.k} answered ${executed.reply.status} ${JSON.stringify(executed.reply.error)}`);
    if (cmd.k !== 'outbox.ack') replies.push(executed.reply.json ?? '');
  }
  shard.store.appendBatch(records, shard.passivation.take());
  shard.passivation.settle();
  // As the runtime does: derived rows follow the log row, written when too many wait.
  if (shard.store.derivedWeight > DERIVED_PENDING_WEIGHT_MAX) shard.store.writeDerived();
  return replies;
}

function snapshotAll(shard: Shard): number {
  shard.store.writeDerived();
  const lsn = shard.store.lsnNext - 1;
  let bytes = 0;
  for (const [partition, state] of shard.states) {
    const json = encodePartition(state);
    bytes = Math.max(bytes, json.length);
    shard.store.writeSnapshot(snapshotRow({ partition, lsn, takenAtMs: Date.now(), body: compressImageSync(json) }));
  }
  return bytes;
}

async function main(): Promise<void> {
  const payments = paymentsArg();
  const m = machine();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kobo-history-'));
  const store = new ShardStore(path.join(dir, 'shard-0.db'));
  const partitions = Array.from({ length: PARTITIONS }, (_, p) => p);
  const shard: Shard = { store, states: new Map(partitions.map((p) => [p, emptyPartition(p, tiersOf(store))])), passivation: new Passivation() };
  const owner = ownerOf('test', 'bench');
  const customers: Array<{ id: string; partition: number }> = [];
  let seq = 0;
  for (const [partition, state] of shard.states) {
    const ctx = contextOf(state, NOW_MS);
    for (let i = 0; i < CUSTOMERS_PER_PARTITION; i += 1) {
      const customer = addCustomer(ctx, { owner, seq: seq++, tier: 'tier_3' });
      addFundedWallet(ctx, customer);
      customers.push({ id: customer.id, partition });
    }
  }
  const imageBefore = snapshotAll(shard);
  const heapBefore = heapAfterGc();
  process.stdout.write(`history benchmark — ${payments.toLocaleString('en-US')} wallet payments over ${customers.length} customers in ${PARTITIONS} partitions; node ${m.node}\n`);

  const retain = retainArg();
  let truncatedTotal = 0;
  const started = performance.now();
  for (let done = 0; done < payments; done += BATCH_PAYMENTS) {
    const nowMs = NOW_MS + Math.floor(done / 1_000);
    const creates: Command[] = [];
    for (let i = done; i < Math.min(payments, done + BATCH_PAYMENTS); i += 1) {
      const customer = customers[i % customers.length]!;
      creates.push({
        k: 'payment.create', owner, nowMs, partition: customer.partition,
        idem: { scope: `${owner}:pay-${i}`, fingerprint: `fp-${i}` },
        body: { customerId: customer.id, amountMinor: 100, currency: 'NGN', method: 'wallet', reference: null },
      });
    }
    const replies = commit(shard, creates);
    const settles: Command[] = replies.map((json, i) => {
      const id = (JSON.parse(json) as { data: { id: string } }).data.id;
      return { k: 'payment.settle', id, source: 'rail', attempt: 1, owner, nowMs: nowMs + 20, partition: creates[i]!.partition };
    });
    commit(shard, settles);
    // As the server does: a snapshot round every ~50,000 records, then truncation.
    if ((done / BATCH_PAYMENTS) % SNAPSHOT_EVERY_BATCHES === SNAPSHOT_EVERY_BATCHES - 1) {
      snapshotAll(shard);
      for (let n = store.truncateWal(retain).dropped; n > 0; n = store.truncateWal(retain).dropped) truncatedTotal += n;
    }
    if (process.stdout.isTTY && done % 50_000 === 0) process.stdout.write(`\r${done}/${payments}   `);
  }
  const runMs = performance.now() - started;
  // Up to DERIVED_PENDING_WEIGHT_MAX characters of derived rows wait in the heap (a bound, not growth with history):
  // written first, so what remains is what history itself leaves behind.
  store.writeDerived();
  const heapAfter = heapAfterGc();
  const hot = [...shard.states.values()].reduce((n, s) => n + s.transactions.size + s.payments.size + s.idempotency.size, 0);

  // The front end's index: one entry per remembered key, where it is stored (partition and row, packed;
  // rows are LSNs, two records a payment).
  const index = new IdempotencyIndex();
  const indexBefore = heapAfterGc();
  for (let i = 0; i < payments; i += 1) index.restore(scopeHash(`${owner}:pay-${i}`), packIdemAt(i % PARTITIONS, 2 * i + 1));
  const indexAfter = heapAfterGc();
  if (index.size !== payments) throw new Error(`bench: index holds ${index.size} of ${payments} keys`);

  // Two snapshot rounds, then truncation as the worker does it (the default retention).
  const imageAfter = snapshotAll(shard);
  snapshotAll(shard);
  store.db.pragma('wal_checkpoint(TRUNCATE)');
  const diskBeforeTruncation = dirBytes(dir);
  let truncated = truncatedTotal;
  for (let n = store.truncateWal(retain).dropped; n > 0; n = store.truncateWal(retain).dropped) truncated += n;
  store.db.exec('VACUUM');
  store.db.pragma('wal_checkpoint(TRUNCATE)');
  const diskAfter = dirBytes(dir);
  const coldRows = store.coldCount();
  const walLeft = store.walCount();
  store.close();

  const restartStarted = performance.now();
  const reopened = new ShardStore(path.join(dir, 'shard-0.db'));
  const recovered = recoverShard(reopened, { partitions });
  const hashes = reopened.idemLocations();
  const restartMs = performance.now() - restartStarted;
  reopened.close();

  const perPayment = (heapAfter - heapBefore) / payments;
  const perKey = (indexAfter - indexBefore) / payments;
  const rows = [
    ['measure', 'value', 'target'],
    ['payments (create + rail settle, each with an Idempotency-Key)', payments.toLocaleString('en-US'), ''],
    ['shard heap retained per finished payment (heapUsed after GC)', `${fmt(perPayment, 1)} B`, `≤ ${TARGET_BYTES_PER_PAYMENT_MAX} B`],
    ['hot transactions + payments + idempotency records left in the heap', String(hot), '0'],
    ['front-end idempotency index per remembered key', `${fmt(perKey, 1)} B`, ''],
    ['largest partition snapshot image (JSON) before → after', `${imageBefore.toLocaleString('en-US')} → ${imageAfter.toLocaleString('en-US')} B`, 'no growth'],
    ['disk per payment before WAL truncation (WAL + cold + idempotency)', `${fmt(diskBeforeTruncation / payments, 0)} B`, ''],
    [`disk per payment after truncation (retain ${retain.toLocaleString('en-US')} records) + VACUUM`, `${fmt(diskAfter / payments, 0)} B`, ''],
    ['WAL records truncated / left', `${truncated.toLocaleString('en-US')} / ${walLeft.toLocaleString('en-US')}`, ''],
    ['cold rows (transaction + payment per payment)', coldRows.toLocaleString('en-US'), ''],
    ['restart: recover 64 partitions + load the index hashes', `${fmt(restartMs, 0)} ms (${recovered.replayed} records replayed, ${(hashes.length / 2).toLocaleString('en-US')} keys)`, `≤ ${TARGET_RESTART_MS_MAX} ms`],
    ['run time (execute + group commit, in-process)', `${fmt(runMs / 1000, 1)} s (${fmt(payments / (runMs / 1000), 0)} payments/s)`, ''],
  ];
  process.stdout.write(`\n${table(rows)}\n`);
  const file = writeResult('history', { machine: m, payments, perPaymentBytes: perPayment, indexBytesPerKey: perKey, hot, imageBefore, imageAfter, diskBeforeTruncation, diskAfter, truncated, walLeft, coldRows, restartMs, runMs });
  process.stdout.write(`results: ${file}\n`);
  if (process.env.KEEP !== "1") fs.rmSync(dir, { recursive: true, force: true }); else process.stdout.write(`kept ${dir}\n`);
  if (perPayment > TARGET_BYTES_PER_PAYMENT_MAX || restartMs > TARGET_RESTART_MS_MAX || hot !== 0) process.exitCode = 1;
}

await main();
