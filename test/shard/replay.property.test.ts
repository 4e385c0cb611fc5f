// Seeded property tests of a partition driven through dispatch.execute(): random command sequences
// (customers, bank_transfer and wallet payments, settle, fail, cancel, retry, rail effects, clock moves).
// Runs under node:test on the main thread; pure: deterministic ids, a stepped clock, no worker, no disk.
// Invariant checked: replaying the emitted WAL events gives exactly the live state; snapshots round-trip;
// money is conserved per currency, no wallet goes negative, wallets match the payments that moved them.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { execute, type Executed } from '../../src/shard/dispatch.ts';
import { applyEvent, type WalEvent } from '../../src/shard/events.ts';
import { emptyPartition, entityTables, isStoredResult, walletOf, type PartitionState } from '../../src/shard/state.ts';
import type { Effect, HandlerContext } from '../../src/shard/lifecycle/context.ts';
import type { Command, CommandBody } from '../../src/shard/protocol.ts';
import { decodePartition, encodePartition } from '../../src/shard/partition-image.ts';
import { mintId, partitionOfId } from '../../src/ids.ts';
import { addTotals, availableMinor, balanceMinor, ledgerViolations, type CurrencyTotals } from '../../src/ledger/ledger.ts';
import { tierLimits } from '../../src/catalogue/limits.ts';
import path from 'node:path';
import { ShardStore } from '../../src/store/shard-store.ts';
import { recoverShard, tiersOf } from '../../src/shard/recovery.ts';
import { Passivation } from '../../src/shard/passivate.ts';
import { tempDataDir } from '../helpers/server.ts';

const RUNS = { seed: 42, numRuns: 200 } as const;
const PARTITION = 5;
const OWNER = 'test:acme';
const START_MS = Date.UTC(2025, 0, 15, 9, 0, 0);
const HOUR_MS = 3_600_000;
const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const COUNTRIES = [
  { code: 'NG', currency: 'NGN' },
  { code: 'GH', currency: 'GHS' },
  { code: 'KE', currency: 'KES' },
] as const;
const FAIL_CODES = ['PROVIDER_ERROR', 'INTERNAL', 'RATE_LIMITED', 'COMPLIANCE_DENIED', 'INSUFFICIENT_FUNDS', 'LIMIT_EXCEEDED', 'BOGUS'];
const TXN_TYPES = ['payment', 'transfer', 'exchange', 'funding'] as const;
/** A real bank code per home currency (data/reference/banks.json). */
const BANKS: Record<string, string> = { NGN: '058', GHS: '040100', KES: '68' };

/** A partition driven like a shard worker drives it, with every emitted event kept as its WAL form. */
class Harness {
  readonly state: PartitionState;
  private readonly passivation = new Passivation();
  /** Derived-row slices written so far (a store-backed run writes them at varying points). */
  private slices = 0;

  /** With `store`, every command's events go to a real shard file as log v2 does it (derived rows after). */
  constructor(private readonly store?: ShardStore) {
    this.state = emptyPartition(PARTITION, store === undefined ? undefined : tiersOf(store));
  }
  nowMs = START_MS;
  /** Events as the WAL stores them (serialised right after the command, as the worker does). */
  readonly wal: WalEvent[] = [];
  readonly effects: Effect[] = [];
  /** Snapshot images taken along the way, with the WAL length they cover. */
  readonly snapshots: Array<{ image: string; walLength: number }> = [];
  private minted = 0;

  /** Deterministic ids: time and partition from mintId(), then a counter instead of random bits. */
  mint(): string {
    this.minted += 1;
    let tail = '';
    for (let n = this.minted, i = 0; i < 14; i += 1, n = Math.floor(n / 32)) tail = CROCKFORD[n % 32]! + tail;
    const id = mintId(PARTITION, this.nowMs).slice(0, 12) + tail;
    assert.equal(partitionOfId(id), PARTITION);
    return id;
  }

