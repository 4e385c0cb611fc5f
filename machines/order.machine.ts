// The service order lifecycle: all 12 states of the spec's table, with provider funding failure and
// manual fulfilment. Pure; runs inside a shard worker; time arrives in events. Guards decide; actions
// name the effects the shard performs. Invariant: `unknown` is never re-purchased: it leaves only by
// reconciliation; a definite failure ends `failed` (money released or refunded beside the status);
// refund_pending → refunded is the funding failure's path; cancellation is possible only before
// fulfilment; completed, refunded and cancelled accept nothing, and failed only a retry of its
// transaction (the spec: "completed/failed as outcomes").
import { setup } from 'xstate';
import { compileMachine, effectActions } from './step.ts';

export const ORDER_STATUSES = [
  'pending',
  'awaiting_payment',
  'fulfilling',
  'completed',
  'failed',
  'unknown',
  'retry_required',
  'provider_funding_failure',
  'manual_fulfilment',
  'refund_pending',
  'refunded',
  'cancelled',
] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];

export type OrderEvent =
  | { type: 'payment.opened'; atMs: number }
  | { type: 'payment.settled'; atMs: number }
  | { type: 'payment.failed'; atMs: number }
  | { type: 'cancel'; atMs: number }
  | { type: 'rail.delivered'; atMs: number }
  | { type: 'rail.failed'; atMs: number }
  | { type: 'rail.timeout'; atMs: number }
  | { type: 'rail.retry'; atMs: number }
  | { type: 'rail.funding_failed'; atMs: number }
  | { type: 'rail.manual'; atMs: number }
  | { type: 'retry.dispatch'; atMs: number }
  /** A failed transaction of the order retried by the client (POST /v1/transactions/{id}/retry). */
  | { type: 'transaction.retry'; atMs: number }
  | { type: 'reconcile'; atMs: number; outcome: 'delivered' | 'failed' }
  | { type: 'operator.resolve'; atMs: number; outcome: 'delivered' | 'failed' }
  | { type: 'refund.start'; atMs: number }
  | { type: 'refund.completed'; atMs: number };

/**
 * Effects: awaitPayment lets the collection be completed (a wallet debit is confirmed by its rail);
 * dispatchPurchase sends the purchase to the fulfilment rail (provider_reference set); cancelTransactions
 * fails both transactions with CANCELLED (a hold released); failServiceTransaction fails the service
 * transaction; settleFunds fills the fulfillment_snapshot, posts the funds and takes the fee;
 * releaseOrRefund gives the money back beside the status (the order stays failed): a wallet hold
 * released in the same record, money collected by card or bank transfer refunded (the refund recorded
 * pending on the order and its collection's transaction, completed after the rail latency);
 * openRefund records the refund of a collection, pending, on the order and its collection's
 * transaction; startRefund schedules the refund path's next step; returnFunds gives the customer's money
 * back (a wallet hold released, a collection's refund completed); scheduleRetry schedules the controlled
 * retry; requery asks the rail again later (never re-purchases); countUsage charges a retried order
 * against the day's limits (checked first); payAgain pays a retried order again the way it was first
 * paid (a wallet hold placed again, a failed collection re-opened, a refunded one replaced by a new
 * collection); retryServiceTransaction puts the service transaction back to pending as its next attempt;
 * emitCompleted and emitFailed write service_order.completed and service_order.failed.
 */
export const ORDER_EFFECTS = [
  'awaitPayment',
  'dispatchPurchase',
  'cancelTransactions',
  'failServiceTransaction',
  'settleFunds',
  'releaseOrRefund',
  'openRefund',
  'startRefund',
  'returnFunds',
  'scheduleRetry',
  'requery',
  'countUsage',
  'payAgain',
  'retryServiceTransaction',
  'emitCompleted',
  'emitFailed',
] as const;
export type OrderEffect = (typeof ORDER_EFFECTS)[number];

