// Fulfilment of paid service orders: dispatch to the fulfilment rail, its answers (delivered, failed,
// timeout, controlled retry, funding failure, manual hold), reconciliation, refunds and operator
// resolution. Runs inside shard workers; every answer arrives as a `rail.answer` command.
// Invariant: a dispatched purchase is never bought twice: unknown is settled by requery, and a
// restart asks the rail about the same provider_reference instead of dispatching again.
import assert from 'node:assert/strict';
import { reject } from '../../errors.ts';
import { systemAccountId, type LedgerOp } from '../../ledger/ledger.ts';
import { operatorDelivery } from '../../rails/rails.ts';
import type { WalEvent } from '../events.ts';
import type { Command, CommandBody } from '../protocol.ts';
import { pendingRefund, type OrderRefund, type ServiceOrder } from '../state.ts';
import type { FailureCode } from '../../../machines/transaction.machine.ts';
import { accessRejection, effectsOf, okReply, outboxEvent, rejected, REQUERY_AFTER_MS, stale, type Effect, type HandlerContext, type Outcome } from '../lifecycle/context.ts';
import { FUNDING_FAILURE_CODE, RAIL_RETRY_AFTER_MS, RETRY_REQUIRED_CODE, type RailAnswer, type RailOp } from '../../rails/rail.ts';
import { dispatchEvents, moveOrder, movePayment, moveTransaction, orderHandles, orderMoved, orderStep, releaseUsage, transactionHandles } from '../lifecycle/lifecycle.ts';
import { fulfilmentCall } from '../lifecycle/rail-requests.ts';
import { contradiction, recordedOutcome } from '../lifecycle/reconcile.ts';

/** Order statuses that record the purchase as not delivered (a rail's `settled` for one contradicts it). */
const FAILED_ORDER = new Set<ServiceOrder['status']>(['failed', 'refund_pending', 'refunded', 'provider_funding_failure', 'cancelled']);

function later(ctx: HandlerContext, order: ServiceOrder, partition: number, body: CommandBody, afterMs: number): Effect {
  return { afterMs, cmd: Object.assign({}, body, { owner: order.owner, nowMs: ctx.nowMs, partition }) };
}

const done = (): ReturnType<typeof okReply> => okReply(200, {});

function orderOf(ctx: HandlerContext, id: string): ServiceOrder | undefined {
  return ctx.state.orders.get(id);
}

/**
 * The fulfillment_snapshot of a delivery: the purchase, the rail's reference, then what the rail handed
 * back (a token, a receipt; the sandbox hands back the whole snapshot), stamped when it was delivered.
 * What kobo recorded of the purchase (its amount, currency, service, reference) is kobo's: a rail's
 * detail may add to it, never restate it (a connector's `amount_minor` would have shown as the order's).
 */
function deliverySnapshot(ctx: HandlerContext, order: ServiceOrder, answer: RailAnswer & { outcome: 'settled' }): Record<string, unknown> {
  const purchase: Record<string, unknown> = {
    service_code: order.serviceCode,
    country_code: order.countryCode,
    operator_code: order.operatorCode,
    product_code: order.productCode,
    amount_minor: order.providerCostMinor,
    currency: order.destinationCurrency,
    ...(answer.providerReference === null ? {} : { provider_reference: answer.providerReference }),
  };
  // Assigned again after the detail: the keys keep their place, kobo's values win.
  const snapshot: Record<string, unknown> = Object.assign({}, purchase, answer.detail ?? {}, purchase);
  if (!('delivered_at' in snapshot)) snapshot.delivered_at = new Date(ctx.nowMs).toISOString();
  return snapshot;
}

/**
 * A fulfilment rail's answer: settled → delivered (snapshot from the rail's detail); failed → failed
 * with the money released or refunded (provider_funding_failure → refunded; retry_required → a new
 * dispatch attempt); accepted for manual review → held for an operator; no trustworthy answer → unknown,
 * requeried on the owner's clock, never re-purchased; not_found on requery → the same purchase
 * submitted again (same reference).
 */