  context(): HandlerContext {
    return { state: this.state, nowMs: this.nowMs, mintId: () => this.mint(), railLatencyMs: 5 };
  }

  /** Where each stored key's record is (its LSN), as the front end's index knows it: a store-backed heap forgets them. */
  private readonly storedAt = new Map<string, number>();

  run(body: CommandBody, idem?: { scope: string; fingerprint: string }): Executed {
    const seq = idem === undefined ? undefined : this.storedAt.get(idem.scope);
    const withSeq = idem === undefined ? undefined : { ...idem, ...(seq === undefined ? {} : { seq }) };
    const cmd = { owner: OWNER, nowMs: this.nowMs, partition: PARTITION, ...body, ...(withSeq === undefined ? {} : { idem: withSeq }) } as Command;
    const executed = execute(this.context(), cmd);
    this.wal.push(...(JSON.parse(JSON.stringify(executed.events)) as WalEvent[]));
    if (this.store !== undefined && executed.events.length > 0) {
      const lsn = this.store.lsnNext;
      if (executed.stored === true && idem !== undefined) this.storedAt.set(idem.scope, lsn);
      const body = JSON.stringify(executed.events);
      // What each entity this command touched is now: a cold row that points into the record must read
      // back exactly this (checked below).
      const now = new Map<string, string>();
      for (const table of entityTables(this.state)) for (const id of table.touched) now.set(`${table.kind} ${id}`, JSON.stringify(table.get(id)));
      // As the shard runtime notes a live command: its record holds the events as executed.
      this.passivation.note(this.state, lsn, { entities: true });
      const taken = this.passivation.take();
      this.store.appendBatch([{ partition: PARTITION, body }], taken);
      for (const row of taken.cold) {
        if (row.inLog === true) assert.equal(this.store.createdInLog(row.kind, row.id, row.lsn), now.get(`${row.kind} ${row.id}`), `${row.kind} ${row.id}: its pointer reads the entity as it stands`);
      }
      this.passivation.settle();
      // Derived rows reach their tables at varying points: a few rows, all of them, or not yet.
      this.slices += 1;
      if (this.slices % 5 === 0) this.store.writeDerived(1 + (this.slices % 7));
      if (this.slices % 11 === 0) this.store.writeDerived();
    }
    this.effects.push(...executed.effects);
    if (executed.reply.status >= 400) {
      assert.ok(executed.events.every((e) => e.t === 'idem.stored'), `a rejected ${body.k} emitted effects: ${JSON.stringify(executed.events)}`);
      assert.equal(executed.effects.length, 0);
    }
    return executed;
  }

  /** Ids of the entities of a kind the run created, in order (from the WAL, so cold ones count too). */
  created(kind: 'payment' | 'txn' | 'exchange'): string[] {
    const ids: string[] = [];
    for (const event of this.wal) {
      if (kind === 'payment' && (event.t === 'payment.created' || event.t === 'payment.opened')) ids.push(event.payment.id);
      if (kind === 'txn' && event.t === 'txn.created') ids.push(event.txn.id);
      // payment.opened carries the payment; its transaction is derived from it (shard/payment-opened.ts).
      if (kind === 'txn' && event.t === 'payment.opened') ids.push(event.payment.transactionId);
      if (kind === 'exchange' && event.t === 'exchange.created') ids.push(event.exchange.id);
    }
    return ids;
  }

  snapshot(): void {
    this.snapshots.push({ image: encodePartition(this.state), walLength: this.wal.length });
  }
}

function dataOf(executed: Executed): Record<string, unknown> & { id: string } {
  assert.ok(executed.reply.json !== undefined, JSON.stringify(executed.reply));
  return (JSON.parse(executed.reply.json) as { data: Record<string, unknown> & { id: string } }).data;
}

function replay(events: readonly WalEvent[], from: PartitionState = emptyPartition(PARTITION)): PartitionState {
  for (const event of events) applyEvent(from, event);
  return from;
}

