// The transfer (payout) lifecycle: pending (funds held) → processing (submitted to the payout rail)
// → completed | failed | unknown (no answer) → completed | failed by reconciliation.
// Pure; runs inside a shard worker. The linked transaction carries failure codes and retry rules.
// Invariant: a transfer is never paid twice: unknown is resolved by requery, never by resubmission.
import { setup } from 'xstate';
import { compileMachine, effectActions } from './step.ts';

export const TRANSFER_STATUSES = ['pending', 'processing', 'completed', 'failed', 'unknown'] as const;
export type TransferStatus = (typeof TRANSFER_STATUSES)[number];

export type TransferEvent =
  | { type: 'submit'; atMs: number }
  | { type: 'settle'; atMs: number }
  | { type: 'fail'; atMs: number }
  | { type: 'cancel'; atMs: number }
  | { type: 'timeout'; atMs: number }
  | { type: 'reconcile'; atMs: number; outcome: 'completed' | 'failed' }
  | { type: 'retry'; atMs: number };

/**
 * Effects: pay sends the payout to its rail (or credits the receiving wallet); emitCompleted and
 * emitFailed write transfer.completed and transfer.failed; requery asks the rail again later about the
 * same reference; resubmit holds the funds again and submits the new attempt.
 */
export const TRANSFER_EFFECTS = ['pay', 'emitCompleted', 'emitFailed', 'requery', 'resubmit'] as const;
export type TransferEffect = (typeof TRANSFER_EFFECTS)[number];

export const transferMachine = setup({
  types: {} as { events: TransferEvent },
  guards: { reconciledCompleted: ({ event }) => event.type === 'reconcile' && event.outcome === 'completed' },
  actions: effectActions(TRANSFER_EFFECTS),
}).createMachine({
  id: 'transfer',
  initial: 'pending',
  states: {
    // A created transfer is pending with its funds held.
    pending: {
      on: {
        submit: { target: 'processing', actions: 'pay' },
        fail: { target: 'failed', actions: 'emitFailed' },
        cancel: { target: 'failed', actions: 'emitFailed' },
      },
    },
    // Settlement follows the provider's answer or webhook.
    processing: {
      on: {
        settle: { target: 'completed', actions: 'emitCompleted' },
        fail: { target: 'failed', actions: 'emitFailed' },
        timeout: { target: 'unknown', actions: 'requery' },
      },
    },
    unknown: {
      on: {
        reconcile: [
          { target: 'completed', guard: 'reconciledCompleted', actions: 'emitCompleted' },
          { target: 'failed', actions: 'emitFailed' },
        ],
      },
    },
    completed: { type: 'final' },
    // Its transaction's machine decides whether the failure may be retried.
    failed: { on: { retry: { target: 'pending', actions: 'resubmit' } } },
  },
});

/** The table the shard consults, compiled when the module loads (at start). */
export const transferTable = compileMachine<TransferStatus, Record<string, never>, TransferEvent, TransferEffect>(transferMachine, TRANSFER_STATUSES);