export function fulfilmentAnswer(ctx: HandlerContext, cmd: Command & { k: 'rail.answer' }): Outcome {
  const order = orderOf(ctx, cmd.id);
  const answer = cmd.answer;
  if (order === undefined || answer === null) return stale('no order by that reference');
  const again = (op: RailOp, dueAtMs?: number): Effect[] => effectsOf(fulfilmentCall(ctx, order, order.dispatchAttempt, op, dueAtMs));
  const rail = again('requery')[0]?.call?.rail;
  if (cmd.connector !== undefined && rail !== cmd.connector) return stale('this order is not served by that connector');
  const serviceTxn = ctx.state.transactions.get(order.transactionId);
  const final = order.status === 'completed' ? 'completed' : FAILED_ORDER.has(order.status) ? 'failed' : null;
  const contradicted = serviceTxn === undefined ? null : contradiction(ctx, cmd, { txn: serviceTxn, kind: 'fulfilment', entityId: order.id, rail: rail ?? 'sandbox', recorded: recordedOutcome(cmd.attempt, order.dispatchAttempt, final) });
  if (contradicted !== null) return contradicted;
  if (order.dispatchAttempt !== cmd.attempt) return stale(`the answer is for dispatch ${cmd.attempt}; the order is on ${order.dispatchAttempt}`);
  // A rail's answer applies while the order waits for it (fulfilling) or for reconciliation (unknown).
  if (!orderHandles(order, 'rail.delivered') && !orderHandles(order, 'reconcile')) return stale(`order is ${order.status}`);
  const unknown = orderHandles(order, 'reconcile');
  switch (answer.outcome) {
    case 'settled':
      return { events: deliveredEvents(ctx, order, unknown ? 'reconcile' : 'rail.delivered', deliverySnapshot(ctx, order, answer)), reply: done };
    case 'failed': {
      if (!unknown && answer.failureCode === RETRY_REQUIRED_CODE) {
        return { events: [moveOrder(order, { type: 'rail.retry', atMs: ctx.nowMs })!], reply: done, effects: [later(ctx, order, cmd.partition, { k: 'order.retry', id: order.id }, ctx.railLatencyMs)] };
      }
      const via = unknown ? 'reconcile' : answer.failureCode === FUNDING_FAILURE_CODE ? 'rail.funding_failed' : 'rail.failed';
      const failed = failedEvents(ctx, order, cmd.partition, via, answer.message ?? `The fulfilment rail failed the purchase (${answer.failureCode}).`);
      return { events: failed.events, reply: done, effects: failed.effects };
    }
    case 'terminal': {
      if (cmd.phase !== 'submit' || unknown) return { events: [], reply: done, effects: again('requery', ctx.nowMs + REQUERY_AFTER_MS) };
      const failed = failedEvents(ctx, order, cmd.partition, 'rail.failed', 'The fulfilment rail refused the request.');
      return { events: failed.events, reply: done, effects: failed.effects };
    }
    case 'unknown': {
      if (unknown) return { events: [], reply: done, effects: again('requery', ctx.nowMs + REQUERY_AFTER_MS) };
      const txn = ctx.state.transactions.get(order.transactionId)!;
      const events = [moveOrder(order, { type: 'rail.timeout', atMs: ctx.nowMs })!, moveTransaction(txn, { type: 'timeout', atMs: ctx.nowMs })!];
      return { events, reply: done, effects: again('requery', ctx.nowMs + REQUERY_AFTER_MS) };
    }
    case 'accepted':
      if (answer.manualReview === true && !unknown) return { events: [moveOrder(order, { type: 'rail.manual', atMs: ctx.nowMs })!], reply: done };
      return { events: [], reply: done, effects: cmd.phase === 'callback' ? [] : again('requery', ctx.nowMs + REQUERY_AFTER_MS) };
    case 'not_found':
      return { events: [], reply: done, effects: again('submit') };
    case 'retryable':
      return { events: [], reply: done, effects: again(cmd.phase === 'requery' ? 'requery' : 'submit', ctx.nowMs + RAIL_RETRY_AFTER_MS) };
  }
}

/**
 * A wallet-paid order's funds are confirmed (held): dispatch. A retried order's payment, pending with
 * its hold placed by the retry, is submitted here, as a new order's is at creation.
 */
export function orderPaid(ctx: HandlerContext, cmd: Command & { k: 'order.paid' }): Outcome {
  const order = orderOf(ctx, cmd.id);
  if (order === undefined || !orderHandles(order, 'payment.settled')) return stale('order is not awaiting payment');
  const dispatched = dispatchEvents(ctx, order, cmd.partition, 'payment.settled');
  assert(dispatched !== null, 'fulfilment: awaiting_payment accepts payment.settled');
  const payment = ctx.state.payments.get(order.paymentId)!;
  const paymentTxn = ctx.state.transactions.get(order.paymentTransactionId)!;
  const submitted: WalEvent[] = [];
  if (payment.method === 'wallet' && paymentTxn.holdStatus === 'held' && transactionHandles(paymentTxn, 'submit')) {
    submitted.push(moveTransaction(paymentTxn, { type: 'submit', atMs: ctx.nowMs })!, movePayment(payment, { type: 'submit', atMs: ctx.nowMs })!);
  }
  return { events: [...submitted, ...dispatched.events], reply: done, effects: dispatched.effects };
}

