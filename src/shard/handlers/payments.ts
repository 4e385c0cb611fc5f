// Command handlers for payments (collections into a wallet, or inline wallet debits) and their outcomes.
// Runs inside shard workers. bank_transfer waits for the customer's transfer (settle/fail from the rail
// or the sandbox helpers); wallet holds the amount at once and the rail posts or voids the hold.
// Invariant: settlement credits the wallet net of fee and the fee account with the fee, both from clearing.
import assert from 'node:assert/strict';
import { timingSafeEqual } from 'node:crypto';
import { reject, type Rejection } from '../../errors.ts';
import { findCountry } from '../../catalogue/countries.ts';
import { collectionFeeMinor } from '../../catalogue/limits.ts';
import { canDebit, systemAccountId, type LedgerOp } from '../../ledger/ledger.ts';
import type { FailureCode } from '../../../machines/transaction.machine.ts';
import type { WalEvent } from '../events.ts';
import type { Command } from '../protocol.ts';
import { walletOf, type Customer, type Payment, type PaymentMethod, type Transaction } from '../state.ts';
import { collectionExpiresAtMs, expiresUnpaid, COLLECTION_TTL_MS } from '../collections.ts';
import { iso, paymentJson } from '../views.ts';
import {
  effectsOf,
  accessRejection,
  customerFor,
  isRejection,
  limitRejection,
  okJson,
  okReply,
  outboxEvent,
  rejected,
  usageEvent,
  REQUERY_AFTER_MS,
  stale,
  type Effect,
  type HandlerContext,
  type Outcome,
} from '../lifecycle/context.ts';
import { openWallet } from '../lifecycle/wallets.ts';
import { dispatchEvents, failEvents, movePayment, moveTransaction, paymentHandles, transactionHandles } from '../lifecycle/lifecycle.ts';
import { collectionCall, methodsFor } from '../lifecycle/rail-requests.ts';
import { newPayment } from '../lifecycle/order-payments.ts';
import { transactionOfPayment } from '../payment-opened.ts';
import { contradiction, recordedOutcome } from '../lifecycle/reconcile.ts';
import { isLiveOwner } from '../../rails/coverage.ts';
import { railFailureCode, RAIL_RETRY_AFTER_MS, type RailOp } from '../../rails/rail.ts';


export function listMethods(ctx: HandlerContext, cmd: Command & { k: 'payment.methods' }): Outcome {
  const customer = customerFor(ctx, cmd, cmd.customerId);
  if (isRejection(customer)) return rejected(customer);
  const items = methodsFor(customer).map((m) => ({
    method: m.method,
    selectable: m.selectable,
    enabled: m.enabled,
    reason: m.reason,
    min_amount_minor: m.min_amount_minor,
    max_amount_minor: m.max_amount_minor,
    kyc_level_min: m.kyc_level_min,
  }));
  return { events: [], reply: () => okReply(200, { customer_id: customer.id, country_code: customer.countryCode, items }) };
}

/**
 * METHOD_NOT_SELECTABLE for a method this customer cannot use; VALIDATION outside the method's bounds.
 * The bounds are the country context's, in the home currency: a payment in another currency (from a
 * wallet exchanged into it) is bounded by the tier limits of its own currency only.
 */
function methodRejection(customer: Customer, method: string, amount: { minor: number; currency: string }): Rejection | null {
  const rule = methodsFor(customer).find((m) => m.method === method);
  if (rule === undefined || !rule.selectable) {
    const why = rule?.reason ?? 'unknown_method';
    return reject('METHOD_NOT_SELECTABLE', `Method ${method} is not selectable for this customer (${why}).`);
  }
  if (amount.currency !== findCountry(customer.countryCode)?.currency_code) return null;
  const amountMinor = amount.minor;
  if (rule.min_amount_minor !== null && amountMinor < rule.min_amount_minor) {
    return reject('VALIDATION', `amount_minor is below the ${method} minimum of ${rule.min_amount_minor}.`);
  }
  if (rule.max_amount_minor !== null && amountMinor > rule.max_amount_minor) {
    return reject('VALIDATION', `amount_minor is above the ${method} maximum of ${rule.max_amount_minor}.`);
  }
  return null;
}

