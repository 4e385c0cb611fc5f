// Each row of the spec's state tables (service order, transaction, webhook subscription) through the
// compiled tables: the status it ends in and the effects that carry out its "also" column; and what the
// tables have no row for is refused (a failed order leaves only by a retry of its transaction; unknown is
// never re-purchased).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { orderTable, type OrderEvent, type OrderStatus } from '../../machines/order.machine.ts';
import { FINAL_FAILURE_CODES, RETRYABLE_FAILURE_CODES, transactionTable, type FailureCode, type TransactionEvent, type TransactionStatus } from '../../machines/transaction.machine.ts';
import { webhookSubscriptionTable } from '../../machines/webhook-subscription.machine.ts';

const AT_MS = 1_795_000_000_000;
const order = (from: OrderStatus, event: OrderEvent) => orderTable.step(from, {}, event);
const txn = (from: TransactionStatus, event: TransactionEvent, failureCode: FailureCode | null = null) => transactionTable.step(from, { failureCode }, event);

describe('service order table', () => {
  const rows: Array<[OrderStatus, OrderEvent, OrderStatus, string[]]> = [
    ['pending', { type: 'payment.opened', atMs: AT_MS }, 'awaiting_payment', ['awaitPayment']],
    ['awaiting_payment', { type: 'payment.settled', atMs: AT_MS }, 'fulfilling', ['dispatchPurchase']],
    ['fulfilling', { type: 'rail.delivered', atMs: AT_MS }, 'completed', ['settleFunds', 'emitCompleted']],
    // "funds released or refunded": beside the status, which stays failed.
    ['fulfilling', { type: 'rail.failed', atMs: AT_MS }, 'failed', ['failServiceTransaction', 'releaseOrRefund', 'emitFailed']],
    ['fulfilling', { type: 'rail.retry', atMs: AT_MS }, 'retry_required', ['scheduleRetry']],
    ['fulfilling', { type: 'refund.start', atMs: AT_MS }, 'refund_pending', ['failServiceTransaction', 'openRefund', 'startRefund', 'emitFailed']],
    ['refund_pending', { type: 'refund.completed', atMs: AT_MS }, 'refunded', ['returnFunds']],
    ['fulfilling', { type: 'rail.timeout', atMs: AT_MS }, 'unknown', ['requery']],
    ['unknown', { type: 'reconcile', atMs: AT_MS, outcome: 'delivered' }, 'completed', ['settleFunds', 'emitCompleted']],
    ['unknown', { type: 'reconcile', atMs: AT_MS, outcome: 'failed' }, 'failed', ['failServiceTransaction', 'releaseOrRefund', 'emitFailed']],
    ['pending', { type: 'cancel', atMs: AT_MS }, 'cancelled', ['cancelTransactions']],
    ['awaiting_payment', { type: 'cancel', atMs: AT_MS }, 'cancelled', ['cancelTransactions']],
  ];
  for (const [from, event, to, effects] of rows) {
    it(`${from} + ${event.type}${'outcome' in event ? `(${event.outcome})` : ''} → ${to}, effects ${effects.join(', ')}`, () => {
      assert.deepEqual(order(from, event), { target: to, actions: effects });
    });
  }

  // The transaction table's retry row, through the order: "completed/failed as outcomes", so a failed
  // order whose transaction is retried (its retryable code checked by the transaction table, below)
  // waits for its payment again: limits charged, paid again, the service transaction pending.
  it('failed + transaction.retry → awaiting_payment, effects countUsage, payAgain, retryServiceTransaction', () => {
    assert.deepEqual(order('failed', { type: 'transaction.retry', atMs: AT_MS }), { target: 'awaiting_payment', actions: ['countUsage', 'payAgain', 'retryServiceTransaction'] });
  });

  it('failed: only a transaction retry leaves it → no new dispatch without payment, no refund path', () => {
    assert.deepEqual(orderTable.eventTypes.filter((type) => orderTable.handles('failed', type)), ['transaction.retry']);
    assert.equal(order('failed', { type: 'retry.dispatch', atMs: AT_MS }), null);
    assert.equal(order('failed', { type: 'refund.start', atMs: AT_MS }), null);
  });

  // The rows the table leaves out ("not shown"): provider funding failure opens the refund path, and an
  // operator's failed resolution is a definite failure like the rail's.
  it('provider_funding_failure + refund.start → refund_pending, the refund opened on the payment', () => {
    assert.deepEqual(order('fulfilling', { type: 'rail.funding_failed', atMs: AT_MS }), { target: 'provider_funding_failure', actions: ['failServiceTransaction', 'startRefund', 'emitFailed'] });
    assert.deepEqual(order('provider_funding_failure', { type: 'refund.start', atMs: AT_MS }), { target: 'refund_pending', actions: ['openRefund', 'startRefund'] });
  });

  it('manual_fulfilment + operator.resolve(failed) → failed, funds released or refunded (never refund_pending)', () => {
    assert.deepEqual(order('manual_fulfilment', { type: 'operator.resolve', atMs: AT_MS, outcome: 'failed' }), { target: 'failed', actions: ['failServiceTransaction', 'releaseOrRefund', 'emitFailed'] });
    assert.deepEqual(order('manual_fulfilment', { type: 'operator.resolve', atMs: AT_MS, outcome: 'delivered' }), { target: 'completed', actions: ['settleFunds', 'emitCompleted'] });
  });

  it('unknown: never re-purchased, never refunded locally → only reconcile moves it', () => {
    assert.deepEqual(orderTable.eventTypes.filter((type) => orderTable.handles('unknown', type)), ['reconcile']);
  });

  it('cancel after fulfilment began → refused', () => {
    for (const from of ['fulfilling', 'unknown', 'retry_required', 'completed', 'failed'] as const) assert.equal(order(from, { type: 'cancel', atMs: AT_MS }), null, from);
  });
});

