// The transaction lifecycle of the spec's state table: pending, processing, completed, failed, unknown.
// Pure; runs inside a shard worker. Guards decide (retry only for a recoverable failure); actions name
// the effects the shard performs (holds, limit usage, requery). Invariant: cancel only from pending;
// retry only from failed with PROVIDER_ERROR, INTERNAL or RATE_LIMITED; unknown leaves only by reconciliation.
import { setup } from 'xstate';
import { compileMachine, effectActions } from './step.ts';

export const TRANSACTION_STATUSES = ['pending', 'processing', 'completed', 'failed', 'unknown'] as const;
export type TransactionStatus = (typeof TRANSACTION_STATUSES)[number];

export const RETRYABLE_FAILURE_CODES = ['PROVIDER_ERROR', 'INTERNAL', 'RATE_LIMITED'] as const;
/**
 * EXPIRED: a sandbox collection the payer never paid before its instructions or page expired.
 * PROVIDER_FUNDING_FAILURE: the fulfilment rail could not fund a paid purchase; the order is refunded
 * (terminal), so its transactions are not retried: the client places a new order.
 */
export const FINAL_FAILURE_CODES = ['COMPLIANCE_DENIED', 'INSUFFICIENT_FUNDS', 'LIMIT_EXCEEDED', 'CANCELLED', 'EXPIRED', 'PROVIDER_FUNDING_FAILURE'] as const;
export type FailureCode = (typeof RETRYABLE_FAILURE_CODES)[number] | (typeof FINAL_FAILURE_CODES)[number];

export interface TransactionContext {
  failureCode: FailureCode | null;
}

export type TransactionEvent =
  | { type: 'submit'; atMs: number }
  | { type: 'settle'; atMs: number }
  | { type: 'fail'; atMs: number; code: FailureCode }
  | { type: 'timeout'; atMs: number }
  | { type: 'reconcile'; atMs: number; outcome: 'completed' | 'failed' }
  | { type: 'cancel'; atMs: number }
  | { type: 'retry'; atMs: number };

/**
 * Effects: releaseHold voids a hold on the funds (if one is held); postHold posts it; returnUsage gives
 * the attempt's amount back to the day's limit usage; countUsage charges a new attempt against the
 * limits; requery asks the provider again later (reconciliation).
 */
export const TRANSACTION_EFFECTS = ['releaseHold', 'postHold', 'returnUsage', 'countUsage', 'requery'] as const;
export type TransactionEffect = (typeof TRANSACTION_EFFECTS)[number];

export function isRetryable(code: FailureCode | null): boolean {
  return code !== null && (RETRYABLE_FAILURE_CODES as readonly string[]).includes(code);
}

export const transactionMachine = setup({
  types: {} as { context: TransactionContext; events: TransactionEvent },
  guards: {
    retryable: ({ context }) => isRetryable(context.failureCode),
    reconciledCompleted: ({ event }) => event.type === 'reconcile' && event.outcome === 'completed',
  },
  actions: effectActions(TRANSACTION_EFFECTS),
}).createMachine({
  id: 'transaction',
  initial: 'pending',
  context: { failureCode: null },
  states: {
    // Recorded before any processing. A cancel fails it with CANCELLED and releases any hold.
    pending: {
      on: {
        submit: 'processing',
        settle: { target: 'completed', actions: 'postHold' },
        fail: { target: 'failed', actions: ['releaseHold', 'returnUsage'] },
        cancel: { target: 'failed', actions: ['releaseHold', 'returnUsage'] },
      },
    },
    // The provider leg is submitted: it cannot be cancelled (409); a timeout leaves it unknown.
    processing: {
      on: {
        settle: { target: 'completed', actions: 'postHold' },
        fail: { target: 'failed', actions: ['releaseHold', 'returnUsage'] },
        timeout: { target: 'unknown', actions: 'requery' },
      },
    },
    // The provider neither confirmed nor denied: reconciliation resolves it to completed or failed.
    unknown: {
      on: {
        reconcile: [
          { target: 'completed', guard: 'reconciledCompleted', actions: 'postHold' },
          { target: 'failed', actions: ['releaseHold', 'returnUsage'] },
        ],
      },
    },
    completed: { type: 'final' },
    // A new attempt under the same id (recorded in status history), only after a recoverable failure.
    failed: { on: { retry: { target: 'pending', guard: 'retryable', actions: 'countUsage' } } },
  },
});

/** The table the shard consults, compiled when the module loads (at start). */
export const transactionTable = compileMachine<TransactionStatus, TransactionContext, TransactionEvent, TransactionEffect>(transactionMachine, TRANSACTION_STATUSES);
