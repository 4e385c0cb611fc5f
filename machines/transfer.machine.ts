// The transfer (payout) lifecycle: pending (funds held) → processing (submitted to the payout rail)
// → completed | failed | unknown (no answer) → completed | failed by reconciliation.
// Pure; runs inside a shard worker. The linked transaction carries failure codes and retry rules.
// Invariant: a transfer is never paid twice: unknown is resolved by requery, never by resubmission.
import { setup } from 'xstate';

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

export const transferMachine = setup({
  types: {} as { events: TransferEvent },
  guards: { reconciledCompleted: ({ event }) => event.type === 'reconcile' && event.outcome === 'completed' },
}).createMachine({
  id: 'transfer',
  initial: 'pending',
  states: {
    pending: { on: { submit: 'processing', fail: 'failed', cancel: 'failed' } },
    processing: { on: { settle: 'completed', fail: 'failed', timeout: 'unknown' } },
    unknown: { on: { reconcile: [{ target: 'completed', guard: 'reconciledCompleted' }, { target: 'failed' }] } },
    completed: { type: 'final' },
    failed: { on: { retry: 'pending' } },
  },
});
