// Opening a payment (one constructor for the API's payments and a service order's collection or wallet
// debit) and the new attempt of a failed order retried through either of its transactions. Runs inside
// shard workers; pure: reads state, returns WAL events and effects. Invariant: a retry re-enters the
// transaction at pending under the same id and charges the limits and funds again, or changes nothing.
import { isRejection, reject, type Rejection } from '../../errors.ts';
import { canDebit, systemAccountId } from '../../ledger/ledger.ts';
import { isLiveOwner } from '../../rails/coverage.ts';
import { collectionOpening } from '../../rails/rails.ts';
import type { WalEvent } from '../events.ts';
import type { Command } from '../protocol.ts';
import { walletOf, type Customer, type Payment, type ServiceOrder, type Transaction } from '../state.ts';
import { limitRejection, usageEvent, type Effect, type HandlerContext } from './context.ts';
import { movePayment, moveTransaction, newTransaction, orderMoved, orderStep, paymentHandles, transactionHandles, transactionStep } from './lifecycle.ts';
import { collectionCall, methodsFor } from './rail-requests.ts';

/** How long an order's collection (instructions, hosted page) stays payable. */
const ORDER_COLLECTION_TTL_MS = 86_400_000;

/**
 * A payment and its transaction (type payment), built once for every path that opens one: a payment
 * created through the API (with its collection fee and the client's reference) and an order's payment
 * (no fee, the order's id as reference and in `orderId`). A sandbox card or bank-transfer collection is
 * opened at once (instructions, hosted page) and stays payable `ttlMs`; a live one is opened by its
 * connector after commit; a wallet debit is held by the caller. Fields that only some payments carry are
 * set after the literal, so every payment is built with one object shape. `opened`: the sandbox rail
 * opened the collection now (false for a wallet debit and for a live collection).
 */
export function newPayment(
  ctx: HandlerContext,
  fields: { owner: string; customer: Customer; paymentId: string; method: Payment['method']; amountMinor: number; feeMinor: number; currency: string; reference: string | null; walletId: string; ttlMs: number; orderId?: string },
): { payment: Payment; txn: Transaction; opened: boolean } {
  const { owner, customer, paymentId, method } = fields;
  const txn = newTransaction(ctx, { owner, customerId: customer.id, type: 'payment', amountMinor: fields.amountMinor, feeMinor: fields.feeMinor, currency: fields.currency, reference: fields.reference, paymentId });
  const opening = method === 'wallet' ? null : collectionOpening(owner, { paymentId, method, customerName: customer.name, nowMs: ctx.nowMs, ttlMs: fields.ttlMs, mintId: ctx.mintId });
  const payment: Payment = {
    id: paymentId,
    owner,
    customerId: customer.id,
    transactionId: txn.id,
    method,
    status: 'pending',
    amountMinor: fields.amountMinor,
    feeMinor: fields.feeMinor,
    currency: fields.currency,
    reference: fields.reference,
    walletId: fields.walletId,
    instructions: opening?.instructions ?? null,
    createdAtMs: ctx.nowMs,
    updatedAtMs: ctx.nowMs,
  };
  if (opening?.checkoutToken !== undefined) payment.checkoutToken = opening.checkoutToken;
  if (fields.orderId !== undefined) payment.orderId = fields.orderId;
  return { payment, txn, opened: opening !== null };
}

/** An order's payment: no fee, the order's id as its reference, payable for a day. */
export function newOrderPayment(
  ctx: HandlerContext,
  fields: { customer: Customer; orderId: string; paymentId: string; method: Payment['method']; amountMinor: number; currency: string; walletId: string },
): { payment: Payment; txn: Transaction } {
  return newPayment(ctx, Object.assign({}, fields, { owner: fields.customer.owner, feeMinor: 0, reference: fields.orderId, ttlMs: ORDER_COLLECTION_TTL_MS }));
}