export function createPayment(ctx: HandlerContext, cmd: Command & { k: 'payment.create' }): Outcome {
  const body = cmd.body;
  const customer = customerFor(ctx, cmd, body.customerId);
  if (isRejection(customer)) return rejected(customer);
  const notSelectable = methodRejection(customer, body.method, { minor: body.amountMinor, currency: body.currency });
  if (notSelectable !== null) return rejected(notSelectable);
  const method = body.method as PaymentMethod;
  if (method === 'virtual_account') return rejected(reject('METHOD_NOT_SELECTABLE', 'virtual_account is a funding instrument, not a checkout method.'));
  const events: WalEvent[] = [];
  const existingWalletId = customer.wallets[body.currency];
  let walletId: string;
  if (method === 'wallet') {
    const wallet = existingWalletId === undefined ? undefined : walletOf(ctx.state, existingWalletId);
    // LIMIT_EXCEEDED is decided before INSUFFICIENT_FUNDS, everywhere.
    const over = limitRejection(customer, body.currency, body.amountMinor, ctx.nowMs);
    if (over !== null) return rejected(over);
    if (wallet === undefined || !canDebit(wallet, body.amountMinor)) {
      return rejected(reject('INSUFFICIENT_FUNDS', `The ${body.currency} wallet cannot cover ${body.amountMinor}.`));
    }
    walletId = wallet.id;
  } else {
    // Local collection rails settle only in the country's own currency.
    const home = findCountry(customer.countryCode)?.currency_code;
    if (body.currency !== home) {
      return rejected(reject('METHOD_NOT_SELECTABLE', `Method ${method} collects only ${home ?? 'the home currency'} for ${customer.countryCode} customers.`));
    }
    if (existingWalletId === undefined) {
      const wallet = openWallet(ctx, customer, body.currency);
      events.push({ t: 'wallet.opened', wallet });
      walletId = wallet.id;
    } else {
      walletId = existingWalletId;
    }
  }
  const over = limitRejection(customer, body.currency, body.amountMinor, ctx.nowMs);
  if (over !== null) return rejected(over);

  const paymentId = ctx.mintId();
  const feeMinor = method === 'wallet' ? 0 : collectionFeeMinor(method, body.currency, body.amountMinor);
  const { payment, opened } = newPayment(ctx, { owner: cmd.owner, customer, paymentId, method, amountMinor: body.amountMinor, feeMinor, currency: body.currency, reference: body.reference, walletId, ttlMs: COLLECTION_TTL_MS });
  if (method === 'mobile_money') payment.promptPhone = customer.phone;
  // The record carries the payment once: its transaction is derived from it, here as at replay.
  const txn = transactionOfPayment(payment);
  events.push({ t: 'payment.opened', payment }, usageEvent(customer, body.currency, body.amountMinor, ctx.nowMs));
  const effects: Effect[] = [];
  if (method === 'wallet') {
    events.push(...holdEvents(ctx, payment, txn));
    effects.push(railSettle(ctx, cmd, payment.id, txn.attempt));
  }
  if (method !== 'wallet' && !opened) {
    const call = collectionCall(ctx, payment, customer, txn.attempt, 'submit');
    assert(call !== null, 'payments: a selectable live method has a connector');
    effects.push(call);
  }
  // The log record names this reply instead of carrying it (a card's checkout URL depends on the
  // server's public URL setting, so a card reply is kept whole: a restart may change that setting).
  const outcome: Outcome = { events, reply: (state) => okJson(201, paymentJson(state.payments.get(paymentId)!)), effects };
  if (method !== 'card') outcome.replyView = { kind: 'payment', id: paymentId };
  return outcome;
}