/**
 * Every invariant that must hold after every command. With `h`, every payment, transaction and exchange
 * the run made counts, hot or cold (a store-backed run passivates finished ones).
 */
function assertSound(state: PartitionState, h?: Harness): void {
  const payments = h === undefined ? [...state.payments.values()] : h.created('payment').map((id) => state.payments.get(id)!);
  const txns = h === undefined ? [...state.transactions.values()] : h.created('txn').map((id) => state.transactions.get(id)!);
  const exchanges = h === undefined ? [...state.exchanges.values()] : h.created('exchange').map((id) => state.exchanges.get(id)!);
  const totals = new Map<string, CurrencyTotals>();
  addTotals(totals, state.ledger);
  for (const [currency, t] of totals) {
    assert.equal(t.debitsPosted, t.creditsPosted, `${currency}: posted debits == credits`);
    assert.equal(t.debitsPending, t.creditsPending, `${currency}: pending debits == credits`);
  }
  assert.deepEqual(ledgerViolations(state.ledger, totals), []);

  // Each wallet against the payments, transfers and exchanges that moved it: collections credit net of
  // fee, wallet debits and transfers hold then post (transfers hold amount + fee), exchanges move both wallets.
  const expected = new Map<string, { balance: number; held: number }>();
  const at = (walletId: string): { balance: number; held: number } => {
    const e = expected.get(walletId) ?? { balance: 0, held: 0 };
    expected.set(walletId, e);
    return e;
  };
  for (const transfer of state.transfers.values()) {
    const txn = state.transactions.get(transfer.transactionId)!;
    const walletId = state.customers.get(transfer.customerId)!.wallets[transfer.currency]!;
    if (txn.holdStatus === 'held') at(walletId).held += transfer.amountMinor + transfer.feeMinor;
    if (txn.holdStatus === 'posted') at(walletId).balance -= transfer.amountMinor + transfer.feeMinor;
  }
  for (const exchange of exchanges) {
    at(exchange.fromWalletId).balance -= exchange.fromAmountMinor;
    at(exchange.toWalletId).balance += exchange.toAmountMinor;
  }
  for (const payment of payments) {
    const txn = state.transactions.get(payment.transactionId);
    assert.ok(txn, 'payment has its transaction');
    assert.equal(payment.status, txn.status, `payment ${payment.id} moves in step with its transaction`);
    const e = expected.get(payment.walletId) ?? { balance: 0, held: 0 };
    if (payment.method === 'bank_transfer' && payment.status === 'completed') e.balance += payment.amountMinor - payment.feeMinor;
    if (payment.method === 'wallet' && payment.status === 'completed') e.balance -= payment.amountMinor;
    if (payment.method === 'wallet' && payment.status === 'processing') e.held += payment.amountMinor;
    expected.set(payment.walletId, e);
  }
  for (const account of state.ledger.accounts.values()) {
    if (account.kind !== 'wallet') continue;
    assert.ok(availableMinor(account) >= 0, `wallet ${account.id} available ${availableMinor(account)}`);
    const e = expected.get(account.id) ?? { balance: 0, held: 0 };
    assert.equal(balanceMinor(account), e.balance, `wallet ${account.id} balance`);
    assert.equal(account.debitsPending, e.held, `wallet ${account.id} held`);
  }

  // A transaction shows held exactly when its hold is open in the ledger, for the whole amount.
  let held = 0;
  for (const txn of txns) {
    if (txn.holdStatus !== 'held') continue;
    held += 1;
    assert.ok(txn.holdId !== null);
    const holdMinor = txn.transferId === null ? txn.amountMinor : txn.amountMinor + txn.feeMinor;
    assert.equal(state.ledger.holds.get(txn.holdId)?.amt, holdMinor, `txn ${txn.id} hold`);
  }
  assert.equal(state.ledger.holds.size, held);

  // Limit usage never passes the tier's daily maximum.
  for (const customer of state.customers.values()) {
    for (const [currency, used] of Object.entries(customer.usageMinor)) {
      const limits = tierLimits(customer.tier, currency);
      assert.ok(limits !== undefined && used <= limits.dailyMaxMinor, `customer ${customer.id} used ${used} ${currency}`);
    }
  }
}

