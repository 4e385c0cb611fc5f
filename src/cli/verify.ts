// `kobo verify`: checks every WAL record, snapshot, cold-row, idempotency-row and expiry-row checksum; that newest snapshot + WAL
// tail equals a full replay (or, once old records are truncated, the oldest kept snapshot + its longer
// tail); the ledger invariants (per-currency debits = credits, no wallet below zero, no open hold on a
// finished transaction); sqlite's page and index check; and that no failed or refunded wallet-paid
// order kept the customer's money.
// Runs in the CLI process; opens shard files read-only.
// Invariant: every violation is reported and makes the command exit non-zero.
import fs from 'node:fs';
import path from 'node:path';
import { addTotals, ledgerViolations, type CurrencyTotals } from '../ledger/ledger.ts';
import { openDatabase, ShardStore, snapshotChecksum } from '../store/shard-store.ts';
import { damagedColdRows } from '../store/cold-table.ts';
import { damagedDueRows, damagedEntryRows, damagedFrontIdemRows, damagedIdemRows, damagedListRows } from '../store/row-checks.ts';
import { recoverShard } from '../shard/recovery.ts';
import { encodePartition } from '../shard/partition-image.ts';
import { partitionsOf, readLayout, shardFile } from '../shard/layout.ts';
import { partitionOfId } from '../ids.ts';
import type { PartitionState, Payment, ServiceOrder, Transaction } from '../shard/state.ts';

export interface VerifyReport {
  shards: number;
  walRecords: number;
  snapshots: number;
  customers: number;
  wallets: number;
  transactions: number;
  /** Finished entities (all versions) in the cold tables. */
  coldRows: number;
  /** Per shard, the WAL range replayed and how snapshots were proved against it. */
  ranges: Array<{ shard: number; fromLsn: number | null; toLsn: number; proof: 'full replay' | 'oldest snapshot' | 'none' }>;
  currencies: Record<string, { debitsPosted: string; creditsPosted: string }>;
  violations: string[];
}

function checkChecksums(store: ShardStore, shard: number, violations: string[], progress: (n: number) => void): { wal: number; snapshots: number } {
  // sqlite's own check of every page, index and table: damage to an index, or to the meta and snapshot
  // tables' pages, would otherwise surface only when something reads it.
  const problems = store.db.pragma('quick_check', { simple: false }) as Array<{ quick_check: string }>;
  for (const { quick_check: problem } of problems) if (problem !== 'ok') violations.push(`shard ${shard}: sqlite check: ${problem}`);
  let wal = 0;
  for (const row of store.walAfter(0)) {
    wal += 1;
    if (!row.ok) violations.push(`shard ${shard}: WAL record ${row.lsn} fails its checksum (log row of batch ${row.batch})`);
    if (wal % 50_000 === 0) progress(wal);
  }
  for (const row of store.damagedArchiveRows()) violations.push(`shard ${shard}: archived log row of batch ${row.batch} (LSN ${row.lsnFirst}) fails its checksum`);
  // The derived file (derived-file.ts) gets the same page check, then the checksums of the rows it holds:
  // finished entities, idempotency and expiry rows (read where they are: a dir not yet moved keeps them in
  // the shard file), list rows and ledger entries.
  const derivedDb = store.derivedDb;
  if (derivedDb !== null) {
    for (const { quick_check: problem } of derivedDb.pragma('quick_check', { simple: false }) as Array<{ quick_check: string }>) {
      if (problem !== 'ok') violations.push(`shard ${shard}: sqlite check of the derived file: ${problem}`);
    }
  }
  for (const row of damagedColdRows(store.rowsDb)) violations.push(`shard ${shard}: cold row ${row.id} (kind ${row.kind}, LSN ${row.lsn}) fails its checksum`);
  for (const row of damagedIdemRows(store.rowsDb)) violations.push(`shard ${shard}: the ${row} fails its checksum`);
  for (const row of damagedDueRows(store.rowsDb)) violations.push(`shard ${shard}: the ${row} fails its checksum`);
  const listsDb = store.listsDb;
  if (listsDb !== null) {
    for (const row of damagedEntryRows(listsDb)) violations.push(`shard ${shard}: the ${row} fails its checksum`);
    for (const row of damagedListRows(listsDb)) violations.push(`shard ${shard}: the ${row} fails its checksum`);
  }
  let snapshots = 0;
  const rows = store.db.prepare('SELECT partition, lsn, body, crc FROM snapshots').iterate() as IterableIterator<{ partition: number; lsn: number; body: Buffer; crc: number }>;
  for (const row of rows) {
    snapshots += 1;
    if (snapshotChecksum(row.partition, row.lsn, row.body) !== row.crc) violations.push(`shard ${shard}: snapshot of partition ${row.partition} at LSN ${row.lsn} fails its checksum`);
  }
  return { wal, snapshots };
}

