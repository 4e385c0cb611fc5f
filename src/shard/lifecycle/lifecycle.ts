// Lifecycle rules of a transaction and the payment, transfer or order it belongs to: creating, moving
// (every status change through its machine's table, compiled at start), failing, cancelling, retrying
// and dispatching. Runs inside shard workers; pure: reads state, returns WAL events and effects. The
// machines' guards decide whether a record may move; the effects their steps name are performed here.
// Resource handlers use it; it never imports a handler. Invariant: a hold is voided or posted, never
// edited; a failed attempt gives its day's limit usage back; a new attempt counts against the limits.
import { reject, type Rejection } from '../../errors.ts';
import type { Step } from '../../../machines/step.ts';
import { transactionTable, type FailureCode, type TransactionEffect, type TransactionEvent, type TransactionStatus } from '../../../machines/transaction.machine.ts';
import { paymentTable, type PaymentEffect, type PaymentEvent, type PaymentStatus } from '../../../machines/payment.machine.ts';
import { transferTable, type TransferEffect, type TransferEvent, type TransferStatus } from '../../../machines/transfer.machine.ts';
import { orderTable, type OrderEffect, type OrderEvent, type OrderStatus } from '../../../machines/order.machine.ts';
import { canDebit, systemAccountId, type LedgerOp } from '../../ledger/ledger.ts';
import { isLiveOwner } from '../../rails/coverage.ts';
import type { WalEvent } from '../events.ts';
import type { Command, CommandBody } from '../protocol.ts';
import { walletOf, type Beneficiary, type Failure, type FailureStage, type Payment, type ServiceOrder, type Transaction, type Transfer } from '../state.ts';
import { DAY_MS, effectsOf, limitRejection, outboxEvent, usageEvent, type Effect, type HandlerContext } from './context.ts';
import { collectionCall, fulfilmentCall, payoutRailRejection } from './rail-requests.ts';
import { openedTransaction, type TransactionFields } from './opened-transaction.ts';

// --- Transactions and payments ---