/** Delivered: snapshot in, service transaction completed, funds posted (wallet hold) and the fee taken. */
function deliveredEvents(ctx: HandlerContext, order: ServiceOrder, via: 'rail.delivered' | 'reconcile' | 'operator.resolve', railSnapshot?: Record<string, unknown>): WalEvent[] {
  const event = via === 'rail.delivered' ? { type: via, atMs: ctx.nowMs } as const : { type: via, atMs: ctx.nowMs, outcome: 'delivered' } as const;
  const snapshot = railSnapshot ?? operatorSnapshot(ctx, order);
  const moved = moveOrder(order, event, { fulfillmentSnapshot: snapshot });
  assert(moved !== null, `fulfilment: ${order.status} accepts ${via}`);
  const txn = ctx.state.transactions.get(order.transactionId)!;
  const txnEvent = via === 'reconcile' ? { type: 'reconcile', atMs: ctx.nowMs, outcome: 'completed' } as const : { type: 'settle', atMs: ctx.nowMs } as const;
  const events: WalEvent[] = [moved];
  const ops: LedgerOp[] = [];
  const payment = ctx.state.payments.get(order.paymentId)!;
  const paymentTxn = ctx.state.transactions.get(order.paymentTransactionId)!;
  if (payment.method === 'wallet' && paymentTxn.holdStatus === 'held' && paymentTxn.holdId !== null) {
    ops.push({ op: 'commit', id: paymentTxn.holdId });
    events.push(
      moveTransaction(paymentTxn, { type: 'settle', atMs: ctx.nowMs }, { holdStatus: 'posted' })!,
      movePayment(payment, { type: 'settle', atMs: ctx.nowMs })!,
      // The wallet payment completes here, with the delivery: its event as for any other payment.
      outboxEvent(ctx, 'payment.completed', paymentTxn, { status: 'completed', payment_id: payment.id, method: payment.method }),
    );
  }
  if (order.feeMinor > 0) {
    ops.push({ op: 'post', id: ctx.mintId(), txn: txn.id, dr: systemAccountId('service_payables', order.currency), cr: systemAccountId('fees', order.currency), amt: order.feeMinor, cur: order.currency });
  }
  if (ops.length > 0) events.unshift({ t: 'ledger', ops, atMs: ctx.nowMs });
  const settled = moveTransaction(txn, txnEvent);
  if (settled !== null) events.push(settled);
  events.push(outboxEvent(ctx, 'service_order.completed', txn, { status: 'completed', order_id: order.id, service_code: order.serviceCode, provider_reference: order.providerReference }));
  return events;
}

/**
 * The purchase definitively failed: the order ends `failed` and its service transaction fails (stage
 * fulfilment, PROVIDER_ERROR: retryable), with the money given back in the same record: a wallet hold
 * is released; money collected by card or bank transfer is refunded to the payer, the refund tracked
 * on the order beside its status. A funding failure is the exception, as the spec's table has it:
 * provider_funding_failure → refund_pending → refunded, with a final code (the order is terminal).
 * The order machine's step names the effects (failServiceTransaction, releaseOrRefund or startRefund,
 * emitFailed); they are carried out here.
 */
