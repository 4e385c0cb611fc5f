// Rail work in flight lives in state, not in timers: after recovery, these are the commands that
// re-issue it (a wallet debit awaiting the rail, a transfer to submit, a payout to requery).
// Runs inside shard workers at start-up. Rails dedupe by reference, so re-asking never pays twice.
// Invariant: every entity waiting on a rail gets exactly one follow-up command.
import { payoutOutcome } from '../../rails/sandbox-payout.ts';
import { isLiveOwner } from '../../rails/coverage.ts';
import type { PartitionState } from '../state.ts';
import { REQUERY_AFTER_MS, type Effect, type HandlerContext } from './common.ts';
import { creditEffect, payoutCall } from './transfers.ts';
import { collectionCall } from './payments.ts';
import { fulfilmentCall } from './fulfilment.ts';

export function resumeEffects(state: PartitionState, railLatencyMs: number): Effect[] {
  const effects: Effect[] = [];
  const base = (owner: string, atMs: number) => ({ owner, nowMs: atMs, partition: state.partition });
  const liveCtx = (nowMs: number): HandlerContext => ({ state, nowMs, mintId: () => '', railLatencyMs });
  for (const payment of state.payments.values()) {
    if (isLiveOwner(payment.owner) && payment.method !== 'wallet' && payment.status === 'pending') {
      // Ask the connector once about the collection (it may have settled while kobo was down).
      const customer = state.customers.get(payment.customerId);
      const attempt = state.transactions.get(payment.transactionId)?.attempt ?? 1;
      const call = customer === undefined ? null : collectionCall(liveCtx(payment.updatedAtMs), payment, customer, attempt, 'requery');
      if (call !== null) effects.push({ ...call, afterMs: railLatencyMs });
      continue;
    }
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
      // A live payout is never answered by the sandbox rail: its connector is asked about the same
      // reference (it may have decided while kobo was down); no connector left → nothing to ask.
      if (isLiveOwner(transfer.owner)) {
        const call = payoutCall(liveCtx(transfer.updatedAtMs), transfer, state.transactions.get(transfer.transactionId)?.attempt ?? 1, 'requery');
        if (call !== null) effects.push({ ...call, afterMs: railLatencyMs });
        continue;
      }
      const outcome = beneficiary === undefined ? 'timeout' : payoutOutcome(beneficiary.accountNumber);
      effects.push({ afterMs: railLatencyMs, cmd: { k: 'transfer.rail', id: transfer.id, outcome, ...at } });
    } else if (transfer.status === 'unknown') {
      // The requery stays due where it was: REQUERY_AFTER_MS after the timeout, on the owner's clock.
      if (isLiveOwner(transfer.owner)) {
        const call = payoutCall(liveCtx(transfer.updatedAtMs), transfer, state.transactions.get(transfer.transactionId)?.attempt ?? 1, 'requery', transfer.updatedAtMs + REQUERY_AFTER_MS);
        if (call !== null) effects.push(call);
        continue;
      }
      effects.push({ afterMs: railLatencyMs, dueAtMs: transfer.updatedAtMs + REQUERY_AFTER_MS, cmd: { k: 'transfer.reconcile', id: transfer.id, ...at } });
    }
  }
  for (const order of state.orders.values()) {
    const at = base(order.owner, order.updatedAtMs);
    const payment = state.payments.get(order.paymentId);
    switch (order.status) {
      case 'pending':
        // Created, but its collection not yet opened when the process stopped.
        effects.push({ afterMs: 0, cmd: { k: 'order.open', id: order.id, ...at } });
        break;
      case 'awaiting_payment':
        if (payment?.method === 'wallet') effects.push({ afterMs: 0, cmd: { k: 'order.paid', id: order.id, ...at } });
        break;
      case 'fulfilling':
        if (isLiveOwner(order.owner)) {
          // Ask the connector about the purchase already sent (same reference): never a second purchase.
          const call = fulfilmentCall(liveCtx(order.updatedAtMs), order, order.dispatchAttempt, 'requery');
          if (call !== null) effects.push({ ...call, afterMs: railLatencyMs });
          break;
        }
        // Ask the rail about the purchase already dispatched (same attempt, same reference): no second purchase.
        effects.push({ afterMs: railLatencyMs, cmd: { k: 'order.rail', id: order.id, attempt: order.dispatchAttempt, ...at } });
        break;
      case 'unknown':
        if (isLiveOwner(order.owner)) {
          const call = fulfilmentCall(liveCtx(order.updatedAtMs), order, order.dispatchAttempt, 'requery', order.updatedAtMs + REQUERY_AFTER_MS);
          if (call !== null) effects.push(call);
          break;
        }
        effects.push({ afterMs: railLatencyMs, dueAtMs: order.updatedAtMs + REQUERY_AFTER_MS, cmd: { k: 'order.reconcile', id: order.id, ...at } });
        break;
      case 'retry_required':
        effects.push({ afterMs: railLatencyMs, cmd: { k: 'order.retry', id: order.id, ...at } });
        break;
      case 'provider_funding_failure':
      case 'refund_pending':
        effects.push({ afterMs: railLatencyMs, cmd: { k: 'order.refund', id: order.id, ...at } });
        break;
      default:
        break;
    }
  }
  return effects;
}
