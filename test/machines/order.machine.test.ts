// The service order machine through pure transitions: every row of the spec's table (plus funding
// failure and manual fulfilment), and every event a state does not accept is refused.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { initialTransition, transition } from 'xstate';
import { nextStatus } from '../../machines/step.ts';
import { ORDER_STATUSES, orderMachine, type OrderEvent, type OrderStatus } from '../../machines/order.machine.ts';

const at = 1_795_000_000_000;
const events: Record<string, OrderEvent> = {
  opened: { type: 'payment.opened', atMs: at },
  settled: { type: 'payment.settled', atMs: at },
  paymentFailed: { type: 'payment.failed', atMs: at },
  cancel: { type: 'cancel', atMs: at },
  delivered: { type: 'rail.delivered', atMs: at },
  failed: { type: 'rail.failed', atMs: at },
  timeout: { type: 'rail.timeout', atMs: at },
  retry: { type: 'rail.retry', atMs: at },
  funding: { type: 'rail.funding_failed', atMs: at },
  manual: { type: 'rail.manual', atMs: at },
  dispatch: { type: 'retry.dispatch', atMs: at },
  reconcileDelivered: { type: 'reconcile', atMs: at, outcome: 'delivered' },
  reconcileFailed: { type: 'reconcile', atMs: at, outcome: 'failed' },
  resolveDelivered: { type: 'operator.resolve', atMs: at, outcome: 'delivered' },
  resolveFailed: { type: 'operator.resolve', atMs: at, outcome: 'failed' },
  refundStart: { type: 'refund.start', atMs: at },
  refundDone: { type: 'refund.completed', atMs: at },
  txnRetry: { type: 'transaction.retry', atMs: at },
};

/** [from, event, to]: every accepted transition. */
const TABLE: Array<[OrderStatus, keyof typeof events, OrderStatus]> = [
  ['pending', 'opened', 'awaiting_payment'],
  ['pending', 'cancel', 'cancelled'],
  ['awaiting_payment', 'settled', 'fulfilling'],
  ['awaiting_payment', 'paymentFailed', 'failed'],
  ['awaiting_payment', 'cancel', 'cancelled'],
  ['fulfilling', 'delivered', 'completed'],
  ['fulfilling', 'failed', 'failed'],
  ['fulfilling', 'retry', 'retry_required'],
  ['fulfilling', 'refundStart', 'refund_pending'],
  ['fulfilling', 'timeout', 'unknown'],
  ['fulfilling', 'funding', 'provider_funding_failure'],
  ['fulfilling', 'manual', 'manual_fulfilment'],
  ['retry_required', 'dispatch', 'fulfilling'],
  ['unknown', 'reconcileDelivered', 'completed'],
  ['unknown', 'reconcileFailed', 'failed'],
  ['provider_funding_failure', 'refundStart', 'refund_pending'],
  ['manual_fulfilment', 'resolveDelivered', 'completed'],
  ['manual_fulfilment', 'resolveFailed', 'failed'],
  // "failed | POST /v1/transactions/{id}/retry | failure.code is PROVIDER_ERROR, INTERNAL or RATE_LIMITED | pending":
  // the order follows its transaction back to waiting for its payment.
  ['failed', 'txnRetry', 'awaiting_payment'],
  ['refund_pending', 'refundDone', 'refunded'],
];

describe('order machine', () => {
  it('initial state → pending', () => {
    const [snapshot] = initialTransition(orderMachine);
    assert.equal(snapshot.value, 'pending');
  });

  for (const [from, name, to] of TABLE) {
    it(`${from} + ${events[name]!.type}${'outcome' in events[name]! ? `(${(events[name] as { outcome: string }).outcome})` : ''} → ${to}`, () => {
      assert.equal(nextStatus(orderMachine, from, {}, events[name]!), to);
      const [next] = transition(orderMachine, orderMachine.resolveState({ value: from, context: {} }), events[name]!);
      assert.equal(next.value, to);
    });
  }

  it('every (state, event) pair not in the table is refused', () => {
    let refused = 0;
    for (const from of ORDER_STATUSES) {
      for (const [name, event] of Object.entries(events)) {
        const row = TABLE.find(([f, e]) => f === from && e === name);
        const got = nextStatus(orderMachine, from, {}, event);
        if (row === undefined) {
          assert.equal(got, null, `${from} must refuse ${name}`);
          refused += 1;
        }
      }
    }
    assert.equal(refused, ORDER_STATUSES.length * Object.keys(events).length - TABLE.length);
  });

  it('unknown is never re-dispatched, terminal states accept nothing, and failed only a transaction retry', () => {
    assert.equal(nextStatus(orderMachine, 'unknown', {}, events.dispatch!), null);
    assert.equal(nextStatus(orderMachine, 'unknown', {}, events.delivered!), null);
    for (const terminal of ['completed', 'refunded', 'cancelled'] as const) {
      for (const event of Object.values(events)) assert.equal(nextStatus(orderMachine, terminal, {}, event), null);
    }
    for (const [name, event] of Object.entries(events)) assert.equal(nextStatus(orderMachine, 'failed', {}, event), name === 'txnRetry' ? 'awaiting_payment' : null, name);
  });

  it('all 12 spec states exist', () => {
    assert.equal(ORDER_STATUSES.length, 12);
    assert.deepEqual(Object.keys(orderMachine.config.states ?? {}).sort(), [...ORDER_STATUSES].sort());
  });
});
