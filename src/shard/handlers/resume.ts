// Rail work in flight lives in state, not in timers: after recovery, these are the commands and rail
// calls that re-issue it (a wallet debit awaiting the rail, a transfer to submit, a payout to requery).
// Runs inside shard workers at start-up. Rails dedupe by reference, so re-asking never pays twice.
// Invariant: every entity waiting on a rail gets exactly one follow-up command.
import { isLiveOwner } from '../../rails/coverage.ts';
import { resumeOp } from '../../rails/rails.ts';
import type { RailOp } from '../../rails/rail.ts';
import { pendingRefund, type PartitionState } from '../state.ts';
import { REQUERY_AFTER_MS, type Effect, type HandlerContext } from '../lifecycle/context.ts';
import { collectionCall, fulfilmentCall, payoutCall } from '../lifecycle/rail-requests.ts';
import { creditEffect } from '../lifecycle/wallets.ts';

/**
 * A call in flight when the process stopped, asked again: a connector is requeried about the same
 * reference; the sandbox (no memory) is sent the same request, which gets the same answer.
 */
function askAgain(make: (op: RailOp) => Effect | null, afterMs: number): Effect | null {
  const probe = make('requery');
  if (probe?.call === undefined) return null;
  const effect = resumeOp(probe.call.rail) === 'requery' ? probe : make('submit');
  return effect === null ? null : Object.assign({}, effect, { afterMs });
}

export function resumeEffects(state: PartitionState, railLatencyMs: number): Effect[] {
  const effects: Effect[] = [];
  const base = (owner: string, atMs: number) => ({ owner, nowMs: atMs, partition: state.partition });
  const ctxAt = (nowMs: number): HandlerContext => ({ state, nowMs, mintId: () => '', railLatencyMs });
  for (const payment of state.payments.values()) {
    if (isLiveOwner(payment.owner) && payment.method !== 'wallet' && payment.status === 'pending') {
      // Ask the connector once about the collection (it may have settled while kobo was down).
      const customer = state.customers.get(payment.customerId);
      const attempt = state.transactions.get(payment.transactionId)?.attempt ?? 1;
      const call = customer === undefined ? null : collectionCall(ctxAt(payment.updatedAtMs), payment, customer, attempt, 'requery');
      if (call !== null) effects.push(Object.assign({}, call, { afterMs: railLatencyMs }));
      continue;
    }
    if (payment.method !== 'wallet') continue;
    // A service order's wallet payment keeps its hold until the purchase ends (posted when delivered,
    // released when refunded): the order's own step below resumes it, never the wallet rail.
    if (payment.orderId !== undefined) continue;
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
      // A payout's rail is asked about the same reference (it may have decided while kobo was down);
      // a live payout no connector serves any more has nothing to ask.
      const ctx = ctxAt(transfer.updatedAtMs);
      const attempt = state.transactions.get(transfer.transactionId)?.attempt ?? 1;
      const call = askAgain((op) => payoutCall(ctx, transfer, attempt, op), railLatencyMs);
      if (call !== null) effects.push(call);
    } else if (transfer.status === 'unknown') {
      // The requery stays due where it was: REQUERY_AFTER_MS after the timeout, on the owner's clock.
      const call = payoutCall(ctxAt(transfer.updatedAtMs), transfer, state.transactions.get(transfer.transactionId)?.attempt ?? 1, 'requery', transfer.updatedAtMs + REQUERY_AFTER_MS);
      if (call !== null) effects.push(call);
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
      case 'fulfilling': {
        // Ask the rail about the purchase already dispatched (same attempt, same reference): never a second purchase.
        const ctx = ctxAt(order.updatedAtMs);
        const call = askAgain((op) => fulfilmentCall(ctx, order, order.dispatchAttempt, op), railLatencyMs);
        if (call !== null) effects.push(call);
        break;
      }
      case 'unknown': {
        const call = fulfilmentCall(ctxAt(order.updatedAtMs), order, order.dispatchAttempt, 'requery', order.updatedAtMs + REQUERY_AFTER_MS);
        if (call !== null) effects.push(call);
        break;
      }
      case 'retry_required':
        effects.push({ afterMs: railLatencyMs, cmd: { k: 'order.retry', id: order.id, ...at } });
        break;
      case 'provider_funding_failure':
      case 'refund_pending':
        effects.push({ afterMs: railLatencyMs, cmd: { k: 'order.refund', id: order.id, ...at } });
        continue;
      default:
        break;
    }
    // A failed order's refund still on its way (whatever the order did since: a retry may have moved it).
    if (pendingRefund(order) !== undefined) effects.push({ afterMs: railLatencyMs, cmd: { k: 'order.refund', id: order.id, ...at } });
  }
  return effects;
}