interface Step {
  kind: 'customer' | 'bank' | 'wallet' | 'settle' | 'fail' | 'cancel' | 'retry' | 'txn' | 'effect' | 'clock' | 'beneficiary' | 'transfer' | 'quote' | 'exchange';
  pick: number;
  amount: number;
  flag: number;
  idem: number | null;
}

const stepArb: fc.Arbitrary<Step> = fc.record({
  kind: fc.constantFrom<Step['kind']>(
    'customer', 'bank', 'bank', 'bank', 'wallet', 'wallet', 'wallet',
    'settle', 'settle', 'settle', 'fail', 'fail', 'cancel', 'retry', 'retry', 'txn', 'effect', 'effect', 'effect', 'clock',
    'beneficiary', 'beneficiary', 'transfer', 'transfer', 'transfer', 'transfer', 'quote', 'quote', 'exchange', 'exchange',
  ),
  pick: fc.nat(),
  amount: fc.oneof(fc.integer({ min: 1, max: 20_000 }), fc.integer({ min: 10_000, max: 12_000_000 })),
  flag: fc.nat({ max: 99 }),
  idem: fc.oneof({ weight: 3, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.nat({ max: 7 }) }),
});

function pickOf<T>(items: readonly T[], pick: number): T | undefined {
  return items.length === 0 ? undefined : items[pick % items.length];
}

/** Mostly an amount the customer's wallet can cover (when it has funds), sometimes more than it holds. */
function walletAmount(h: Harness, walletId: string | undefined, step: Step): number {
  const wallet = walletId === undefined ? undefined : walletOf(h.state, walletId);
  const available = wallet === undefined ? 0 : availableMinor(wallet);
  if (available > 0 && step.flag < 70) return 1 + (step.amount % available);
  return 1 + (step.amount % 200_000);
}