type Retried = { events: WalEvent[]; effects: Effect[] };

/**
 * A failed order retried through either of its transactions (the one named must have failed with a
 * retryable code: the transaction machine's guard): a new attempt at the whole purchase under the same
 * order, the order machine's `transaction.retry` step (failed → awaiting_payment) carrying it out. Its
 * effects, in order: countUsage, the day's limits charged again (checked before the funds); payAgain,
 * the order paid again the way it was first: a wallet hold placed now (INSUFFICIENT_FUNDS if the wallet
 * is short), then dispatched as a new order is; a failed collection re-opened (the same page or
 * instructions; a live connector asked again); a collection whose money went back to the payer
 * replaced by a new one; retryServiceTransaction, the service transaction back to pending (attempt + 1,
 * so its events carry `:N`). A refused retry changes nothing.
 */
export function retryOrderEvents(ctx: HandlerContext, cmd: Command, order: ServiceOrder, named: Transaction): Retried | Rejection {
  if (transactionStep(named, { type: 'retry', atMs: ctx.nowMs }) === null) {
    const why = !transactionHandles(named, 'retry') ? `is ${named.status}, not failed` : `failed with ${named.failure?.code ?? 'no code'}, which is final`;
    return reject('CONFLICT', `Transaction ${why}; it cannot be retried.`);
  }
  const step = orderStep(order, { type: 'transaction.retry', atMs: ctx.nowMs });
  if (step === null) return reject('CONFLICT', `The service order is ${order.status}; only a failed order is retried.`);
  const customer = ctx.state.customers.get(order.customerId)!;
  const serviceTxn = ctx.state.transactions.get(order.transactionId)!;
  const payment = ctx.state.payments.get(order.paymentId)!;
  const events: WalEvent[] = [];
  const effects: Effect[] = [];
  let orderPayment: Paid['orderPayment'];
  // A new attempt counts against today's limits like a new order would (and before the funds check).
  const usage = step.actions.includes('countUsage') ? usageEvent(customer, order.currency, order.customerAmountMinor, ctx.nowMs) : null;
  if (usage !== null) {
    const over = limitRejection(customer, order.currency, order.customerAmountMinor, ctx.nowMs);
    if (over !== null) return over;
  }
  if (step.actions.includes('payAgain')) {
    const paymentTxn = ctx.state.transactions.get(order.paymentTransactionId)!;
    // A failed payment is attempted again; a collection whose money went back (its refund recorded on its
    // transaction, completed or on its way) is replaced; anything else is still the order's money.
    const paid = paymentHandles(payment, 'retry') ? sameCollection(ctx, cmd, order, customer)
      : payment.method !== 'wallet' && paymentTxn.refund !== undefined ? newCollection(ctx, order, customer)
      : null;
    if (paid === null) return reject('CONFLICT', `The order's ${payment.method} payment is ${payment.status}; the order cannot be retried.`);
    if (isRejection(paid)) return paid;
    events.push(...paid.events);
    effects.push(...paid.effects);
    orderPayment = paid.orderPayment;
  }
  if (step.actions.includes('retryServiceTransaction')) {
    const serviceMoved = moveTransaction(serviceTxn, { type: 'retry', atMs: ctx.nowMs }, { failure: null, holdStatus: 'none', holdId: null, attempt: serviceTxn.attempt + 1 });
    if (serviceMoved === null) return reject('CONFLICT', `The order's service transaction failed with ${serviceTxn.failure?.code ?? 'no code'}; the order cannot be retried.`);
    events.push(serviceMoved);
  }
  events.push(orderMoved(order, step.target, ctx.nowMs, orderPayment ?? {}));
  if (usage !== null) events.push(usage);
  return { events, effects };
}

type Paid = Retried & { orderPayment?: { paymentId: string; paymentTransactionId: string } };