const delivered = ({ event }: { event: OrderEvent }): boolean =>
  (event.type === 'reconcile' || event.type === 'operator.resolve') && event.outcome === 'delivered';

const COMPLETE = ['settleFunds', 'emitCompleted'] as const;
/** A definite failure: the order ends failed, its money released or refunded beside the status. */
const FAIL = ['failServiceTransaction', 'releaseOrRefund', 'emitFailed'] as const;
/** The funding failure: the transactions fail (final) and the refund path opens. */
const FAIL_THEN_REFUND = ['failServiceTransaction', 'startRefund', 'emitFailed'] as const;

export const orderMachine = setup({
  types: {} as { events: OrderEvent },
  guards: { delivered },
  actions: effectActions(ORDER_EFFECTS),
}).createMachine({
  id: 'service_order',
  initial: 'pending',
  states: {
    pending: {
      on: {
        'payment.opened': { target: 'awaiting_payment', actions: 'awaitPayment' },
        cancel: { target: 'cancelled', actions: 'cancelTransactions' },
      },
    },
    awaiting_payment: {
      on: {
        'payment.settled': { target: 'fulfilling', actions: 'dispatchPurchase' },
        // The collection failed before any purchase (not a row of the spec's table).
        'payment.failed': { target: 'failed', actions: ['failServiceTransaction', 'emitFailed'] },
        cancel: { target: 'cancelled', actions: 'cancelTransactions' },
      },
    },
    fulfilling: {
      on: {
        'rail.delivered': { target: 'completed', actions: COMPLETE },
        'rail.failed': { target: 'failed', actions: FAIL },
        'rail.timeout': { target: 'unknown', actions: 'requery' },
        'rail.retry': { target: 'retry_required', actions: 'scheduleRetry' },
        'rail.funding_failed': { target: 'provider_funding_failure', actions: FAIL_THEN_REFUND },
        'rail.manual': 'manual_fulfilment',
        // The spec's "refund begins" row; no rail answer takes it (a definite failure ends failed).
        'refund.start': { target: 'refund_pending', actions: ['failServiceTransaction', 'openRefund', 'startRefund', 'emitFailed'] },
      },
    },
    retry_required: { on: { 'retry.dispatch': { target: 'fulfilling', actions: 'dispatchPurchase' } } },
    // In flight, not failed: only reconciliation (a requery's answer) moves it on.
    unknown: {
      on: {
        reconcile: [
          { target: 'completed', guard: 'delivered', actions: COMPLETE },
          { target: 'failed', actions: FAIL },
        ],
      },
    },
    // Paid, but the rail could not fund the purchase: the refund path opens.
    provider_funding_failure: { on: { 'refund.start': { target: 'refund_pending', actions: ['openRefund', 'startRefund'] } } },
    // Held for an authorized operator, who resolves it delivered or failed (money released or refunded).
    manual_fulfilment: {
      on: {
        'operator.resolve': [
          { target: 'completed', guard: 'delivered', actions: COMPLETE },
          { target: 'failed', actions: FAIL },
        ],
      },
    },
    refund_pending: { on: { 'refund.completed': { target: 'refunded', actions: 'returnFunds' } } },
    completed: { type: 'final' },
    // An outcome, not a terminal state (the spec: "completed/failed as outcomes"): a failed transaction
    // of the order with a retryable code is retried (the transaction machine's guard decides), and the
    // order waits for its payment again: limits charged, paid again, the service transaction pending.
    failed: { on: { 'transaction.retry': { target: 'awaiting_payment', actions: ['countUsage', 'payAgain', 'retryServiceTransaction'] } } },
    refunded: { type: 'final' },
    cancelled: { type: 'final' },
  },
});

/** The table the shard consults, compiled when the module loads (at start). */
export const orderTable = compileMachine<OrderStatus, Record<string, never>, OrderEvent, OrderEffect>(orderMachine, ORDER_STATUSES);