/** Runs one abstract step; idempotent steps go through a small pool of keys so replays and clashes happen. */
function perform(h: Harness, step: Step, index: number, idemSeen: Map<string, { fingerprint: string; reply: Executed['reply'] }>): void {
  const customers = [...h.state.customers.values()];
  // Every payment and transaction made so far, hot or cold (a store-backed run passivates finished ones,
  // and its commands must reach them as the pure run's do).
  const payments = h.created('payment').map((id) => h.state.payments.get(id)!);
  const txns = h.created('txn').map((id) => h.state.transactions.get(id)!);
  // Now and then an id that names nobody (NOT_FOUND); otherwise one of the customers.
  // Wallet payments mostly act for a customer with money to spend.
  const funded = customers.filter((c) => Object.values(c.wallets).some((id) => availableMinor(walletOf(h.state, id)!) > 0));
  const pool = step.kind === 'wallet' && step.flag < 70 && funded.length > 0 ? funded : customers;
  const customer = step.flag >= 95 ? undefined : pickOf(pool, step.pick);
  const customerId = customer?.id ?? h.mint();
  const home = COUNTRIES.find((c) => c.code === customer?.countryCode)?.currency ?? 'NGN';
  let body: CommandBody;
  let idempotent = false;
  switch (step.kind) {
    case 'customer': {
      const country = COUNTRIES[step.pick % COUNTRIES.length]!;
      body = {
        k: 'customer.create',
        body: {
          name: `Customer ${index}`,
          email: `c${index}@example.com`,
          phone: `+23480${String(30_000_000 + index)}`,
          countryCode: country.code,
          duplicate: step.flag < 10 ? 'email' : null,
        },
      };
      idempotent = true;
      break;
    }
    case 'bank':
    case 'wallet':
      body = {
        k: 'payment.create',
        body: {
          customerId,
          amountMinor: step.kind === 'wallet' ? walletAmount(h, customer?.wallets[home], step) : step.amount,
          currency: step.flag < 8 ? 'USD' : home,
          method: step.kind === 'bank' ? 'bank_transfer' : 'wallet',
          reference: step.flag % 2 === 0 ? `ref-${index}` : null,
        },
      };
      idempotent = true;
      break;
    case 'txn':
      body = {
        k: 'txn.create',
        body: { type: TXN_TYPES[step.flag % TXN_TYPES.length]!, customerId, amountMinor: step.amount, currency: step.flag < 10 ? 'EUR' : home, reference: null },
      };
      idempotent = true;
      break;
    case 'settle':
    case 'fail': {
      // Mostly a payment still in flight, sometimes any (settling or failing twice must be refused).
      const open = payments.filter((p) => p.status === 'pending' || p.status === 'processing');
      const payment = pickOf(step.flag < 75 && open.length > 0 ? open : payments, step.pick);
      if (payment === undefined) return;
      body = step.kind === 'settle'
        ? { k: 'payment.settle', id: payment.id, source: 'test_helper' }
        : { k: 'payment.fail', id: payment.id, code: FAIL_CODES[step.flag % FAIL_CODES.length]!, source: 'test_helper' };
      break;
    }
    case 'cancel':
    case 'retry': {
      const wanted = step.kind === 'cancel' ? 'pending' : 'failed';
      const likely = txns.filter((t) => t.status === wanted);
      const txn = pickOf(step.flag < 75 && likely.length > 0 ? likely : txns, step.pick);
      if (txn === undefined) return;
      body = { k: step.kind === 'cancel' ? 'txn.cancel' : 'txn.retry', id: txn.id };
      idempotent = step.kind === 'retry';
      break;
    }
    case 'beneficiary': {
      // Bank accounts whose numbers drive the payout rail: ends 9999 fails, 9998 times out, else completes.
      const endings = ['1234', '9999', '9998', '5678'];
      body = {
        k: 'beneficiary.create',
        body: { customerId, type: 'bank_account', bankCode: BANKS[home]!, accountNumber: `${String(1_000_000 + index).padStart(6, '0').slice(-6)}${endings[step.flag % endings.length]}`, currency: home, country: customer?.countryCode ?? 'NG', resolvedName: null },
      };
      idempotent = true;
      break;
    }
    case 'transfer': {
      const beneficiary = pickOf([...h.state.beneficiaries.values()].filter((b) => b.customerId === customerId), step.pick);
      body = {
        k: 'transfer.create',
        body: { customerId, beneficiaryId: beneficiary?.id ?? h.mint(), amountMinor: step.flag === 66 ? 666 : walletAmount(h, customer?.wallets[home], step), currency: home, narration: null, quoteId: null },
      };
      idempotent = true;
      break;
    }
    case 'quote':
      body = { k: 'fx.quote', body: { customerId, fromCurrency: home, toCurrency: step.flag < 50 ? 'USD' : 'GBP', fromAmountMinor: walletAmount(h, customer?.wallets[home], step) } };
      break;
    case 'exchange': {
      const quote = pickOf([...h.state.quotes.values()], step.pick);
      if (quote === undefined) return;
      body = { k: 'fx.execute', quoteId: quote.id };
      idempotent = true;
      break;
    }
    case 'effect': {
      if (h.effects.length === 0) return;
      const [effect] = h.effects.splice(step.pick % h.effects.length, 1);
      // A rail answer arrives later than it was sent, on the clock of its arrival (as in the worker).
      const { owner: _owner, nowMs: _nowMs, partition: _partition, idem: _idem, customerScope: _scope, ...effectBody } = effect!.cmd;
      h.run(effectBody as CommandBody);
      return;
    }
    case 'clock':
      h.nowMs += (1 + (step.amount % 30)) * HOUR_MS;
      return;
  }
  if (!idempotent || step.idem === null) {
    h.run(body);
    return;
  }
  const scope = `${OWNER}:key-${step.idem}`;
  const fingerprint = JSON.stringify(body);
  const seen = idemSeen.get(scope);
  const executed = h.run(body, { scope, fingerprint });
  if (seen === undefined) {
    if (isStoredResult(executed.reply.status)) idemSeen.set(scope, { fingerprint, reply: executed.reply });
    return;
  }
  assert.equal(executed.events.length, 0, 'a replayed key emits no events');
  if (seen.fingerprint === fingerprint) assert.deepEqual(executed.reply, seen.reply);
  else assert.equal(executed.reply.error?.code, 'IDEMPOTENCY_REPLAY');
}