/** The order's failed payment, attempted again: its wallet hold placed again, or its collection re-opened. */
function sameCollection(ctx: HandlerContext, cmd: Command, order: ServiceOrder, customer: Customer): Paid | Rejection {
  const payment = ctx.state.payments.get(order.paymentId)!;
  const txn = ctx.state.transactions.get(order.paymentTransactionId)!;
  const attempt = txn.attempt + 1;
  const paymentMoved = movePayment(payment, { type: 'retry', atMs: ctx.nowMs });
  if (payment.method === 'wallet') {
    const wallet = walletOf(ctx.state, payment.walletId);
    if (wallet === undefined || !canDebit(wallet, order.customerAmountMinor)) {
      return reject('INSUFFICIENT_FUNDS', `The ${order.currency} wallet cannot cover ${order.customerAmountMinor} for the retried order.`);
    }
    // Pending with its funds held (as a pending transfer is); the order's paid step submits it and
    // dispatches the purchase, as for a new order.
    const holdId = ctx.mintId();
    const moved = moveTransaction(txn, { type: 'retry', atMs: ctx.nowMs }, { failure: null, holdStatus: 'held', holdId, attempt });
    if (moved === null || paymentMoved === null) return reject('CONFLICT', 'The order\'s payment cannot be retried from its status.');
    const hold: WalEvent = { t: 'ledger', atMs: ctx.nowMs, ops: [{ op: 'hold', id: holdId, txn: txn.id, dr: wallet.id, cr: systemAccountId('service_payables', order.currency), amt: order.customerAmountMinor, cur: order.currency }] };
    return { events: [hold, moved, paymentMoved], effects: [{ afterMs: ctx.railLatencyMs, cmd: { k: 'order.paid', id: order.id, owner: cmd.owner, nowMs: ctx.nowMs, partition: cmd.partition } }] };
  }
  const moved = moveTransaction(txn, { type: 'retry', atMs: ctx.nowMs }, { failure: null, holdStatus: 'none', holdId: null, attempt });
  if (moved === null || paymentMoved === null) return reject('CONFLICT', 'The order\'s payment cannot be retried from its status.');
  const events: WalEvent[] = [moved, paymentMoved];
  if (!isLiveOwner(payment.owner)) return { events, effects: [] };
  // A live collection's new attempt is a new request to its connector (`<id>:<attempt>`), with a new page.
  const call = collectionCall(ctx, payment, customer, attempt, 'submit');
  if (call === null) return reject('METHOD_NOT_SELECTABLE', `No live connector serves ${payment.method} collections for this customer any more.`);
  if (payment.rail !== undefined) events.push({ t: 'payment.rail', id: payment.id, providerReference: null, payUrl: null, atMs: ctx.nowMs });
  return { events, effects: [call] };
}

/** The order's collection completed and its money went back to the payer: the order is paid through a new one. */
function newCollection(ctx: HandlerContext, order: ServiceOrder, customer: Customer): Paid | Rejection {
  const last = ctx.state.payments.get(order.paymentId)!;
  if (methodsFor(customer).find((m) => m.method === last.method)?.selectable !== true) {
    return reject('METHOD_NOT_SELECTABLE', `${last.method} can no longer collect for this customer.`);
  }
  const { payment, txn } = newOrderPayment(ctx, { customer, orderId: order.id, paymentId: ctx.mintId(), method: last.method, amountMinor: order.customerAmountMinor, currency: order.currency, walletId: last.walletId });
  const events: WalEvent[] = [{ t: 'txn.created', txn }, { t: 'payment.created', payment }];
  const effects: Effect[] = [];
  if (isLiveOwner(payment.owner)) {
    const call = collectionCall(ctx, payment, customer, txn.attempt, 'submit');
    if (call === null) return reject('METHOD_NOT_SELECTABLE', `No live connector serves ${payment.method} collections for this customer any more.`);
    effects.push(call);
  }
  return { events, effects, orderPayment: { paymentId: payment.id, paymentTransactionId: txn.id } };
}