function checkTransactions(state: PartitionState, violations: string[]): void {
  const openHoldsByTxn = new Map<string, number>();
  for (const hold of state.ledger.holds.values()) openHoldsByTxn.set(hold.txn, (openHoldsByTxn.get(hold.txn) ?? 0) + 1);
  for (const [txnId, count] of openHoldsByTxn) {
    const txn = state.transactions.get(txnId);
    if (txn === undefined) violations.push(`partition ${state.partition}: hold for unknown transaction ${txnId}`);
    else if (txn.status === 'completed' || txn.status === 'failed') violations.push(`partition ${state.partition}: ${txn.status} transaction ${txnId} still has ${count} open hold(s)`);
  }
  for (const txn of state.transactions.values()) {
    if (txn.holdStatus === 'held' && (txn.holdId === null || !state.ledger.holds.has(txn.holdId))) {
      violations.push(`partition ${state.partition}: transaction ${txn.id} says held but its hold is not open`);
    }
  }
}

/**
 * A wallet-paid service order that failed or was refunded released its hold; a posted one charged the
 * customer for nothing. (Before 2026-11-25 a restart posted the holds of orders still open, so a data dir
 * an older version restarted can hold such orders; the ledger balances all the same.)
 */
export function orderHoldViolation(order: ServiceOrder, payment: Payment | undefined, paid: Transaction | undefined): string | null {
  if (order.status !== 'failed' && order.status !== 'refunded') return null;
  if (payment?.method !== 'wallet' || paid?.holdStatus !== 'posted') return null;
  return `order ${order.id} is ${order.status} but its wallet payment ${order.paymentTransactionId} was posted: the customer was charged ${order.customerAmountMinor} ${order.currency} for nothing`;
}

/** Every service order of a shard's partitions with the partition that owns it, in the heap or passivated. */
function* ordersOf(store: ShardStore, states: ReadonlyMap<number, PartitionState>): IterableIterator<{ order: ServiceOrder; state: PartitionState }> {
  for (const state of states.values()) for (const order of state.orders.values()) yield { order, state };
  // The ids first: the store's connection cannot read rows while it iterates.
  for (const id of [...store.coldIds('order')]) {
    const state = states.get(partitionOfId(id));
    const order = state === undefined || state.orders.hasHot(id) ? undefined : state.orders.get(id);
    if (state !== undefined && order !== undefined) yield { order, state };
  }
}

/**
 * Wallet transfers between partitions cross two partition_clearing accounts. Summed over the data dir,
 * clearing nets to exactly the amounts still in flight (held at the sender, not yet credited).
 */
class ClearingCheck {
  private readonly net = new Map<string, bigint>();
  private readonly held = new Map<string, { amount: number; currency: string }>();
  private readonly credited = new Set<string>();

  /** Credits that left the heap: ids from the shard file's cold table. */
  addCredited(ids: Iterable<string>): void {
    for (const id of ids) this.credited.add(id);
  }

  add(state: PartitionState): void {
    for (const account of state.ledger.accounts.values()) {
      if (account.kind !== 'partition_clearing') continue;
      const net = BigInt(account.creditsPosted + account.creditsPending - account.debitsPosted - account.debitsPending);
      this.net.set(account.currency, (this.net.get(account.currency) ?? 0n) + net);
    }
    for (const transfer of state.transfers.values()) {
      const txn = state.transactions.get(transfer.transactionId);
      if (state.beneficiaries.get(transfer.beneficiaryId)?.type === 'wallet' && txn?.holdStatus === 'held') {
        this.held.set(transfer.id, { amount: transfer.amountMinor + transfer.feeMinor, currency: transfer.currency });
      }
    }
    for (const id of state.inboundCredits.keys()) this.credited.add(id);
  }

  violations(): string[] {
    const inFlight = new Map<string, bigint>();
    for (const [id, t] of this.held) if (!this.credited.has(id)) inFlight.set(t.currency, (inFlight.get(t.currency) ?? 0n) + BigInt(t.amount));
    const out: string[] = [];
    for (const currency of new Set([...this.net.keys(), ...inFlight.keys()])) {
      const net = this.net.get(currency) ?? 0n;
      const expected = inFlight.get(currency) ?? 0n;
      if (net !== expected) out.push(`${currency}: partition clearing nets ${net}, but ${expected} is in flight between partitions`);
    }
    return out;
  }
}