function drive(steps: readonly Step[], store?: ShardStore): Harness {
  const h = new Harness(store);
  const idemSeen = new Map<string, { fingerprint: string; reply: Executed['reply'] }>();
  // Every run starts with one customer per country, so early payments have someone to act for.
  COUNTRIES.forEach((_, i) => perform(h, { kind: 'customer', pick: i, amount: 1, flag: 50, idem: null }, -1 - i, idemSeen));
  steps.forEach((step, index) => {
    perform(h, step, index, idemSeen);
    assertSound(h.state, h);
    if (index % 7 === 3) h.snapshot();
  });
  return h;
}

const stepsArb = fc.array(stepArb, { minLength: 5, maxLength: 100, size: 'max' });

describe('replay (fast-check, seed 42): execute() live vs applyEvent() of its WAL', () => {
  it('random commands: after every one → per-currency debits == credits, no wallet negative, wallets match payments', () => {
    fc.assert(fc.property(stepsArb, (steps) => {
      drive(steps);
    }), RUNS);
  });

  it('random commands: WAL replayed into an empty partition → encodePartition equal to live', () => {
    fc.assert(fc.property(stepsArb, (steps) => {
      const h = drive(steps);
      const replayed = replay(h.wal);
      assert.equal(encodePartition(replayed), encodePartition(h.state));
      assertSound(replayed);
    }), RUNS);
  });

  it('random commands: decodePartition(encodePartition(s)) → re-encodes identically', () => {
    fc.assert(fc.property(stepsArb, (steps) => {
      const h = drive(steps);
      const image = encodePartition(h.state);
      assert.equal(encodePartition(decodePartition(image)), image);
    }), RUNS);
  });

  it('random commands: any mid-run snapshot + the WAL tail after it → live state (recovery)', () => {
    fc.assert(fc.property(stepsArb, (steps) => {
      const h = drive(steps);
      for (const snap of h.snapshots) {
        const recovered = replay(h.wal.slice(snap.walLength), decodePartition(snap.image));
        assert.equal(encodePartition(recovered), encodePartition(h.state));
      }
    }), RUNS);
  });

  it('the same random commands run twice → identical WAL and state (handlers are pure given ids and clock)', () => {
    fc.assert(fc.property(stepsArb, (steps) => {
      const a = drive(steps);
      const b = drive(steps);
      assert.deepEqual(a.wal, b.wal);
      assert.equal(encodePartition(a.state), encodePartition(b.state));
    }), { seed: 42, numRuns: 50 });
  });
});

