// Rail work in flight lives in state, not in timers: after recovery, these are the commands that
// re-issue it (a wallet debit awaiting the rail, a transfer to submit, a payout to requery).
// Runs inside shard workers at start-up. Rails dedupe by reference, so re-asking never pays twice.
// Invariant: every entity waiting on a rail gets exactly one follow-up command.
import { payoutOutcome } from '../../rails/sandbox-payout.ts';
import type { PartitionState } from '../state.ts';
import type { Effect } from './common.ts';
import { creditEffect } from './transfers.ts';

export function resumeEffects(state: PartitionState, railLatencyMs: number): Effect[] {
  const effects: Effect[] = [];
  const base = (owner: string, atMs: number) => ({ owner, nowMs: atMs, partition: state.partition });
  for (const payment of state.payments.values()) {
    if (payment.method !== 'wallet') continue;
    const attempt = state.transactions.get(payment.transactionId)?.attempt;
    if (payment.status === 'processing') {
      effects.push({ afterMs: railLatencyMs, cmd: { k: 'payment.settle', id: payment.id, source: 'rail', attempt, ...base(payment.owner, payment.updatedAtMs) } });
    } else if (payment.status === 'pending') {
      // A retried wallet payment whose hold was not yet placed when the process stopped.
      effects.push({ afterMs: 0, cmd: { k: 'payment.submit', id: payment.id, ...base(payment.owner, payment.updatedAtMs) } });
    }
  }
  for (const transfer of state.transfers.values()) {
    const at = base(transfer.owner, transfer.updatedAtMs);
    if (transfer.status === 'pending') effects.push({ afterMs: railLatencyMs, cmd: { k: 'transfer.submit', id: transfer.id, ...at } });
    else if (transfer.status === 'processing') {
      const beneficiary = state.beneficiaries.get(transfer.beneficiaryId);
      if (beneficiary?.type === 'wallet') {
        // Step two may or may not have happened before the stop: ask again; the credit is deduplicated.
        effects.push(creditEffect({ state, nowMs: transfer.updatedAtMs, mintId: () => '', railLatencyMs }, at, transfer, beneficiary));
        continue;
      }
      const outcome = beneficiary === undefined ? 'timeout' : payoutOutcome(beneficiary.accountNumber);
      effects.push({ afterMs: railLatencyMs, cmd: { k: 'transfer.rail', id: transfer.id, outcome, ...at } });
    } else if (transfer.status === 'unknown') effects.push({ afterMs: railLatencyMs, cmd: { k: 'transfer.reconcile', id: transfer.id, ...at } });
  }
  return effects;
}
