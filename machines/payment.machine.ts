// The payment (collection) lifecycle: pending, processing, completed, failed. Pure; runs inside a shard
// worker. It moves in step with its transaction, which holds the failure detail and decides retries.
// Invariant: a completed payment never moves again; only a failed one goes back to pending (retry).
import { setup } from 'xstate';
import { compileMachine, effectActions } from './step.ts';

export const PAYMENT_STATUSES = ['pending', 'processing', 'completed', 'failed'] as const;
export type PaymentStatus = (typeof PAYMENT_STATUSES)[number];

export type PaymentEvent =
  | { type: 'submit'; atMs: number }
  | { type: 'settle'; atMs: number }
  | { type: 'fail'; atMs: number }
  | { type: 'cancel'; atMs: number }
  | { type: 'retry'; atMs: number };

/**
 * Effects: confirmDebit has the wallet rail confirm a held wallet debit; emitCompleted writes the
 * payment.completed event; resubmit starts the new attempt (a wallet places its hold again, a live
 * collection asks its connector again under the new attempt's reference).
 */
export const PAYMENT_EFFECTS = ['confirmDebit', 'emitCompleted', 'resubmit'] as const;
export type PaymentEffect = (typeof PAYMENT_EFFECTS)[number];

export const paymentMachine = setup({
  types: {} as { events: PaymentEvent },
  actions: effectActions(PAYMENT_EFFECTS),
}).createMachine({
  id: 'payment',
  initial: 'pending',
  states: {
    // A collection waits here for the payer; a wallet payment's debit is held by submit.
    pending: {
      on: {
        submit: { target: 'processing', actions: 'confirmDebit' },
        settle: { target: 'completed', actions: 'emitCompleted' },
        fail: 'failed',
        cancel: 'failed',
      },
    },
    processing: { on: { settle: { target: 'completed', actions: 'emitCompleted' }, fail: 'failed' } },
    completed: { type: 'final' },
    // Its transaction's machine decides whether the failure may be retried.
    failed: { on: { retry: { target: 'pending', actions: 'resubmit' } } },
  },
});

/** The table the shard consults, compiled when the module loads (at start). */
export const paymentTable = compileMachine<PaymentStatus, Record<string, never>, PaymentEvent, PaymentEffect>(paymentMachine, PAYMENT_STATUSES);
