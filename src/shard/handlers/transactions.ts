// Command handlers for transactions: create, read, cancel (releases any hold), retry (same id, new attempt).
// Runs inside shard workers. Every status change goes through the transaction machine.
// Invariant: cancel only while pending; retry only after a recoverable failure; a hold is voided or posted, never edited.
import { reject } from '../../errors.ts';
import { nextStatus } from '../../../machines/step.ts';
import {
  transactionMachine,
  type FailureCode,
  type TransactionEvent,
  type TransactionStatus,
} from '../../../machines/transaction.machine.ts';
import { paymentMachine, type PaymentEvent } from '../../../machines/payment.machine.ts';
import { isRetryable } from '../../../machines/transaction.machine.ts';
import { moveTransfer, retryTransferEvents } from './transfers.ts';
import { cancelOrderEvents, orderPaymentFailedEvents } from './orders.ts';
import { collectionCall } from './payments.ts';
import { isLiveOwner } from '../../rails/coverage.ts';
import type { WalEvent } from '../events.ts';
import type { Command } from '../protocol.ts';
import type { Failure, FailureStage, PartitionState, Payment, ServiceOrder, Transaction } from '../state.ts';
import { transactionView } from '../views.ts';
import {
  accessRejection,
  customerFor,
  isRejection,
  limitRejection,
  okReply,
  outboxEvent,
  rejected,
  usageEvent,
  DAY_MS,
  type Effect,
  type HandlerContext,
  type Outcome,
} from './common.ts';

export function newTransaction(
  ctx: HandlerContext,
  fields: Pick<Transaction, 'owner' | 'customerId' | 'type' | 'amountMinor' | 'feeMinor' | 'currency' | 'reference' | 'paymentId'> & { transferId?: string | null },
): Transaction {
  return {
    ...fields,
    transferId: fields.transferId ?? null,
    id: ctx.mintId(),
    status: 'pending',
    failure: null,
    holdId: null,
    holdStatus: 'none',
    attempt: 1,
    history: [{ status: 'pending', atMs: ctx.nowMs, attempt: 1, failureCode: null }],
    createdAtMs: ctx.nowMs,
    updatedAtMs: ctx.nowMs,
  };
}

/**
 * Gives a failed attempt's amount back to the day's limit usage — only on the day it was charged:
 * giving yesterday's amount back against today's usage would let today's total pass the daily limit.
 */
export function releaseUsage(ctx: HandlerContext, txn: Transaction): WalEvent[] {
  const chargedAtMs = [...txn.history].reverse().find((h) => h.status === 'pending')?.atMs ?? txn.createdAtMs;
  const customer = ctx.state.customers.get(txn.customerId);
  if (customer === undefined || Math.floor(chargedAtMs / DAY_MS) !== Math.floor(ctx.nowMs / DAY_MS)) return [];
  return [usageEvent(customer, txn.currency, -txn.amountMinor, ctx.nowMs)];
}

/** The txn.moved event for `event`, or null when the machine refuses it in the current status. */
export function moveTransaction(
  txn: Transaction,
  event: TransactionEvent,
  extra: { failure?: Failure | null; holdStatus?: Transaction['holdStatus']; holdId?: string | null; attempt?: number } = {},
): WalEvent | null {
  const status = nextStatus(transactionMachine, txn.status, { failureCode: txn.failure?.code ?? null }, event);
  if (status === null) return null;
  return {
    t: 'txn.moved',
    id: txn.id,
    status: status as TransactionStatus,
    atMs: event.atMs,
    failure: extra.failure === undefined ? (status === 'failed' ? txn.failure : null) : extra.failure,
    ...(extra.holdStatus === undefined ? {} : { holdStatus: extra.holdStatus }),
    ...(extra.holdId === undefined ? {} : { holdId: extra.holdId }),
    ...(extra.attempt === undefined ? {} : { attempt: extra.attempt }),
  };
}

export function movePayment(payment: Payment, event: PaymentEvent): WalEvent | null {
  const status = nextStatus(paymentMachine, payment.status, {}, event);
  if (status === null) return null;
  return { t: 'payment.moved', id: payment.id, status: status as Payment['status'], atMs: event.atMs };
}

/**
 * Events that fail a transaction (and its payment) with `code`: the hold is voided and the day's limit
 * usage given back, since no money moved. Null when the transaction cannot fail from its status.
 */