function failedEvents(ctx: HandlerContext, order: ServiceOrder, partition: number, via: 'rail.failed' | 'reconcile' | 'rail.funding_failed' | 'operator.resolve', message: string): { events: WalEvent[]; effects: Effect[] } {
  const txn = ctx.state.transactions.get(order.transactionId)!;
  const funding = via === 'rail.funding_failed';
  const failure = { code: funding ? 'PROVIDER_FUNDING_FAILURE' as const : 'PROVIDER_ERROR' as const, stage: 'fulfilment' as const, message };
  const events: WalEvent[] = [];
  const effects: Effect[] = [];
  const step = via === 'rail.funding_failed' || via === 'rail.failed' ? orderStep(order, { type: via, atMs: ctx.nowMs }) : orderStep(order, { type: via, atMs: ctx.nowMs, outcome: 'failed' });
  assert(step !== null, `fulfilment: ${order.status} accepts ${via}`);
  events.push(orderMoved(order, step.target, ctx.nowMs));
  if (step.actions.includes('failServiceTransaction')) {
    const txnMoved = moveTransaction(txn, via === 'reconcile' ? { type: 'reconcile', atMs: ctx.nowMs, outcome: 'failed' } : { type: 'fail', atMs: ctx.nowMs, code: failure.code }, { failure });
    if (txnMoved !== null) events.push(txnMoved);
    events.push(...releaseUsage(ctx, txn));
  }
  if (step.actions.includes('startRefund')) effects.push(later(ctx, order, partition, { k: 'order.refund', id: order.id }, ctx.railLatencyMs));
  if (step.actions.includes('releaseOrRefund')) {
    const back = moneyBack(ctx, order, failure.code);
    events.push(...back);
    if (back.some((e) => e.t === 'order.refund')) effects.push(later(ctx, order, partition, { k: 'order.refund', id: order.id }, ctx.railLatencyMs));
  }
  if (step.actions.includes('emitFailed')) {
    events.push(outboxEvent(ctx, 'service_order.failed', txn, { status: 'failed', order_id: order.id, service_code: order.serviceCode, failure: { code: failure.code, stage: failure.stage } }));
  }
  return { events, effects };
}

/**
 * Gives an order's money back: a wallet hold is voided (the money never left the wallet); a completed
 * collection gets a refund, opened now (pending) and completed by `order.refund` after the rail latency.
 */
function moneyBack(ctx: HandlerContext, order: ServiceOrder, code: FailureCode): WalEvent[] {
  const payment = ctx.state.payments.get(order.paymentId)!;
  if (payment.method === 'wallet') return releaseWalletHold(ctx, order, code);
  if (payment.status !== 'completed') return [];
  return [refundEvent(ctx, order, { status: 'pending', createdAtMs: ctx.nowMs, completedAtMs: null })];
}

/** The refund of the order's current collection, opened. */
function refundEvent(ctx: HandlerContext, order: ServiceOrder, state: Pick<OrderRefund, 'status' | 'createdAtMs' | 'completedAtMs'>): WalEvent {
  return { t: 'order.refund', id: order.id, refund: Object.assign({}, refundOf(order), state), atMs: ctx.nowMs };
}

/**
 * The snapshot of an order an operator resolved as delivered: in the sandbox, what its rail would have
 * handed back; live, the purchase as recorded (the operator's word carries no token of kobo's making).
 */
function operatorSnapshot(ctx: HandlerContext, order: ServiceOrder): Record<string, unknown> {
  const payload = fulfilmentCall(ctx, order, order.dispatchAttempt, 'submit')?.call?.payload ?? {};
  return operatorDelivery(order.owner, { orderId: order.id, payload, atMs: ctx.nowMs }) ?? deliverySnapshot(ctx, order, { outcome: 'settled', providerReference: order.providerReference, detail: { resolved_by: 'operator' } });
}

/**
 * Voids a wallet-paid order's hold: the customer's money was never taken. The payment's transaction
 * fails with the purchase's code (retryable after a failure, final after a funding failure).
 */
function releaseWalletHold(ctx: HandlerContext, order: ServiceOrder, code: FailureCode): WalEvent[] {
  const payment = ctx.state.payments.get(order.paymentId)!;
  const paymentTxn = ctx.state.transactions.get(order.paymentTransactionId)!;
  if (paymentTxn.holdStatus !== 'held' || paymentTxn.holdId === null) return [];
  const failure = { code, stage: 'fulfilment' as const, message: 'The purchase failed; the held funds were released.' };
  return [
    { t: 'ledger', ops: [{ op: 'void', id: paymentTxn.holdId }], atMs: ctx.nowMs },
    moveTransaction(paymentTxn, { type: 'fail', atMs: ctx.nowMs, code }, { failure, holdStatus: 'released' })!,
    movePayment(payment, { type: 'fail', atMs: ctx.nowMs })!,
  ];
}

export function retryOrder(ctx: HandlerContext, cmd: Command & { k: 'order.retry' }): Outcome {
  const order = orderOf(ctx, cmd.id);
  if (order === undefined || !orderHandles(order, 'retry.dispatch')) return stale('order is not waiting for a retry');
  const dispatched = dispatchEvents(ctx, order, cmd.partition, 'retry.dispatch');
  assert(dispatched !== null);
  return { events: dispatched.events, reply: done, effects: dispatched.effects };
}

/**
 * Refunds after the rail latency. The funding failure's path moves the order: provider_funding_failure
 * → refund_pending → refunded (a collection's refund opened and completed with it). Any other refund
 * (a failed order's collection) completes beside the order's status, whatever it is by then (a retried
 * order may already wait for its next payment).
 */