/** Holds a wallet payment's amount (two-phase: posted on settle, voided on failure) and submits it. */
function holdEvents(ctx: HandlerContext, payment: Payment, txn: Transaction): WalEvent[] {
  const holdId = ctx.mintId();
  const op: LedgerOp = {
    op: 'hold',
    id: holdId,
    txn: txn.id,
    dr: payment.walletId,
    cr: systemAccountId('merchant_payable', payment.currency),
    amt: payment.amountMinor,
    cur: payment.currency,
  };
  const moved = moveTransaction(txn, { type: 'submit', atMs: ctx.nowMs }, { holdStatus: 'held', holdId });
  const paymentMoved = movePayment(payment, { type: 'submit', atMs: ctx.nowMs });
  assert(moved !== null && paymentMoved !== null, 'payments: a pending wallet payment must accept submit');
  return [{ t: 'ledger', ops: [op], atMs: ctx.nowMs }, moved, paymentMoved];
}

/** The rail's answer for this attempt: a late answer for an earlier attempt is then refused, not applied. */
function railSettle(ctx: HandlerContext, cmd: Command, paymentId: string, attempt: number): Effect {
  return {
    afterMs: ctx.railLatencyMs,
    cmd: { k: 'payment.settle', id: paymentId, source: 'rail', attempt, owner: cmd.owner, nowMs: ctx.nowMs, partition: cmd.partition },
  };
}

function paymentFor(ctx: HandlerContext, cmd: Command, id: string): Payment | Rejection {
  const payment = ctx.state.payments.get(id);
  const denied = accessRejection(cmd, payment, 'payment');
  if (denied !== null || payment === undefined) return denied ?? reject('NOT_FOUND', 'No such payment.');
  return payment;
}

export function getPayment(ctx: HandlerContext, cmd: Command & { k: 'payment.get' }): Outcome {
  const payment = paymentFor(ctx, cmd, cmd.id);
  if (isRejection(payment)) return rejected(payment);
  return { events: [], reply: () => okJson(200, paymentJson(payment)) };
}

/** Places the hold of a retried wallet payment, or fails it final when the wallet is now short. */
export function submitPayment(ctx: HandlerContext, cmd: Command & { k: 'payment.submit' }): Outcome {
  const payment = paymentFor(ctx, cmd, cmd.id);
  if (isRejection(payment)) return rejected(payment);
  const txn = ctx.state.transactions.get(payment.transactionId)!;
  if (payment.method !== 'wallet' || !paymentHandles(payment, 'submit') || !transactionHandles(txn, 'submit')) {
    return rejected(reject('CONFLICT', 'Payment is not awaiting submission.'));
  }
  const wallet = walletOf(ctx.state, payment.walletId);
  if (wallet === undefined || !canDebit(wallet, payment.amountMinor)) {
    const events = failEvents(ctx, txn, { code: 'INSUFFICIENT_FUNDS', stage: 'collection', message: 'The wallet cannot cover the amount.' }, 'fail');
    return { events: events ?? [], reply: (state) => okJson(200, paymentJson(state.payments.get(payment.id)!)) };
  }
  const events = holdEvents(ctx, payment, txn);
  return { events, reply: (state) => okJson(200, paymentJson(state.payments.get(payment.id)!)), effects: [railSettle(ctx, cmd, payment.id, txn.attempt)] };
}

/**
 * A sandbox collection past its expiry (on the owner's clock) can no longer be paid or declined, even
 * before the sweep gets to fail it with EXPIRED (the sweep runs every KOBO_COLLECTION_SWEEP_MS).
 */
function expiredRejection(ctx: HandlerContext, payment: Payment): Rejection | null {
  if (!expiresUnpaid(payment) || ctx.nowMs < collectionExpiresAtMs(payment)) return null;
  return reject('CONFLICT', `The collection expired at ${iso(collectionExpiresAtMs(payment))}; create a new payment.`);
}