export function failEvents(
  ctx: HandlerContext,
  txn: Transaction,
  failure: { code: FailureCode; stage: FailureStage; message: string },
  kind: 'fail' | 'cancel',
): WalEvent[] | null {
  const event: TransactionEvent = kind === 'cancel' ? { type: 'cancel', atMs: ctx.nowMs } : { type: 'fail', atMs: ctx.nowMs, code: failure.code };
  const holdReleased = txn.holdStatus === 'held';
  const moved = moveTransaction(txn, event, { failure, ...(holdReleased ? { holdStatus: 'released' as const } : {}) });
  if (moved === null) return null;
  const events: WalEvent[] = [];
  if (holdReleased && txn.holdId !== null) events.push({ t: 'ledger', ops: [{ op: 'void', id: txn.holdId }], atMs: ctx.nowMs });
  events.push(moved);
  events.push(...releaseUsage(ctx, txn));
  const payment = txn.paymentId === null ? undefined : ctx.state.payments.get(txn.paymentId);
  if (payment !== undefined) {
    const paymentMoved = movePayment(payment, { type: kind, atMs: ctx.nowMs });
    if (paymentMoved !== null) events.push(paymentMoved);
    const order = payment.orderId === undefined ? undefined : ctx.state.orders.get(payment.orderId);
    if (order !== undefined) events.push(...orderPaymentFailedEvents(ctx, order, failure));
  }
  const transfer = txn.transferId === null ? undefined : ctx.state.transfers.get(txn.transferId);
  if (transfer !== undefined) {
    const transferMoved = moveTransfer(transfer, { type: kind, atMs: ctx.nowMs });
    if (transferMoved !== null) {
      events.push(transferMoved, outboxEvent(ctx, 'transfer.failed', txn, { status: 'failed', transfer_id: transfer.id, failure: { code: failure.code, stage: failure.stage } }));
    }
  }
  return events;
}

function transactionFor(ctx: HandlerContext, cmd: Command, id: string): Transaction | ReturnType<typeof reject> {
  const txn = ctx.state.transactions.get(id);
  const denied = accessRejection(cmd, txn, 'transaction');
  if (denied !== null || txn === undefined) return denied ?? reject('NOT_FOUND', 'No such transaction.');
  return txn;
}

const replyTxn = (id: string, status = 200) => (state: Pick<PartitionState, 'transactions'>) =>
  okReply(status, transactionView(state.transactions.get(id)!));

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

export function cancelTransaction(ctx: HandlerContext, cmd: Command & { k: 'txn.cancel' }): Outcome {
  const txn = transactionFor(ctx, cmd, cmd.id);
  if (isRejection(txn)) return rejected(txn);
  const order = orderOfTransaction(ctx, txn);
  if (order !== undefined) {
    const events = txn.status === 'pending' || txn.status === 'processing' ? cancelOrderEvents(ctx, order) : null;
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
  if (orderOfTransaction(ctx, txn) !== undefined) {
    // A service order is never re-purchased through its transactions: the client places a new order.
    return rejected(reject('CONFLICT', 'Transactions of a service order cannot be retried; place a new order.'));
  }
  if (txn.transferId !== null && txn.status === 'failed' && isRetryable(txn.failure?.code ?? null)) {
    const retried = retryTransferEvents(ctx, cmd, txn);
    if (isRejection(retried)) return rejected(retried);
    return { events: retried.events, reply: replyTxn(txn.id), effects: retried.effects };
  }
  const moved = moveTransaction(txn, { type: 'retry', atMs: ctx.nowMs }, { failure: null, holdStatus: 'none', holdId: null, attempt: txn.attempt + 1 });
  if (moved === null) {
    const why = txn.status !== 'failed' ? `is ${txn.status}, not failed` : `failed with ${txn.failure?.code ?? 'no code'}, which is final`;
    return rejected(reject('CONFLICT', `Transaction ${why}; it cannot be retried.`));
  }
  const events: WalEvent[] = [moved];
  const customer = ctx.state.customers.get(txn.customerId);
  if (customer !== undefined) {
    // A new attempt counts against today's limits like a new transaction would.
    const over = limitRejection(customer, txn.currency, txn.amountMinor, ctx.nowMs);
    if (over !== null) return rejected(over);
    events.push(usageEvent(customer, txn.currency, txn.amountMinor, ctx.nowMs));
  }
  const effects: Effect[] = [];
  const payment = txn.paymentId === null ? undefined : ctx.state.payments.get(txn.paymentId);
  if (payment !== undefined) {
    const paymentMoved = movePayment(payment, { type: 'retry', atMs: ctx.nowMs });
    if (paymentMoved !== null) events.push(paymentMoved);
    // A wallet payment debits inline: the new attempt places its hold again once this batch is durable.
    if (payment.method === 'wallet') {
      effects.push({ afterMs: 0, cmd: { k: 'payment.submit', id: payment.id, owner: cmd.owner, nowMs: ctx.nowMs, partition: cmd.partition } });
    } else if (customer !== undefined && isLiveOwner(payment.owner)) {
      // A live collection's new attempt is a new request to its connector (`<id>:<attempt>`), with a new
      // page for the payer; the last attempt's page is forgotten. No connector left → not retried.
      const call = collectionCall(ctx, payment, customer, txn.attempt + 1, 'submit');
      if (call === null) return rejected(reject('METHOD_NOT_SELECTABLE', `No live connector serves ${payment.method} collections for this customer any more.`));
      if (payment.rail !== undefined) events.push({ t: 'payment.rail', id: payment.id, providerReference: null, payUrl: null, atMs: ctx.nowMs });
      effects.push(call);
    }
  }
  return { events, reply: replyTxn(txn.id), effects };
}
