// A payment's creation is recorded once (`payment.opened`) and its transaction derived from it. The rule
// must give exactly the transaction the handler's constructors build, for every method and mode, or a
// replay would rebuild another transaction than the one clients saw; and applying the event must leave
// the same state as the two whole events it replaces.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newPayment } from '../../src/shard/lifecycle/order-payments.ts';
import { transactionOfPayment } from '../../src/shard/payment-opened.ts';
import { applyEvent } from '../../src/shard/events.ts';
import { emptyPartition, type Customer } from '../../src/shard/state.ts';
import { mintId } from '../../src/ids.ts';
import { isLiveOwner } from '../../src/rails/coverage.ts';
import type { HandlerContext } from '../../src/shard/lifecycle/context.ts';
import { createdInLog } from '../../src/store/log-pointers.ts';
import { ListNotes } from '../../src/shard/list-queue.ts';

const PARTITION = 3;

function context(nowMs: number): HandlerContext {
  return { state: emptyPartition(PARTITION), nowMs, mintId: () => mintId(PARTITION, nowMs), railLatencyMs: 0 };
}

function customer(owner: string): Customer {
  return { id: mintId(PARTITION, 1), owner: owner as Customer['owner'], name: 'Ada "Quote" Obi', email: 'a@example.com', phone: '+2348030000000', countryCode: 'NG', tier: 'tier_3' as Customer['tier'], kycLevel: 3, pinHash: null, wallets: {}, usageDay: 0, usageMinor: {}, createdAtMs: 1, updatedAtMs: 1 };
}

const CASES = (['bank_transfer', 'card', 'mobile_money', 'wallet'] as const).flatMap((method) => ['test:acct_1', 'live:acct_1'].flatMap((owner) => [null, 'inv-1 ü'].map((reference) => ({ method, owner, reference }))));

test('payment.opened: every method, test and live, with and without a reference → the derived transaction is the constructed one, byte for byte', () => {
  for (const c of CASES) {
    const ctx = context(1_800_000_000_000 + CASES.indexOf(c));
    const { payment, txn } = newPayment(ctx, { owner: c.owner, customer: customer(c.owner), paymentId: ctx.mintId(), method: c.method, amountMinor: 150_000, feeMinor: 1_500, currency: 'NGN', reference: c.reference, walletId: mintId(PARTITION, 2), ttlMs: 86_400_000 });
    // What createPayment did before the event existed: the constructed transaction, marked as waiting
    // for its payer when it is a sandbox collection.
    if (c.method !== 'wallet' && !isLiveOwner(c.owner)) txn.awaitsPayer = true;
    assert.equal(JSON.stringify(transactionOfPayment(payment)), JSON.stringify(txn), `${c.method} ${c.owner} ${c.reference}`);
  }
});

test('payment.opened: applied → the same state as txn.created then payment.created, and the list rows of both', () => {
  const ctx = context(1_800_000_100_000);
  const { payment, txn } = newPayment(ctx, { owner: 'test:acct_2', customer: customer('test:acct_2'), paymentId: ctx.mintId(), method: 'bank_transfer', amountMinor: 9_000, feeMinor: 90, currency: 'NGN', reference: null, walletId: mintId(PARTITION, 2), ttlMs: 86_400_000 });
  txn.awaitsPayer = true;
  const opened = emptyPartition(PARTITION);
  const whole = emptyPartition(PARTITION);
  // Partitions whose list notes are kept, as a shard file's are.
  opened.listed = new ListNotes(true);
  whole.listed = new ListNotes(true);
  applyEvent(opened, { t: 'payment.opened', payment });
  applyEvent(whole, { t: 'txn.created', txn });
  applyEvent(whole, { t: 'payment.created', payment });
  assert.deepEqual(opened.transactions.get(txn.id), whole.transactions.get(txn.id));
  assert.deepEqual(opened.payments.get(payment.id), whole.payments.get(payment.id));
  // The collection waits for its payer until its expiry, in both.
  assert.deepEqual(opened.due, whole.due);
  assert.notDeepEqual(opened.due, emptyPartition(PARTITION).due);
  const listed = opened.listed.drain();
  assert.deepEqual(listed.rows.map((r) => r.kind).sort(), ['payment', 'transaction']);
  assert.deepEqual(listed, whole.listed.drain());
});

test('payment.opened: a cold row pointing at the record → reads the derived transaction, and nothing for another id', () => {
  const ctx = context(1_800_000_200_000);
  const { payment } = newPayment(ctx, { owner: 'test:acct_3', customer: customer('test:acct_3'), paymentId: ctx.mintId(), method: 'card', amountMinor: 5_000, feeMinor: 50, currency: 'NGN', reference: null, walletId: mintId(PARTITION, 2), ttlMs: 86_400_000 });
  const record = JSON.stringify([{ t: 'payment.opened', payment }]);
  const wal = { recordAt: (lsn: number) => (lsn === 7 ? record : undefined) } as unknown as Parameters<typeof createdInLog>[0];
  assert.equal(createdInLog(wal, 'txn', payment.transactionId, 7), JSON.stringify(transactionOfPayment(payment)));
  assert.equal(createdInLog(wal, 'payment', payment.id, 7), JSON.stringify(payment));
  assert.throws(() => createdInLog(wal, 'txn', payment.id, 7), /should be in that log record/);
});
