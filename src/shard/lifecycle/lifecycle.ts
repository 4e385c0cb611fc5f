// Lifecycle rules of a transaction and the payment, transfer or order it belongs to: creating, moving
// (every status change through its machine), failing, cancelling, retrying and dispatching. Runs inside
// shard workers; pure: reads state, returns WAL events and effects. Resource handlers use it; it never
// imports a handler. Invariant: a hold is voided or posted, never edited; a failed attempt gives its
// day's limit usage back; a new attempt counts against the limits like a new transaction.
import { reject, type Rejection } from '../../errors.ts';
import { nextStatus } from '../../../machines/step.ts';
import { isRetryable, transactionMachine, type FailureCode, type TransactionEvent, type TransactionStatus } from '../../../machines/transaction.machine.ts';
import { paymentMachine, type PaymentEvent } from '../../../machines/payment.machine.ts';
import { transferMachine, type TransferEvent, type TransferStatus } from '../../../machines/transfer.machine.ts';
import { orderMachine, type OrderEvent, type OrderStatus } from '../../../machines/order.machine.ts';
import { canDebit, systemAccountId, type LedgerOp } from '../../ledger/ledger.ts';
import { isLiveOwner } from '../../rails/coverage.ts';
import type { WalEvent } from '../events.ts';
import type { Command, CommandBody } from '../protocol.ts';
import { walletOf, type Beneficiary, type Failure, type FailureStage, type Payment, type ServiceOrder, type Transaction, type Transfer } from '../state.ts';
import { DAY_MS, effectsOf, limitRejection, outboxEvent, usageEvent, type Effect, type HandlerContext } from './context.ts';
import { collectionCall, fulfilmentCall, payoutRailRejection } from './rail-requests.ts';

// --- Transactions and payments ---