export function settlePayment(ctx: HandlerContext, cmd: Command & { k: 'payment.settle' }): Outcome {
  const payment = paymentFor(ctx, cmd, cmd.id);
  if (isRejection(payment)) return rejected(payment);
  const txn = ctx.state.transactions.get(payment.transactionId)!;
  if (cmd.attempt !== undefined && cmd.attempt !== txn.attempt) {
    return rejected(reject('CONFLICT', `The rail answered attempt ${cmd.attempt}; the payment is on attempt ${txn.attempt}.`));
  }
  const expired = expiredRejection(ctx, payment);
  if (expired !== null) return rejected(expired);
  // A wallet payment is a debit: it settles only by posting its hold. Without one (a retried payment
  // not yet re-submitted) the collection branch below would credit the wallet instead.
  if (payment.method === 'wallet' && txn.holdStatus !== 'held') {
    return rejected(reject('CONFLICT', `Payment is ${payment.status} with no debit on hold; only a processing wallet payment can settle.`));
  }
  const moved = moveTransaction(txn, { type: 'settle', atMs: ctx.nowMs }, txn.holdStatus === 'held' ? { holdStatus: 'posted' } : {});
  const paymentMoved = movePayment(payment, { type: 'settle', atMs: ctx.nowMs });
  if (moved === null || paymentMoved === null) {
    return rejected(reject('CONFLICT', `Payment is ${payment.status}; only a pending or processing payment can settle.`));
  }
  const ops: LedgerOp[] = [];
  if (txn.holdStatus === 'held' && txn.holdId !== null) {
    ops.push({ op: 'commit', id: txn.holdId });
  } else {
    const clearing = systemAccountId('collection_clearing', payment.currency);
    const net = payment.amountMinor - payment.feeMinor;
    // A collection for a service order funds the order (service payables), not the customer's wallet.
    const credit = payment.orderId === undefined ? payment.walletId : systemAccountId('service_payables', payment.currency);
    if (net > 0) ops.push({ op: 'post', id: ctx.mintId(), txn: txn.id, dr: clearing, cr: credit, amt: net, cur: payment.currency });
    if (payment.feeMinor > 0) {
      ops.push({ op: 'post', id: ctx.mintId(), txn: txn.id, dr: clearing, cr: systemAccountId('fees', payment.currency), amt: payment.feeMinor, cur: payment.currency });
    }
  }
  const events: WalEvent[] = [];
  if (ops.length > 0) events.push({ t: 'ledger', ops, atMs: ctx.nowMs });
  events.push(moved, paymentMoved, outboxEvent(ctx, 'payment.completed', txn, { status: 'completed', payment_id: payment.id, method: payment.method }));
  const order = payment.orderId === undefined ? undefined : ctx.state.orders.get(payment.orderId);
  const dispatched = order === undefined ? null : dispatchEvents(ctx, order, cmd.partition, 'payment.settled');
  if (dispatched !== null) events.push(...dispatched.events);
  return { events, reply: (state) => okJson(200, paymentJson(state.payments.get(payment.id)!)), effects: dispatched?.effects ?? [] };
}

const FAILABLE_CODES: readonly FailureCode[] = ['PROVIDER_ERROR', 'INTERNAL', 'RATE_LIMITED', 'COMPLIANCE_DENIED', 'INSUFFICIENT_FUNDS', 'LIMIT_EXCEEDED'];

/** Payments one sweep command expires at most (the rest wait for the next sweep: no long command). */
const EXPIRE_PAYMENTS_MAX = 500;
/** Index rows one sweep reads at most (rows of collections that wait no more are dropped on the way). */
export const EXPIRE_CANDIDATES_MAX = 2 * EXPIRE_PAYMENTS_MAX;
/** A sweep that found more due than it may expire runs again this soon (a backlog drains in slices). */
export const EXPIRE_AGAIN_AFTER_MS = 100;

/**
 * A sandbox collection (bank transfer, card page, mobile-money prompt) the payer has not paid when its
 * instructions expire (a day after creation, on the owner's sandbox clock) fails with EXPIRED, final:
 * the client creates a new payment. Without this an abandoned collection stayed in memory forever. A
 * live collection's end is its connector's word (a failed callback), never kobo's guess.
 */
