// The service order lifecycle: all 12 states of the spec's table, with provider funding failure and
// manual fulfilment. Pure; runs inside a shard worker; time arrives in events.
// Invariant: `unknown` is never re-purchased: it leaves only by reconciliation; a definite failure ends
// `failed` (money collected is refunded beside the status); refund_pending → refunded is the funding
// failure's path; cancellation is possible only before fulfilment.
import { setup } from 'xstate';

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

const delivered = ({ event }: { event: OrderEvent }): boolean =>
  (event.type === 'reconcile' || event.type === 'operator.resolve') && event.outcome === 'delivered';

export const orderMachine = setup({
  types: {} as { events: OrderEvent },
  guards: { delivered },
}).createMachine({
  id: 'service_order',
  initial: 'pending',
  states: {
    pending: { on: { 'payment.opened': 'awaiting_payment', cancel: 'cancelled' } },
    awaiting_payment: { on: { 'payment.settled': 'fulfilling', 'payment.failed': 'failed', cancel: 'cancelled' } },
    fulfilling: {
      on: {
        'rail.delivered': 'completed',
        'rail.failed': 'failed',
        'rail.timeout': 'unknown',
        'rail.retry': 'retry_required',
        'rail.funding_failed': 'provider_funding_failure',
        'rail.manual': 'manual_fulfilment',
        'refund.start': 'refund_pending',
      },
    },
    retry_required: { on: { 'retry.dispatch': 'fulfilling' } },
    unknown: { on: { reconcile: [{ target: 'completed', guard: 'delivered' }, { target: 'failed' }] } },
    provider_funding_failure: { on: { 'refund.start': 'refund_pending' } },
    manual_fulfilment: { on: { 'operator.resolve': [{ target: 'completed', guard: 'delivered' }, { target: 'failed' }] } },
    refund_pending: { on: { 'refund.completed': 'refunded' } },
    completed: { type: 'final' },
    // An outcome, not a terminal state (the spec: "completed/failed as outcomes"): a failed transaction
    // with a retryable code is retried, and the order waits for its payment again.
    failed: { on: { 'transaction.retry': 'awaiting_payment' } },
    refunded: { type: 'final' },
    cancelled: { type: 'final' },
  },
});
