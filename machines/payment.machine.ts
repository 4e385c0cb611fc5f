// The payment (collection) lifecycle: pending, processing, completed, failed.
// Pure; runs inside a shard worker. It moves in step with its transaction, which holds the failure detail.
// Invariant: only a failed payment whose transaction is retryable goes back to pending.
import { setup } from 'xstate';

export const PAYMENT_STATUSES = ['pending', 'processing', 'completed', 'failed'] as const;
export type PaymentStatus = (typeof PAYMENT_STATUSES)[number];

export type PaymentEvent =
  | { type: 'submit'; atMs: number }
  | { type: 'settle'; atMs: number }
  | { type: 'fail'; atMs: number }
  | { type: 'cancel'; atMs: number }
  | { type: 'retry'; atMs: number };

export const paymentMachine = setup({
  types: {} as { events: PaymentEvent },
}).createMachine({
  id: 'payment',
  initial: 'pending',
  states: {
    pending: { on: { submit: 'processing', settle: 'completed', fail: 'failed', cancel: 'failed' } },
    processing: { on: { settle: 'completed', fail: 'failed' } },
    completed: { type: 'final' },
    failed: { on: { retry: 'pending' } },
  },
});