export function refundOrder(ctx: HandlerContext, cmd: Command & { k: 'order.refund' }): Outcome {
  const order = orderOf(ctx, cmd.id);
  if (order === undefined) return stale('no such order');
  const payment = ctx.state.payments.get(order.paymentId)!;
  const collected = payment.method !== 'wallet' && payment.status === 'completed';
  if (order.status === 'provider_funding_failure') {
    const step = orderStep(order, { type: 'refund.start', atMs: ctx.nowMs })!;
    const events: WalEvent[] = [orderMoved(order, step.target, ctx.nowMs)];
    if (step.actions.includes('openRefund') && collected) events.push(refundEvent(ctx, order, { status: 'pending', createdAtMs: ctx.nowMs, completedAtMs: null }));
    return { events, reply: done, effects: step.actions.includes('startRefund') ? [later(ctx, order, cmd.partition, { k: 'order.refund', id: order.id }, ctx.railLatencyMs)] : [] };
  }
  if (order.status === 'refund_pending') {
    const step = orderStep(order, { type: 'refund.completed', atMs: ctx.nowMs })!;
    const events: WalEvent[] = [orderMoved(order, step.target, ctx.nowMs)];
    if (!step.actions.includes('returnFunds')) return { events, reply: done };
    if (payment.method === 'wallet') events.push(...releaseWalletHold(ctx, order, ctx.state.transactions.get(order.transactionId)?.failure?.code ?? 'PROVIDER_ERROR'));
    else if (collected) {
      // Opened with refund_pending, or (an order that entered refund_pending before refunds were kept
      // on orders) recorded now, completed.
      const open = pendingRefund(order) ?? Object.assign({}, refundOf(order), { status: 'pending' as const, createdAtMs: ctx.nowMs, completedAtMs: null });
      events.unshift(...completeRefund(ctx, order, open));
    }
    return { events, reply: done };
  }
  const open = (order.refunds ?? []).filter((r) => r.status === 'pending');
  if (open.length === 0) return stale('order has no refund in progress');
  return { events: open.flatMap((refund) => completeRefund(ctx, order, refund)), reply: done };
}

/** The refund of the order's current collection: its whole amount, in its currency. */
function refundOf(order: ServiceOrder): Pick<OrderRefund, 'paymentId' | 'paymentTransactionId' | 'amountMinor' | 'currency'> {
  return { paymentId: order.paymentId, paymentTransactionId: order.paymentTransactionId, amountMinor: order.customerAmountMinor, currency: order.currency };
}

/** Money collected for the order (card, bank transfer) goes back to the payer through collection clearing. */
function completeRefund(ctx: HandlerContext, order: ServiceOrder, refund: OrderRefund): WalEvent[] {
  const op: LedgerOp = { op: 'post', id: ctx.mintId(), txn: order.transactionId, dr: systemAccountId('service_payables', refund.currency), cr: systemAccountId('collection_clearing', refund.currency), amt: refund.amountMinor, cur: refund.currency };
  return [{ t: 'ledger', atMs: ctx.nowMs, ops: [op] }, { t: 'order.refund', id: order.id, refund: Object.assign({}, refund, { status: 'completed' as const, completedAtMs: ctx.nowMs }), atMs: ctx.nowMs }];
}

/**
 * An operator's decision on an order held for manual fulfilment, or on one in `unknown` (the rail timed
 * out) when the operator learnt its outcome from the provider before the requery did: the same step a
 * reconciliation takes. From `kobo orders resolve` (owner system:operator) or the account's own API call.
 */
export function resolveOrder(ctx: HandlerContext, cmd: Command & { k: 'order.resolve' }): Outcome {
  const order = orderOf(ctx, cmd.id);
  if (order === undefined) return rejected(reject('NOT_FOUND', 'No such service order.'));
  if (cmd.owner !== 'system:operator') {
    const denied = accessRejection(cmd, order, 'service order');
    if (denied !== null) return rejected(denied);
  }
  const via = orderHandles(order, 'operator.resolve') ? 'operator.resolve' : orderHandles(order, 'reconcile') ? 'reconcile' : null;
  if (via === null) return rejected(reject('CONFLICT', `Order is ${order.status}, not held for manual fulfilment or unknown.`));
  if (cmd.outcome === 'delivered') return { events: deliveredEvents(ctx, order, via), reply: done };
  const failed = failedEvents(ctx, order, cmd.partition, via, 'An operator failed the purchase.');
  return { events: failed.events, reply: done, effects: failed.effects };
}