export function verifyDataDir(dataDir: string, progress: (message: string) => void = () => {}): VerifyReport {
  const layout = readLayout(dataDir);
  const violations: string[] = [];
  const totals = new Map<string, CurrencyTotals>();
  const clearing = new ClearingCheck();
  const report: VerifyReport = { shards: layout.shards, walRecords: 0, snapshots: 0, customers: 0, wallets: 0, transactions: 0, coldRows: 0, ranges: [], currencies: {}, violations };
  for (let shard = 0; shard < layout.shards; shard += 1) {
    const file = path.join(dataDir, shardFile(shard));
    if (!fs.existsSync(file)) {
      violations.push(`shard ${shard}: ${file} is missing`);
      continue;
    }
    const store = new ShardStore(file, { readonly: true });
    try {
      const counted = checkChecksums(store, shard, violations, (n) => progress(`shard ${shard}: ${n} WAL records checked`));
      report.walRecords += counted.wal;
      report.snapshots += counted.snapshots;
      const partitions = partitionsOf(shard, layout.shards);
      const recovered = recoverShard(store, { partitions, readonly: true, onProgress: (n) => progress(`shard ${shard}: ${n} records replayed`) });
      const truncated = store.getMeta('wal_floor') !== undefined && store.getMeta('wal_floor') !== '0:0';
      const whole = Number(store.getMeta('base_lsn') ?? '0') === 0 && !truncated;
      // Snapshot + tail must equal replaying from further back: proves snapshots are faithful. With the
      // whole WAL that is a full replay; after truncation, the oldest kept image and its longer tail,
      // possible as soon as any partition keeps two (one that keeps one replays the same either way).
      const proof = whole ? 'full replay' : partitions.some((p) => store.snapshotsOf(p).length > 1) ? 'oldest snapshot' : 'none';
      if (proof !== 'none') {
        const other = recoverShard(store, { partitions, readonly: true, ...(whole ? { ignoreSnapshots: true } : { oldestSnapshots: true }) });
        for (const partition of partitions) {
          if (encodePartition(recovered.states.get(partition)!) !== encodePartition(other.states.get(partition)!)) {
            violations.push(`shard ${shard}: partition ${partition} from snapshot + WAL differs from a ${proof} + WAL`);
          }
        }
      }
      clearing.addCredited(store.coldIds('credit'));
      report.ranges.push({ shard, fromLsn: store.walFirstLsn(), toLsn: recovered.lastLsn, proof });
      report.coldRows += store.tiered ? store.coldCount() : 0;
      for (const state of recovered.states.values()) {
        addTotals(totals, state.ledger);
        clearing.add(state);
        for (const v of ledgerViolations(state.ledger)) violations.push(`partition ${state.partition}: ${v}`);
        checkTransactions(state, violations);
        report.customers += state.customers.size;
        report.transactions += state.transactions.size;
        for (const account of state.ledger.accounts.values()) if (account.kind === 'wallet') report.wallets += 1;
      }
      for (const { order, state } of ordersOf(store, recovered.states)) {
        const v = orderHoldViolation(order, state.payments.get(order.paymentId), state.transactions.get(order.paymentTransactionId));
        if (v !== null) violations.push(`partition ${state.partition}: ${v}`);
      }
      progress(`shard ${shard}: ${counted.wal} WAL records, ${counted.snapshots} snapshots, replay ok`);
    } catch (error) {
      violations.push(`shard ${shard}: ${(error as Error).message}`);
    } finally {
      store.close();
    }
  }
  violations.push(...clearing.violations());
  const webhooksFile = path.join(dataDir, 'webhooks.db');
  if (fs.existsSync(webhooksFile)) {
    const webhooks = openDatabase(webhooksFile, { readonly: true });
    try {
      for (const row of damagedFrontIdemRows(webhooks)) violations.push(`webhooks.db: the ${row} fails its checksum`);
    } finally {
      webhooks.close();
    }
  }
  for (const [currency, t] of totals) {
    report.currencies[currency] = { debitsPosted: String(t.debitsPosted), creditsPosted: String(t.creditsPosted) };
    if (t.debitsPosted !== t.creditsPosted) violations.push(`${currency}: posted debits ${t.debitsPosted} != posted credits ${t.creditsPosted}`);
    if (t.debitsPending !== t.creditsPending) violations.push(`${currency}: pending debits ${t.debitsPending} != pending credits ${t.creditsPending}`);
  }
  return report;
}