export function expirePayments(ctx: HandlerContext, cmd: Command & { k: 'payments.expire' }): Outcome {
  const events: WalEvent[] = [];
  let expired = 0;
  // The index names candidates only; each payment's own state and expiry decide.
  const candidates = cmd.candidates ?? ctx.state.due.dueBy((owner) => cmd.cutoffMs[owner] ?? cmd.defaultCutoffMs, EXPIRE_CANDIDATES_MAX);
  for (const due of candidates) {
    if (expired >= EXPIRE_PAYMENTS_MAX) break;
    const payment = ctx.state.payments.get(due.id);
    const txn = payment === undefined ? undefined : ctx.state.transactions.get(payment.transactionId);
    // Paid, failed, cancelled or expired since (an expired one keeps its row until this finds it so,
    // so that a torn tail that takes the expiry back leaves the row), or waiting again with a newer row.
    if (payment === undefined || txn === undefined || !expiresUnpaid(payment) || collectionExpiresAtMs(payment) !== due.expiresAtMs) {
      ctx.state.due.drop(due);
      continue;
    }
    // Failed at the owner's sandbox-clock now (the sweep's cutoff for that owner).
    const failed = failEvents(Object.assign({}, ctx, { nowMs: cmd.cutoffMs[payment.owner] ?? cmd.defaultCutoffMs }), txn, { code: 'EXPIRED', stage: 'collection', message: 'The payer did not pay before the collection expired.' }, 'fail');
    if (failed === null) continue;
    events.push(...failed);
    expired += 1;
  }
  // A heap index may hold more: look again soon. (The shard file's sweep looks again itself.)
  const more = cmd.candidates === undefined && (candidates.length >= EXPIRE_CANDIDATES_MAX || expired >= EXPIRE_PAYMENTS_MAX);
  const effects: Effect[] = more ? [{ afterMs: EXPIRE_AGAIN_AFTER_MS, cmd }] : [];
  return { events, reply: () => ({ status: 200, json: JSON.stringify({ data: { expired } }) }), effects };
}

export function failPayment(ctx: HandlerContext, cmd: Command & { k: 'payment.fail' }): Outcome {
  const payment = paymentFor(ctx, cmd, cmd.id);
  if (isRejection(payment)) return rejected(payment);
  if (!(FAILABLE_CODES as readonly string[]).includes(cmd.code)) {
    return rejected(reject('VALIDATION', `failure_code must be one of ${FAILABLE_CODES.join(', ')}.`));
  }
  const txn = ctx.state.transactions.get(payment.transactionId)!;
  const code = cmd.code as FailureCode;
  const events = failEvents(ctx, txn, { code, stage: 'collection', message: `The collection rail failed the payment (${code}).` }, 'fail');
  if (events === null) {
    return rejected(reject('CONFLICT', `Payment is ${payment.status}; only a pending or processing payment can fail.`));
  }
  return { events, reply: (state) => okJson(200, paymentJson(state.payments.get(payment.id)!)) };
}

/**
 * The hosted card checkout page's actions. The page is public: the token in its address (minted with
 * the payment, kept in the WAL) is what authorises it, so the owner check uses the payment's own owner.
 */
export function checkoutPayment(ctx: HandlerContext, cmd: Command & { k: 'payment.checkout' }): Outcome {
  const payment = ctx.state.payments.get(cmd.id);
  const token = payment?.checkoutToken;
  if (payment === undefined || token === undefined || !tokensEqual(token, cmd.token)) return rejected(reject('NOT_FOUND', 'No such checkout.'));
  // Live card payments are completed by the card rail's own page, never by kobo's sandbox page.
  if (isLiveOwner(payment.owner)) return rejected(reject('NOT_FOUND', 'No such checkout: the hosted checkout page is sandbox only.'));
  const asOwner = { owner: payment.owner, nowMs: cmd.nowMs, partition: cmd.partition, customerScope: null };
  const expired = cmd.action === 'view' ? null : expiredRejection(ctx, payment);
  if (expired !== null) return rejected(expired);
  if (cmd.action === 'complete') return settlePayment(ctx, Object.assign({}, asOwner, { k: 'payment.settle' as const, id: payment.id, source: 'rail' as const }));
  if (cmd.action === 'decline') return failPayment(ctx, Object.assign({}, asOwner, { k: 'payment.fail' as const, id: payment.id, code: 'PROVIDER_ERROR' as const, source: 'rail' as const }));
  const customer = ctx.state.customers.get(payment.customerId);
  return {
    events: [],
    reply: () => okReply(200, { id: payment.id, status: payment.status, amount_minor: payment.amountMinor, currency: payment.currency, customer_name: customer?.name ?? '', reference: payment.reference }),
  };
}

function tokensEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * A live collection rail's answer. accepted → the payer's page is recorded (the callback settles it);
 * settled / failed → the payment completes (wallet credited net of fee) or fails; no trustworthy
 * answer → stays pending and is requeried on the owner's clock; not_found → resubmitted (same reference).
 */
export function collectionAnswer(ctx: HandlerContext, cmd: Command & { k: 'rail.answer' }): Outcome {
  const payment = ctx.state.payments.get(cmd.id);
  const answer = cmd.answer;
  if (payment === undefined || answer === null || !isLiveOwner(payment.owner) || payment.method === 'wallet') return stale('no live collection by that reference');
  const customer = ctx.state.customers.get(payment.customerId)!;
  const txn = ctx.state.transactions.get(payment.transactionId)!;
  const again = (op: RailOp, dueAtMs?: number): Effect[] => effectsOf(collectionCall(ctx, payment, customer, txn.attempt, op, dueAtMs));
  const rail = again('requery')[0]?.call?.rail;
  if (cmd.connector !== undefined && rail !== cmd.connector) return stale('this collection is not served by that connector');
  const final = payment.status === 'completed' || payment.status === 'failed' ? payment.status : null;
  const contradicted = contradiction(ctx, cmd, { txn, kind: 'collection', entityId: payment.id, rail: rail ?? 'sandbox', recorded: recordedOutcome(cmd.attempt, txn.attempt, final) });
  if (contradicted !== null) return contradicted;
  if (txn.attempt !== cmd.attempt) return stale(`the answer is for attempt ${cmd.attempt}; the payment is on attempt ${txn.attempt}`);
  if (payment.status !== 'pending') return stale(`payment is ${payment.status}`);
  const asOwner = { owner: payment.owner, nowMs: ctx.nowMs, partition: cmd.partition, customerScope: null };
  const reply = (): ReturnType<typeof okReply> => okReply(200, { payment_id: payment.id });
  switch (answer.outcome) {
    case 'settled':
      return settlePayment(ctx, Object.assign({}, asOwner, { k: 'payment.settle' as const, id: payment.id, source: 'rail' as const, attempt: txn.attempt }));
    case 'failed':
      return failPayment(ctx, Object.assign({}, asOwner, { k: 'payment.fail' as const, id: payment.id, code: railFailureCode(answer.failureCode), source: 'rail' as const }));
    case 'terminal':
      if (cmd.phase !== 'submit') return { events: [], reply, effects: again('requery', ctx.nowMs + REQUERY_AFTER_MS) };
      return failPayment(ctx, Object.assign({}, asOwner, { k: 'payment.fail' as const, id: payment.id, code: 'PROVIDER_ERROR' as const, source: 'rail' as const }));
    case 'accepted': {
      const same = payment.rail?.providerReference === answer.providerReference && payment.rail?.payUrl === answer.checkoutUrl;
      return { events: same ? [] : [{ t: 'payment.rail', id: payment.id, providerReference: answer.providerReference, payUrl: answer.checkoutUrl, atMs: ctx.nowMs }], reply };
    }
    case 'unknown':
      return { events: [], reply, effects: again('requery', ctx.nowMs + REQUERY_AFTER_MS) };
    case 'not_found':
      return { events: [], reply, effects: again('submit') };
    case 'retryable':
      return { events: [], reply, effects: again(cmd.phase === 'requery' ? 'requery' : 'submit', ctx.nowMs + RAIL_RETRY_AFTER_MS) };
  }
}