describe('replay (fast-check, seed 22): log v2 on a real shard file', () => {
  it('random commands: the file replayed (log rows, derived rows written or not, rows pointing into the log) → the live state, hot and cold', () => {
    fc.assert(fc.property(stepsArb, (steps) => {
      const file = path.join(tempDataDir('replay-v2'), 'shard-0.db');
      const store = new ShardStore(file);
      const h = drive(steps, store);
      const ids = new Set<string>();
      for (const event of h.wal) {
        if (event.t === 'txn.created') ids.add(`txn ${event.txn.id}`);
        if (event.t === 'payment.created' || event.t === 'payment.opened') ids.add(`payment ${event.payment.id}`);
        if (event.t === 'payment.opened') ids.add(`txn ${event.payment.transactionId}`);
      }
      const read = (state: PartitionState, key: string): unknown => {
        const [kind, id] = key.split(' ') as ['txn' | 'payment', string];
        return kind === 'txn' ? state.transactions.get(id) : state.payments.get(id);
      };
      const live = new Map([...ids].map((key) => [key, read(h.state, key)]));
      const liveImage = encodePartition(h.state);
      const reader = new ShardStore(file, { readonly: true });
      const recovered = recoverShard(reader, { partitions: [PARTITION], ignoreSnapshots: true, readonly: true }).states.get(PARTITION)!;
      assert.equal(encodePartition(recovered), liveImage, 'the hot state');
      for (const [key, entity] of live) assert.deepEqual(read(recovered, key), entity, `${key} as live reads it`);
      reader.close();
      store.writeDerived();
      store.close();
      const reopened = new ShardStore(file);
      const restarted = recoverShard(reopened, { partitions: [PARTITION] }).states.get(PARTITION)!;
      for (const [key, entity] of live) assert.deepEqual(read(restarted, key), entity, `${key} after a restart`);
      reopened.close();
    }), { seed: 22, numRuns: 40 });
  });
});

describe('replay: the generated runs reach every money path', () => {
  it('sampled runs (seed 42) → transfers completed, failed and reconciled, exchanges executed, holds voided', () => {
    const seen = { transferCompleted: 0, transferFailed: 0, reconciled: 0, exchanges: 0, released: 0, walletPayments: 0 };
    for (const steps of fc.sample(stepsArb, { seed: 42, numRuns: 40 })) {
      const h = drive(steps);
      for (let round = 0; round < 4 && h.effects.length > 0; round += 1) {
        for (const effect of h.effects.splice(0)) {
          const { owner: _o, nowMs: _n, partition: _p, idem: _i, customerScope: _s, ...body } = effect.cmd;
          h.run(body as CommandBody);
          assertSound(h.state);
        }
      }
      for (const t of h.state.transfers.values()) {
        if (t.status === 'completed') seen.transferCompleted += 1;
        if (t.status === 'failed') seen.transferFailed += 1;
        if (h.state.transactions.get(t.transactionId)!.history.some((e) => e.status === 'unknown') && t.status === 'completed') seen.reconciled += 1;
      }
      seen.exchanges += h.state.exchanges.size;
      for (const txn of h.state.transactions.values()) if (txn.holdStatus === 'released') seen.released += 1;
      for (const p of h.state.payments.values()) if (p.method === 'wallet' && p.status === 'completed') seen.walletPayments += 1;
    }
    for (const [path, count] of Object.entries(seen)) assert.ok(count > 0, `no run reached ${path}: ${JSON.stringify(seen)}`);
  });
});