export function newTransaction(
  ctx: HandlerContext,
  fields: TransactionFields,
): Transaction {
  return openedTransaction(fields, ctx.mintId(), ctx.nowMs);
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

// --- Consulting the machines: a Map lookup and a guard call (see machines/step.ts) ---

const NO_CONTEXT: Record<string, never> = {};

/** The transaction machine's step for `event` (status and effects), or null when it refuses it. */
export function transactionStep(txn: Pick<Transaction, 'status' | 'failure'>, event: TransactionEvent): Step<TransactionStatus, TransactionEffect> | null {
  return transactionTable.step(txn.status, { failureCode: txn.failure?.code ?? null }, event);
}

/** Whether the transaction's status has a transition on `type` at all (its guards aside). */
export function transactionHandles(txn: Pick<Transaction, 'status'>, type: TransactionEvent['type']): boolean {
  return transactionTable.handles(txn.status, type);
}

export function paymentStep(payment: Pick<Payment, 'status'>, event: PaymentEvent): Step<PaymentStatus, PaymentEffect> | null {
  return paymentTable.step(payment.status, NO_CONTEXT, event);
}

export function paymentHandles(payment: Pick<Payment, 'status'>, type: PaymentEvent['type']): boolean {
  return paymentTable.handles(payment.status, type);
}

export function transferStep(transfer: Pick<Transfer, 'status'>, event: TransferEvent): Step<TransferStatus, TransferEffect> | null {
  return transferTable.step(transfer.status, NO_CONTEXT, event);
}

export function transferHandles(transfer: Pick<Transfer, 'status'>, type: TransferEvent['type']): boolean {
  return transferTable.handles(transfer.status, type);
}

export function orderStep(order: Pick<ServiceOrder, 'status'>, event: OrderEvent): Step<OrderStatus, OrderEffect> | null {
  return orderTable.step(order.status, NO_CONTEXT, event);
}

/** Whether the order's status has a transition on `type` at all (e.g. `reconcile`: the order is unknown). */
export function orderHandles(order: Pick<ServiceOrder, 'status'>, type: OrderEvent['type']): boolean {
  return orderTable.handles(order.status, type);
}

type TxnExtra = { failure?: Failure | null; holdStatus?: Transaction['holdStatus']; holdId?: string | null; attempt?: number };

function txnMoved(txn: Transaction, status: TransactionStatus, atMs: number, extra: TxnExtra): WalEvent {
  return {
    t: 'txn.moved',
    id: txn.id,
    status,
    atMs,
    failure: extra.failure === undefined ? (status === 'failed' ? txn.failure : null) : extra.failure,
    ...(extra.holdStatus === undefined ? {} : { holdStatus: extra.holdStatus }),
    ...(extra.holdId === undefined ? {} : { holdId: extra.holdId }),
    ...(extra.attempt === undefined ? {} : { attempt: extra.attempt }),
  };
}

/** The txn.moved event for `event`, or null when the machine refuses it in the current status. */
export function moveTransaction(txn: Transaction, event: TransactionEvent, extra: TxnExtra = {}): WalEvent | null {
  const step = transactionStep(txn, event);
  return step === null ? null : txnMoved(txn, step.target, event.atMs, extra);
}

export function movePayment(payment: Payment, event: PaymentEvent): WalEvent | null {
  const step = paymentStep(payment, event);
  return step === null ? null : { t: 'payment.moved', id: payment.id, status: step.target, atMs: event.atMs };
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
  const step = transactionStep(txn, event);
  if (step === null) return null;
  const holdReleased = step.actions.includes('releaseHold') && txn.holdStatus === 'held';
  const events: WalEvent[] = [];
  if (holdReleased && txn.holdId !== null) events.push({ t: 'ledger', ops: [{ op: 'void', id: txn.holdId }], atMs: ctx.nowMs });
  events.push(txnMoved(txn, step.target, event.atMs, { failure, ...(holdReleased ? { holdStatus: 'released' as const } : {}) }));
  if (step.actions.includes('returnUsage')) events.push(...releaseUsage(ctx, txn));
  const payment = txn.paymentId === null ? undefined : ctx.state.payments.get(txn.paymentId);
  if (payment !== undefined) {
    const paymentMoved = movePayment(payment, { type: kind, atMs: ctx.nowMs });
    if (paymentMoved !== null) events.push(paymentMoved);
    const order = payment.orderId === undefined ? undefined : ctx.state.orders.get(payment.orderId);
    if (order !== undefined) events.push(...orderPaymentFailedEvents(ctx, order, failure));
  }
  const transfer = txn.transferId === null ? undefined : ctx.state.transfers.get(txn.transferId);
  const transferMove = transfer === undefined ? null : transferStep(transfer, { type: kind, atMs: ctx.nowMs });
  if (transfer !== undefined && transferMove !== null) {
    events.push(transferMoved(transfer, transferMove.target, ctx.nowMs));
    if (transferMove.actions.includes('emitFailed')) {
      events.push(outboxEvent(ctx, 'transfer.failed', txn, { status: 'failed', transfer_id: transfer.id, failure: { code: failure.code, stage: failure.stage } }));
    }
  }
  return events;
}

/**
 * A new attempt of a failed transaction (same id, attempt + 1): a transfer holds its funds again and is
 * resubmitted; a wallet payment places its hold again; a live collection asks its connector again under
 * the new attempt's reference, with a new page for the payer. A service order's transactions are
 * retried through the order (order-payments.ts).
 */
export function retryEvents(ctx: HandlerContext, cmd: Command, txn: Transaction): { events: WalEvent[]; effects: Effect[] } | Rejection {
  const step = transactionStep(txn, { type: 'retry', atMs: ctx.nowMs });
  if (txn.transferId !== null && step !== null) return retryTransferEvents(ctx, cmd, txn);
  if (step === null) {
    const why = !transactionHandles(txn, 'retry') ? `is ${txn.status}, not failed` : `failed with ${txn.failure?.code ?? 'no code'}, which is final`;
    return reject('CONFLICT', `Transaction ${why}; it cannot be retried.`);
  }
  const events: WalEvent[] = [txnMoved(txn, step.target, ctx.nowMs, { failure: null, holdStatus: 'none', holdId: null, attempt: txn.attempt + 1 })];
  const customer = ctx.state.customers.get(txn.customerId);
  if (customer !== undefined && step.actions.includes('countUsage')) {
    // A new attempt counts against today's limits like a new transaction would.
    const over = limitRejection(customer, txn.currency, txn.amountMinor, ctx.nowMs);
    if (over !== null) return over;
    events.push(usageEvent(customer, txn.currency, txn.amountMinor, ctx.nowMs));
  }
  const effects: Effect[] = [];
  const payment = txn.paymentId === null ? undefined : ctx.state.payments.get(txn.paymentId);
  const paymentMove = payment === undefined ? null : paymentStep(payment, { type: 'retry', atMs: ctx.nowMs });
  if (payment !== undefined && paymentMove !== null) {
    events.push({ t: 'payment.moved', id: payment.id, status: paymentMove.target, atMs: ctx.nowMs });
  }
  if (payment !== undefined && paymentMove?.actions.includes('resubmit') === true) {
    // A wallet payment debits inline: the new attempt places its hold again once this batch is durable.
    if (payment.method === 'wallet') {
      effects.push({ afterMs: 0, cmd: { k: 'payment.submit', id: payment.id, owner: cmd.owner, nowMs: ctx.nowMs, partition: cmd.partition } });
    } else if (customer !== undefined && isLiveOwner(payment.owner)) {
      // A live collection's new attempt is a new request to its connector (`<id>:<attempt>`), with a new
      // page for the payer; the last attempt's page is forgotten. No connector left → not retried.
      const call = collectionCall(ctx, payment, customer, txn.attempt + 1, 'submit');
      if (call === null) return reject('METHOD_NOT_SELECTABLE', `No live connector serves ${payment.method} collections for this customer any more.`);
      if (payment.rail !== undefined) events.push({ t: 'payment.rail', id: payment.id, providerReference: null, payUrl: null, atMs: ctx.nowMs });
      effects.push(call);
    }
  }
  return { events, effects };
}

// --- Transfers ---

function transferMoved(transfer: Transfer, status: TransferStatus, atMs: number, providerReference?: string): WalEvent {
  return { t: 'transfer.moved', id: transfer.id, status, atMs, ...(providerReference === undefined ? {} : { providerReference }) };
}

export function moveTransfer(transfer: Transfer, event: TransferEvent, providerReference?: string): WalEvent | null {
  const step = transferStep(transfer, event);
  return step === null ? null : transferMoved(transfer, step.target, event.atMs, providerReference);
}

/** Where a transfer's money waits: payouts in transit for a rail, partition clearing for another wallet. */
export function transitAccount(type: Beneficiary['type'], currency: string): string {
  return systemAccountId(type === 'wallet' ? 'partition_clearing' : 'payouts_in_transit', currency);
}

export function holdOp(ctx: HandlerContext, txnId: string, transfer: Pick<Transfer, 'amountMinor' | 'feeMinor' | 'currency'>, walletId: string, type: Beneficiary['type']): LedgerOp {
  return {
    op: 'hold',
    id: ctx.mintId(),
    txn: txnId,
    dr: walletId,
    cr: transitAccount(type, transfer.currency),
    amt: transfer.amountMinor + transfer.feeMinor,
    cur: transfer.currency,
  };
}

/** A command this shard sends itself after `delayMs` (a rail's answer, a requery). */
export function after(ctx: HandlerContext, cmd: Command, body: CommandBody, delayMs: number): Effect {
  return { afterMs: delayMs, cmd: Object.assign({}, body, { owner: cmd.owner, nowMs: ctx.nowMs, partition: cmd.partition }) };
}

/** Retry of a failed transfer: the funds are held again at once (pending means held), then resubmitted. */
export function retryTransferEvents(ctx: HandlerContext, cmd: Command, txn: Transaction): { events: WalEvent[]; effects: Effect[] } | Rejection {
  const transfer = ctx.state.transfers.get(txn.transferId!)!;
  const customer = ctx.state.customers.get(transfer.customerId)!;
  // A new attempt counts against today's limits like a new transfer would (and before the funds check).
  const over = limitRejection(customer, transfer.currency, transfer.amountMinor, ctx.nowMs);
  if (over !== null) return over;
  const wallet = walletOf(ctx.state, customer.wallets[transfer.currency] ?? '');
  if (wallet === undefined || !canDebit(wallet, transfer.amountMinor + transfer.feeMinor)) {
    return reject('INSUFFICIENT_FUNDS', `The ${transfer.currency} wallet cannot cover the retried transfer and its fee.`);
  }
  const beneficiary = ctx.state.beneficiaries.get(transfer.beneficiaryId);
  const beneficiaryType = beneficiary?.type ?? 'bank_account';
  const noRail = payoutRailRejection(transfer.owner, beneficiaryType, beneficiary?.country ?? '', beneficiary?.currency ?? transfer.currency);
  if (noRail !== null) return noRail;
  const hold = holdOp(ctx, txn.id, transfer, wallet.id, beneficiaryType);
  const moved = moveTransaction(txn, { type: 'retry', atMs: ctx.nowMs }, { failure: null, holdStatus: 'held', holdId: hold.id, attempt: txn.attempt + 1 });
  const transferMoved = moveTransfer(transfer, { type: 'retry', atMs: ctx.nowMs });
  if (moved === null || transferMoved === null) return reject('CONFLICT', 'Transfer cannot be retried from its status.');
  return {
    events: [{ t: 'ledger', ops: [hold], atMs: ctx.nowMs }, moved, transferMoved, usageEvent(customer, transfer.currency, transfer.amountMinor, ctx.nowMs)],
    effects: [after(ctx, cmd, { k: 'transfer.submit', id: transfer.id }, ctx.railLatencyMs)],
  };
}

// --- Service orders ---

/** What an order.moved record may carry beside the status (a retried order's new collection among them). */
export type OrderExtra = { providerReference?: string; fulfillmentSnapshot?: Record<string, unknown>; dispatchAttempt?: number; paymentId?: string; paymentTransactionId?: string };

export function orderMoved(order: ServiceOrder, status: OrderStatus, atMs: number, extra: OrderExtra = {}): WalEvent {
  return { t: 'order.moved', id: order.id, status, atMs, ...extra };
}

export function moveOrder(order: ServiceOrder, event: OrderEvent, extra: OrderExtra = {}): WalEvent | null {
  const step = orderStep(order, event);
  return step === null ? null : orderMoved(order, step.target, event.atMs, extra);
}

/**
 * `event` from the order's status, or — when the order is still pending because its collection's
 * answer (settled, failed) came before the opened step committed — from the status payment.opened
 * leads to, both in one record. Its awaitPayment effect is moot then: the payment has answered.
 */
function stepsAfterOpening(order: ServiceOrder, event: OrderEvent): { opened: Step<OrderStatus, OrderEffect> | null; step: Step<OrderStatus, OrderEffect> | null } {
  const opened = orderStep(order, { type: 'payment.opened', atMs: event.atMs });
  return { opened, step: orderStep(opened === null ? order : { status: opened.target }, event) };
}

/** Payment confirmed (or a controlled retry due): the order moves to fulfilling and the purchase is dispatched. */
export function dispatchEvents(ctx: HandlerContext, order: ServiceOrder, partition: number, event: 'payment.settled' | 'retry.dispatch'): { events: WalEvent[]; effects: Effect[] } | null {
  const attempt = order.dispatchAttempt + 1;
  const providerReference = `SVC-${order.id.slice(-12)}-${attempt}`;
  const { opened, step } = event === 'payment.settled' ? stepsAfterOpening(order, { type: event, atMs: ctx.nowMs }) : { opened: null, step: orderStep(order, { type: event, atMs: ctx.nowMs }) };
  if (step === null) return null;
  const events: WalEvent[] = opened === null ? [] : [orderMoved(order, opened.target, ctx.nowMs)];
  events.push(orderMoved(order, step.target, ctx.nowMs, { providerReference, dispatchAttempt: attempt }));
  const txn = ctx.state.transactions.get(order.transactionId)!;
  const submitted = moveTransaction(txn, { type: 'submit', atMs: ctx.nowMs });
  if (submitted !== null) events.push(submitted);
  // No live connector serves it any more (removed since the order was taken): the purchase is not made;
  // the order waits in fulfilling for an operator (or a connector) rather than being simulated.
  return { events, effects: step.actions.includes('dispatchPurchase') ? effectsOf(fulfilmentCall(ctx, order, attempt, 'submit')) : [] };
}

/**
 * Cancellation before fulfilment (through either of the order's transactions): the order is cancelled,
 * both transactions fail with CANCELLED, a wallet hold is voided and the day's usage given back.
 * Null when the order is past the point of cancelling.
 */
export function cancelOrderEvents(ctx: HandlerContext, order: ServiceOrder): WalEvent[] | null {
  const step = orderStep(order, { type: 'cancel', atMs: ctx.nowMs });
  if (step === null) return null;
  const events: WalEvent[] = [orderMoved(order, step.target, ctx.nowMs)];
  if (!step.actions.includes('cancelTransactions')) return events;
  const failure = { code: 'CANCELLED' as const, stage: 'client' as const, message: 'Cancelled by the client.' };
  for (const txnId of [order.transactionId, order.paymentTransactionId]) {
    const txn: Transaction = ctx.state.transactions.get(txnId)!;
    const held = txn.holdStatus === 'held' && txn.holdId !== null;
    // A wallet payment's transaction is already processing (its hold placed): it fails with CANCELLED.
    const event: TransactionEvent = transactionHandles(txn, 'cancel') ? { type: 'cancel', atMs: ctx.nowMs } : { type: 'fail', atMs: ctx.nowMs, code: 'CANCELLED' };
    const moved = moveTransaction(txn, event, { failure, ...(held ? { holdStatus: 'released' as const } : {}) });
    if (held) events.push({ t: 'ledger', ops: [{ op: 'void', id: txn.holdId! }], atMs: ctx.nowMs });
    if (moved !== null) events.push(moved);
  }
  const payment = ctx.state.payments.get(order.paymentId)!;
  const paymentMoved = movePayment(payment, { type: paymentHandles(payment, 'cancel') ? 'cancel' : 'fail', atMs: ctx.nowMs });
  if (paymentMoved !== null) events.push(paymentMoved);
  events.push(...releaseUsage(ctx, ctx.state.transactions.get(order.transactionId)!));
  return events;
}

/**
 * The order's collection failed (card declined, transfer never made): the order fails before any
 * purchase, its service transaction fails with the payment's code. Usage was given back with the payment.
 */
export function orderPaymentFailedEvents(ctx: HandlerContext, order: ServiceOrder, failure: { code: FailureCode; message: string }): WalEvent[] {
  const { opened, step } = stepsAfterOpening(order, { type: 'payment.failed', atMs: ctx.nowMs });
  if (step === null) return [];
  const txn = ctx.state.transactions.get(order.transactionId)!;
  const events: WalEvent[] = opened === null ? [] : [orderMoved(order, opened.target, ctx.nowMs)];
  events.push(orderMoved(order, step.target, ctx.nowMs));
  if (step.actions.includes('failServiceTransaction')) {
    const failed = moveTransaction(txn, { type: 'fail', atMs: ctx.nowMs, code: failure.code }, { failure: { code: failure.code, stage: 'collection', message: failure.message } });
    if (failed !== null) events.push(failed);
  }
  if (step.actions.includes('emitFailed')) {
    events.push(outboxEvent(ctx, 'service_order.failed', txn, { status: 'failed', order_id: order.id, service_code: order.serviceCode, failure: { code: failure.code, stage: 'collection' } }));
  }
  return events;
}