describe('transaction table', () => {
  it('pending + cancel → failed, any hold released', () => {
    assert.deepEqual(txn('pending', { type: 'cancel', atMs: AT_MS }), { target: 'failed', actions: ['releaseHold', 'returnUsage'] });
  });

  it('processing + cancel → refused (409)', () => {
    assert.equal(txn('processing', { type: 'cancel', atMs: AT_MS }), null);
  });

  for (const code of RETRYABLE_FAILURE_CODES) {
    it(`failed(${code}) + retry → pending, a new attempt counted against the limits`, () => {
      assert.deepEqual(txn('failed', { type: 'retry', atMs: AT_MS }, code), { target: 'pending', actions: ['countUsage'] });
    });
  }
  for (const code of FINAL_FAILURE_CODES) {
    it(`failed(${code}) + retry → refused (final)`, () => {
      assert.equal(txn('failed', { type: 'retry', atMs: AT_MS }, code), null);
    });
  }

  it('unknown + reconcile → completed (hold posted) or failed (hold released)', () => {
    assert.deepEqual(txn('unknown', { type: 'reconcile', atMs: AT_MS, outcome: 'completed' }), { target: 'completed', actions: ['postHold'] });
    assert.deepEqual(txn('unknown', { type: 'reconcile', atMs: AT_MS, outcome: 'failed' }), { target: 'failed', actions: ['releaseHold', 'returnUsage'] });
  });
});

describe('webhook subscription table', () => {
  it('active + delivery failure → disabled only once consecutive_failures passes the threshold', () => {
    const failed = { type: 'delivery.failed', atMs: AT_MS, disableAfter: 10 } as const;
    assert.equal(webhookSubscriptionTable.step('active', { consecutiveFailures: 9 }, failed)?.target, 'active');
    assert.equal(webhookSubscriptionTable.step('active', { consecutiveFailures: 10 }, failed)?.target, 'disabled');
  });

  it('disabled + re-enabled → active, failures reset', () => {
    assert.deepEqual(webhookSubscriptionTable.step('disabled', { consecutiveFailures: 11 }, { type: 'enable', atMs: AT_MS }), { target: 'active', actions: ['resetFailures'] });
  });
});
