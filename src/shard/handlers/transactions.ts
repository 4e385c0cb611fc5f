// Command handlers for transactions: create, read, cancel (releases any hold), retry (same id, new attempt).
// Runs inside shard workers. Every status change goes through the transaction machine.
// Invariant: cancel only while pending; retry only after a recoverable failure; a hold is voided or posted, never edited.
import { reject } from '../../errors.ts';
import type { Command } from '../protocol.ts';
import type { PartitionState, ServiceOrder, Transaction } from '../state.ts';
import { transactionJson } from '../views.ts';
import { accessRejection, customerFor, isRejection, limitRejection, okJson, rejected, usageEvent, type HandlerContext, type Outcome } from '../lifecycle/context.ts';
import { cancelOrderEvents, failEvents, newTransaction, retryEvents, transactionHandles } from '../lifecycle/lifecycle.ts';
import { retryOrderEvents } from '../lifecycle/order-payments.ts';
import { isLiveOwner } from '../../rails/coverage.ts';
import { reconciliationBlocksRetry } from '../lifecycle/reconcile.ts';

function transactionFor(ctx: HandlerContext, cmd: Command, id: string): Transaction | ReturnType<typeof reject> {
  const txn = ctx.state.transactions.get(id);
  const denied = accessRejection(cmd, txn, 'transaction');
  if (denied !== null || txn === undefined) return denied ?? reject('NOT_FOUND', 'No such transaction.');
  return txn;
}

const replyTxn = (id: string, status = 200) => (state: Pick<PartitionState, 'transactions'>) =>
  okJson(status, transactionJson(state.transactions.get(id)!));

export function createTransaction(ctx: HandlerContext, cmd: Command & { k: 'txn.create' }): Outcome {
  const customer = customerFor(ctx, cmd, cmd.body.customerId);
  if (isRejection(customer)) return rejected(customer);
  const over = limitRejection(customer, cmd.body.currency, cmd.body.amountMinor, ctx.nowMs);
  if (over !== null) return rejected(over);
  const txn = newTransaction(ctx, {
    owner: cmd.owner,
    customerId: customer.id,
    type: cmd.body.type,
    amountMinor: cmd.body.amountMinor,
    feeMinor: 0,
    currency: cmd.body.currency,
    reference: cmd.body.reference,
    paymentId: null,
  });
  txn.bare = true;
  return {
    events: [{ t: 'txn.created', txn }, usageEvent(customer, txn.currency, txn.amountMinor, ctx.nowMs)],
    reply: replyTxn(txn.id, 201),
  };
}

export function getTransaction(ctx: HandlerContext, cmd: Command & { k: 'txn.get' }): Outcome {
  const txn = transactionFor(ctx, cmd, cmd.id);
  if (isRejection(txn)) return rejected(txn);
  return { events: [], reply: replyTxn(txn.id) };
}

/** The service order a transaction belongs to (its service transaction or its payment's). */
function orderOfTransaction(ctx: HandlerContext, txn: Transaction): ServiceOrder | undefined {
  const orderId = txn.orderId ?? (txn.paymentId === null ? undefined : ctx.state.payments.get(txn.paymentId)?.orderId);
  return orderId === undefined ? undefined : ctx.state.orders.get(orderId);
}

/**
 * A live collection is submitted to its connector as soon as it is recorded, and the protocol has no
 * way to call it back: a payer could still pay at the provider, and that money would have nowhere to
 * land. So it ends only with the connector's outcome, never with a cancel.
 */
function liveCollectionOf(ctx: HandlerContext, txn: Transaction, order: ServiceOrder | undefined): boolean {
  const paymentId = order?.paymentId ?? txn.paymentId;
  const payment = paymentId === null ? undefined : ctx.state.payments.get(paymentId);
  return payment !== undefined && payment.method !== 'wallet' && isLiveOwner(payment.owner) && payment.status === 'pending';
}

export function cancelTransaction(ctx: HandlerContext, cmd: Command & { k: 'txn.cancel' }): Outcome {
  const txn = transactionFor(ctx, cmd, cmd.id);
  if (isRejection(txn)) return rejected(txn);
  const order = orderOfTransaction(ctx, txn);
  if (liveCollectionOf(ctx, txn, order)) {
    return rejected(reject('CONFLICT', 'This live collection is with its connector, which may still collect the payer\'s money: it ends with the connector\'s outcome, not a cancel.'));
  }
  if (order !== undefined) {
    const events = transactionHandles(txn, 'fail') ? cancelOrderEvents(ctx, order) : null;
    if (events === null) return rejected(reject('CONFLICT', `The service order is ${order.status}; only an order not yet fulfilling can be cancelled.`));
    return { events, reply: replyTxn(txn.id) };
  }
  const events = failEvents(ctx, txn, { code: 'CANCELLED', stage: 'client', message: 'Cancelled by the client.' }, 'cancel');
  if (events === null) {
    return rejected(reject('CONFLICT', `Transaction is ${txn.status}; only a pending transaction can be cancelled.`));
  }
  return { events, reply: replyTxn(txn.id) };
}

export function retryTransaction(ctx: HandlerContext, cmd: Command & { k: 'txn.retry' }): Outcome {
  const txn = transactionFor(ctx, cmd, cmd.id);
  if (isRejection(txn)) return rejected(txn);
  // A rail said this attempt did not end as recorded: retrying could pay out (or charge) twice.
  const blocked = reconciliationBlocksRetry(txn);
  if (blocked !== null) return rejected(blocked);
  // A service order's transaction is retried as a new attempt at the whole purchase, under the same order.
  const order = orderOfTransaction(ctx, txn);
  const retried = order === undefined ? retryEvents(ctx, cmd, txn) : retryOrderEvents(ctx, cmd, order, txn);
  if (isRejection(retried)) return rejected(retried);
  return { events: retried.events, reply: replyTxn(txn.id), effects: retried.effects };
}