export function newTransaction(
  ctx: HandlerContext,
  fields: Pick<Transaction, 'owner' | 'customerId' | 'type' | 'amountMinor' | 'feeMinor' | 'currency' | 'reference' | 'paymentId'> & { transferId?: string | null },
): Transaction {
  // Every field written out in one literal: a spread of `fields` made V8 build the object's shape at
  // run time on each create (map transitions were ~8% of a payment create's CPU in a perf profile).
  return {
    owner: fields.owner,
    customerId: fields.customerId,
    type: fields.type,
    amountMinor: fields.amountMinor,
    feeMinor: fields.feeMinor,
    currency: fields.currency,
    reference: fields.reference,
    paymentId: fields.paymentId,
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

/**
 * A new attempt of a failed transaction (same id, attempt + 1): a transfer holds its funds again and is
 * resubmitted; a wallet payment places its hold again; a live collection asks its connector again under
 * the new attempt's reference, with a new page for the payer. A service order's transactions are
 * retried through the order (order-payments.ts).
 */
export function retryEvents(ctx: HandlerContext, cmd: Command, txn: Transaction): { events: WalEvent[]; effects: Effect[] } | Rejection {
  if (txn.transferId !== null && txn.status === 'failed' && isRetryable(txn.failure?.code ?? null)) return retryTransferEvents(ctx, cmd, txn);
  const moved = moveTransaction(txn, { type: 'retry', atMs: ctx.nowMs }, { failure: null, holdStatus: 'none', holdId: null, attempt: txn.attempt + 1 });
  if (moved === null) {
    const why = txn.status !== 'failed' ? `is ${txn.status}, not failed` : `failed with ${txn.failure?.code ?? 'no code'}, which is final`;
    return reject('CONFLICT', `Transaction ${why}; it cannot be retried.`);
  }
  const events: WalEvent[] = [moved];
  const customer = ctx.state.customers.get(txn.customerId);
  if (customer !== undefined) {
    // A new attempt counts against today's limits like a new transaction would.
    const over = limitRejection(customer, txn.currency, txn.amountMinor, ctx.nowMs);
    if (over !== null) return over;
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
      if (call === null) return reject('METHOD_NOT_SELECTABLE', `No live connector serves ${payment.method} collections for this customer any more.`);
      if (payment.rail !== undefined) events.push({ t: 'payment.rail', id: payment.id, providerReference: null, payUrl: null, atMs: ctx.nowMs });
      effects.push(call);
    }
  }
  return { events, effects };
}

// --- Transfers ---

export function moveTransfer(transfer: Transfer, event: TransferEvent, providerReference?: string): WalEvent | null {
  const status = nextStatus(transferMachine, transfer.status, {}, event);
  if (status === null) return null;
  return { t: 'transfer.moved', id: transfer.id, status: status as TransferStatus, atMs: event.atMs, ...(providerReference === undefined ? {} : { providerReference }) };
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
  return { afterMs: delayMs, cmd: { ...body, owner: cmd.owner, nowMs: ctx.nowMs, partition: cmd.partition } };
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

export function moveOrder(
  order: ServiceOrder,
  event: OrderEvent,
  extra: { providerReference?: string; fulfillmentSnapshot?: Record<string, unknown>; dispatchAttempt?: number; paymentId?: string; paymentTransactionId?: string } = {},
): WalEvent | null {
  const status = nextStatus(orderMachine, order.status, {}, event);
  if (status === null) return null;
  return { t: 'order.moved', id: order.id, status: status as OrderStatus, atMs: event.atMs, ...extra };
}

/** Payment confirmed: the order moves to fulfilling and the purchase is dispatched to the rail. */
export function dispatchEvents(ctx: HandlerContext, order: ServiceOrder, partition: number, event: 'payment.settled' | 'retry.dispatch'): { events: WalEvent[]; effects: Effect[] } | null {
  const attempt = order.dispatchAttempt + 1;
  const providerReference = `SVC-${order.id.slice(-12)}-${attempt}`;
  // A payer quick enough to settle before the collection-opened step committed: open it in this record.
  const opened = order.status === 'pending' && event === 'payment.settled' ? moveOrder(order, { type: 'payment.opened', atMs: ctx.nowMs }) : null;
  const moved = moveOrder(opened === null ? order : { ...order, status: 'awaiting_payment' }, { type: event, atMs: ctx.nowMs }, { providerReference, dispatchAttempt: attempt });
  if (moved === null) return null;
  const events: WalEvent[] = opened === null ? [moved] : [opened, moved];
  const txn = ctx.state.transactions.get(order.transactionId)!;
  if (txn.status === 'pending') events.push(moveTransaction(txn, { type: 'submit', atMs: ctx.nowMs })!);
  // No live connector serves it any more (removed since the order was taken): the purchase is not made;
  // the order waits in fulfilling for an operator (or a connector) rather than being simulated.
  return { events, effects: effectsOf(fulfilmentCall(ctx, order, attempt, 'submit')) };
}

/**
 * Cancellation before fulfilment (through either of the order's transactions): the order is cancelled,
 * both transactions fail with CANCELLED, a wallet hold is voided and the day's usage given back.
 * Null when the order is past the point of cancelling.
 */
export function cancelOrderEvents(ctx: HandlerContext, order: ServiceOrder): WalEvent[] | null {
  const cancelled = moveOrder(order, { type: 'cancel', atMs: ctx.nowMs });
  if (cancelled === null) return null;
  const events: WalEvent[] = [cancelled];
  const failure = { code: 'CANCELLED' as const, stage: 'client' as const, message: 'Cancelled by the client.' };
  for (const txnId of [order.transactionId, order.paymentTransactionId]) {
    const txn: Transaction = ctx.state.transactions.get(txnId)!;
    const held = txn.holdStatus === 'held' && txn.holdId !== null;
    // A wallet payment's transaction is already processing (its hold placed): it fails with CANCELLED.
    const event: TransactionEvent = txn.status === 'processing' ? { type: 'fail', atMs: ctx.nowMs, code: 'CANCELLED' } : { type: 'cancel', atMs: ctx.nowMs };
    const moved = moveTransaction(txn, event, { failure, ...(held ? { holdStatus: 'released' as const } : {}) });
    if (held) events.push({ t: 'ledger', ops: [{ op: 'void', id: txn.holdId! }], atMs: ctx.nowMs });
    if (moved !== null) events.push(moved);
  }
  const payment = ctx.state.payments.get(order.paymentId)!;
  const paymentMoved = movePayment(payment, { type: payment.status === 'processing' ? 'fail' : 'cancel', atMs: ctx.nowMs });
  if (paymentMoved !== null) events.push(paymentMoved);
  events.push(...releaseUsage(ctx, ctx.state.transactions.get(order.transactionId)!));
  return events;
}

/**
 * The order's collection failed (card declined, transfer never made): the order fails before any
 * purchase, its service transaction fails with the payment's code. Usage was given back with the payment.
 */
export function orderPaymentFailedEvents(ctx: HandlerContext, order: ServiceOrder, failure: { code: FailureCode; message: string }): WalEvent[] {
  // A collection that failed before the opened step committed: open the order in this same record first.
  const opened = order.status === 'pending' ? moveOrder(order, { type: 'payment.opened', atMs: ctx.nowMs }) : null;
  const moved = moveOrder(opened === null ? order : { ...order, status: 'awaiting_payment' }, { type: 'payment.failed', atMs: ctx.nowMs });
  if (moved === null) return [];
  const txn = ctx.state.transactions.get(order.transactionId)!;
  const events: WalEvent[] = opened === null ? [moved] : [opened, moved];
  const txnMoved = moveTransaction(txn, { type: 'fail', atMs: ctx.nowMs, code: failure.code }, { failure: { code: failure.code, stage: 'collection', message: failure.message } });
  if (txnMoved !== null) events.push(txnMoved);
  events.push(outboxEvent(ctx, 'service_order.failed', txn, { status: 'failed', order_id: order.id, service_code: order.serviceCode, failure: { code: failure.code, stage: 'collection' } }));
  return events;
}