describe('handlers through execute(): regressions found by the properties', () => {
  function fundedCustomer(h: Harness, amountMinor: number): { customerId: string; walletId: string } {
    const customer = dataOf(h.run({ k: 'customer.create', body: { name: 'Ada', email: 'ada@example.com', phone: '+2348030000001', countryCode: 'NG', duplicate: null } }));
    const customerId = customer.id;
    const walletId = (customer.wallets as Array<{ id: string }>)[0]!.id;
    const collection = dataOf(h.run({ k: 'payment.create', body: { customerId, amountMinor, currency: 'NGN', method: 'bank_transfer', reference: null } }));
    assert.equal(h.run({ k: 'payment.settle', id: collection.id, source: 'test_helper' }).reply.status, 200);
    return { customerId, walletId };
  }

  it('payment.settle: wallet payment back at pending after retry (not yet re-submitted) → 409 CONFLICT, wallet not credited', () => {
    const h = new Harness();
    const { customerId, walletId } = fundedCustomer(h, 100_000);
    const balanceBefore = balanceMinor(walletOf(h.state, walletId)!); // 99 000 after the 1% fee
    const payment = dataOf(h.run({ k: 'payment.create', body: { customerId, amountMinor: 5_000, currency: 'NGN', method: 'wallet', reference: null } }));
    assert.equal(h.run({ k: 'payment.fail', id: payment.id, code: 'PROVIDER_ERROR', source: 'test_helper' }).reply.status, 200);
    assert.equal(h.run({ k: 'txn.retry', id: payment.transaction_id as string }).reply.status, 200);
    assert.equal(h.state.payments.get(payment.id)?.status, 'pending');
    const settled = h.run({ k: 'payment.settle', id: payment.id, source: 'test_helper' });
    assert.equal(settled.reply.status, 409);
    assert.equal(settled.reply.error?.code, 'CONFLICT');
    assert.equal(balanceMinor(walletOf(h.state, walletId)!), balanceBefore);
    // The re-submission then holds the amount, and the settle posts it: the wallet is debited once.
    assert.equal(h.run({ k: 'payment.submit', id: payment.id }).reply.status, 200);
    assert.equal(walletOf(h.state, walletId)!.debitsPending, 5_000);
    assert.equal(h.run({ k: 'payment.settle', id: payment.id, source: 'rail' }).reply.status, 200);
    assert.equal(balanceMinor(walletOf(h.state, walletId)!), balanceBefore - 5_000);
    assertSound(h.state);
  });

  it('payment.fail: a payment charged to yesterday failed today → today\'s limit usage not reduced', () => {
    const h = new Harness();
    const { customerId } = fundedCustomer(h, 100_000);
    const yesterday = dataOf(h.run({ k: 'payment.create', body: { customerId, amountMinor: 10_000_000, currency: 'NGN', method: 'bank_transfer', reference: null } }));
    h.nowMs += 24 * HOUR_MS;
    const limits = tierLimits('tier_1', 'NGN')!;
    for (let used = 0; used < limits.dailyMaxMinor; used += limits.perTransactionMaxMinor) {
      assert.equal(h.run({ k: 'txn.create', body: { type: 'funding', customerId, amountMinor: limits.perTransactionMaxMinor, currency: 'NGN', reference: null } }).reply.status, 201);
    }
    assert.equal(h.run({ k: 'payment.fail', id: yesterday.id, code: 'PROVIDER_ERROR', source: 'test_helper' }).reply.status, 200);
    const over = h.run({ k: 'txn.create', body: { type: 'funding', customerId, amountMinor: limits.perTransactionMaxMinor, currency: 'NGN', reference: null } });
    assert.equal(over.reply.error?.code, 'LIMIT_EXCEEDED');
  });

  it('txn.retry: the day\'s limit already used up → 422 LIMIT_EXCEEDED, transaction stays failed', () => {
    const h = new Harness();
    const { customerId } = fundedCustomer(h, 100_000);
    const limits = tierLimits('tier_1', 'NGN')!;
    const failed = dataOf(h.run({ k: 'payment.create', body: { customerId, amountMinor: limits.perTransactionMaxMinor, currency: 'NGN', method: 'bank_transfer', reference: null } }));
    assert.equal(h.run({ k: 'payment.fail', id: failed.id, code: 'RATE_LIMITED', source: 'test_helper' }).reply.status, 200);
    for (let used = 100_000; used + limits.perTransactionMaxMinor <= limits.dailyMaxMinor; used += limits.perTransactionMaxMinor) {
      assert.equal(h.run({ k: 'txn.create', body: { type: 'funding', customerId, amountMinor: limits.perTransactionMaxMinor, currency: 'NGN', reference: null } }).reply.status, 201);
    }
    const retried = h.run({ k: 'txn.retry', id: failed.transaction_id as string });
    assert.equal(retried.reply.status, 422);
    assert.equal(retried.reply.error?.code, 'LIMIT_EXCEEDED');
    assert.equal(h.state.transactions.get(failed.transaction_id as string)?.status, 'failed');
    assertSound(h.state);
    // The next day the same retry is within limits again.
    h.nowMs += 24 * HOUR_MS;
    assert.equal(h.run({ k: 'txn.retry', id: failed.transaction_id as string }).reply.status, 200);
  });
});
