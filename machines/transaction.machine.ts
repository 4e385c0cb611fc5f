// The transaction lifecycle of the spec's state table: pending, processing, completed, failed, unknown.
// Pure; runs inside a shard worker. Retry is allowed only for recoverable failure codes.
// Invariant: cancel only from pending; retry only from failed with PROVIDER_ERROR, INTERNAL or RATE_LIMITED.
import { setup } from 'xstate';

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

export interface TransactionContext extends Record<string, unknown> {
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

export function isRetryable(code: FailureCode | null): boolean {
  return code !== null && (RETRYABLE_FAILURE_CODES as readonly string[]).includes(code);
}

export const transactionMachine = setup({
  types: {} as { context: TransactionContext; events: TransactionEvent },
  guards: {
    retryable: ({ context }) => isRetryable(context.failureCode),
    reconciledCompleted: ({ event }) => event.type === 'reconcile' && event.outcome === 'completed',
  },
}).createMachine({
  id: 'transaction',
  initial: 'pending',
  context: { failureCode: null },
  states: {
    pending: { on: { submit: 'processing', settle: 'completed', fail: 'failed', cancel: 'failed' } },
    processing: { on: { settle: 'completed', fail: 'failed', timeout: 'unknown' } },
    unknown: {
      on: { reconcile: [{ target: 'completed', guard: 'reconciledCompleted' }, { target: 'failed' }] },
    },
    completed: { type: 'final' },
    failed: { on: { retry: { target: 'pending', guard: 'retryable' } } },
  },
});
