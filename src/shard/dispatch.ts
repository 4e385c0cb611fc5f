// Executes one command against a partition: idempotency check, handler, apply, stored reply.
// Runs inside shard workers (and micro-benchmarks). The idempotency record is an event of the same
// WAL record as the effect it guards, so both are durable together or not at all.
// Invariant: a command either applies all its events or none (a failed assertion stops the shard).
import type { Effect, HandlerContext, Outcome } from './lifecycle/context.ts';
import { errorReply } from './lifecycle/context.ts';
import { reject } from '../errors.ts';
import { DamagedRowError, DATA_DAMAGED_MESSAGE, reportDamage } from '../store/row-checks.ts';
import { applyEvent, type WalEvent } from './events.ts';
import './reply-views.ts'; // registers the rebuilder of replies that log records name by view
import type { Command } from './protocol.ts';
import { isStoredResult, type IdempotencyRecord, type PartitionState, type StoredReply } from './state.ts';
import { createCustomer, getCustomer, getWallet, recordPinFailure, updateCustomer } from './handlers/customers.ts';
import { cancelTransaction, createTransaction, getTransaction, retryTransaction } from './handlers/transactions.ts';
import { createQuote, executeExchange } from './handlers/exchange.ts';
import { createServiceQuote } from './handlers/service-quotes.ts';
import { createOrder, getOrder, openOrder } from './handlers/orders.ts';
import { orderPaid, refundOrder, resolveOrder, retryOrder } from './handlers/fulfilment.ts';
import { ackOutbox, createTransfer, creditInbound, creditOutcome, getTransfer, submitTransfer } from './handlers/transfers.ts';
import { createBeneficiary, customerSecret, getBeneficiary, resolveWallet } from './handlers/beneficiaries.ts';
import { railAnswered } from './rail-answers.ts';
import { resolveReconciliation } from './lifecycle/reconcile.ts';
import { checkoutPayment, createPayment, expirePayments, failPayment, getPayment, listMethods, settlePayment, submitPayment } from './handlers/payments.ts';
import { sameRequest } from '../idempotency-fingerprint.ts';

/**
 * Forgets records older than their owner's cutoff (each owner has its own sandbox clock). The event
 * carries the cutoffs, not the scopes: the records live in the shard file, and one event stays small.
 */
function expireIdempotency(cmd: Command & { k: 'idem.expire' }): Outcome {
  return { events: [{ t: 'idem.expired', cutoffMs: cmd.cutoffMs, defaultCutoffMs: cmd.defaultCutoffMs }], reply: () => ({ status: 200, json: '{"data":{}}' }) };
}

/** Unused quotes past their expiry on their owner's clock leave the heap. */
function expireQuotes(ctx: HandlerContext, cmd: Command & { k: 'quotes.expire' }): Outcome {
  const due = (q: { owner: string; usedBy: string | null; expiresAtMs: number; expired?: true }): boolean =>
    q.usedBy === null && q.expired !== true && q.expiresAtMs < (cmd.cutoffMs[q.owner] ?? cmd.defaultCutoffMs);
  const fx = [...ctx.state.quotes.values()].filter(due).map((q) => q.id);
  const service = [...ctx.state.serviceQuotes.values()].filter(due).map((q) => q.id);
  const events: WalEvent[] = fx.length + service.length === 0 ? [] : [{ t: 'quotes.expired', fx, service }];
  return { events, reply: () => ({ status: 200, json: JSON.stringify({ data: { expired: fx.length + service.length } }) }) };
}

function decide(ctx: HandlerContext, cmd: Command): Outcome {
  switch (cmd.k) {
    case 'customer.create': return createCustomer(ctx, cmd);
    case 'customer.get': return getCustomer(ctx, cmd);
    case 'customer.update': return updateCustomer(ctx, cmd);
    case 'wallet.get': return getWallet(ctx, cmd);
    case 'txn.create': return createTransaction(ctx, cmd);
    case 'txn.get': return getTransaction(ctx, cmd);
    case 'txn.cancel': return cancelTransaction(ctx, cmd);
    case 'txn.retry': return retryTransaction(ctx, cmd);
    case 'payment.methods': return listMethods(ctx, cmd);
    case 'payment.create': return createPayment(ctx, cmd);
    case 'payment.get': return getPayment(ctx, cmd);
    case 'payment.settle': return settlePayment(ctx, cmd);
    case 'payment.fail': return failPayment(ctx, cmd);
    case 'payment.submit': return submitPayment(ctx, cmd);
    case 'payment.checkout': return checkoutPayment(ctx, cmd);
    case 'fx.quote': return createQuote(ctx, cmd);
    case 'fx.execute': return executeExchange(ctx, cmd);
    case 'customer.secret': return customerSecret(ctx, cmd);
    case 'customer.pin_failed': return recordPinFailure(ctx, cmd);
    case 'beneficiary.create': return createBeneficiary(ctx, cmd);
    case 'beneficiary.get': return getBeneficiary(ctx, cmd);
    case 'transfer.create': return createTransfer(ctx, cmd);
    case 'transfer.get': return getTransfer(ctx, cmd);
    case 'transfer.submit': return submitTransfer(ctx, cmd);
    case 'wallet.resolve': return resolveWallet(ctx, cmd);
    case 'transfer.credit': return creditInbound(ctx, cmd);
    case 'transfer.credited': return creditOutcome(ctx, cmd);
    case 'outbox.ack': return ackOutbox(ctx, cmd);
    case 'squote.create': return createServiceQuote(ctx, cmd);
    case 'order.create': return createOrder(ctx, cmd);
    case 'order.get': return getOrder(ctx, cmd);
    case 'order.open': return openOrder(ctx, cmd);
    case 'order.paid': return orderPaid(ctx, cmd);
    case 'order.retry': return retryOrder(ctx, cmd);
    case 'order.refund': return refundOrder(ctx, cmd);
    case 'order.resolve': return resolveOrder(ctx, cmd);
    case 'txn.reconcile': return resolveReconciliation(ctx, cmd);
    case 'idem.expire': return expireIdempotency(cmd);
    case 'quotes.expire': return expireQuotes(ctx, cmd);
    case 'payments.expire': return expirePayments(ctx, cmd);
    case 'rail.answer': return railAnswered(ctx, cmd);
    case 'idem.replay':
      // The front end's index (keyed by a hash of the scope) placed the key here, but no record has
      // this exact scope: a hash collision. Never stored; the front end runs the request afresh.
      return { events: [], reply: () => ({ status: 500, miss: true, error: { code: 'INTERNAL', message: 'Idempotency record not found where the index placed it.' } }) };
    default: {
      const never: never = cmd;
      throw new Error(`dispatch: unknown command ${JSON.stringify(never)}`);
    }
  }
}

export interface Executed {
  reply: StoredReply;
  events: WalEvent[];
  effects: Effect[];
  /** The reply was stored under the command's Idempotency-Key (at the LSN of this command's record). */
  stored?: true;
}

function storedReply(record: StoredReply): StoredReply {
  return record.error === undefined ? { status: record.status, json: record.json! } : { status: record.status, error: record.error };
}

/**
 * The answer to a command that met a damaged row (see row-checks.ts): a 500 the front end passes on as
 * is, saying the data is damaged, with nothing changed; the row itself goes to the log at fatal.
 */
function damaged(cmd: Command, error: DamagedRowError): Executed {
  reportDamage(error, { command: cmd.k, partition: cmd.partition });
  return { reply: { status: 500, error: { code: 'DATA_DAMAGED', message: DATA_DAMAGED_MESSAGE } }, events: [], effects: [] };
}

export function execute(ctx: HandlerContext, cmd: Command): Executed {
  const state: PartitionState = ctx.state;
  if (cmd.idem !== undefined) {
    let record: IdempotencyRecord | undefined;
    try {
      record = cmd.idem.seq === undefined ? state.idempotency.get(cmd.idem.scope) : state.idempotency.getAt(cmd.idem.scope, cmd.idem.seq);
    } catch (error) {
      if (error instanceof DamagedRowError) return damaged(cmd, error);
      throw error;
    }
    if (record !== undefined) {
      const reply = sameRequest(record.fingerprint, cmd.idem.fingerprint)
        ? storedReply(record)
        : errorReply(reject('IDEMPOTENCY_REPLAY', 'This Idempotency-Key was used with a different request; retries must repeat the key and body exactly.'));
      return { reply, events: [], effects: [] };
    }
  }
  let outcome: Outcome;
  try {
    outcome = decide(ctx, cmd);
  } catch (error) {
    if (error instanceof DamagedRowError) return damaged(cmd, error);
    // Handlers only read state, so a throw here changed nothing: answer 500 rather than take the
    // shard (and every partition on it) down. A throw while *applying* events still stops the shard.
    // The detail goes to the log (stderr) only; the front end answers the client a generic 500.
    console.error(`shard: command ${cmd.k} failed: ${(error as Error).stack ?? String(error)}`);
    return { reply: { status: 500, error: { code: 'INTERNAL', message: 'The command failed.' } }, events: [], effects: [] };
  }
  for (const event of outcome.events) applyEvent(state, event);
  const reply = outcome.reply(state);
  const events = outcome.events;
  if (cmd.idem !== undefined && isStoredResult(reply.status)) {
    // The record, with the reply it replays, is part of the command's log record (compressed with the
    // batch); its idempotency row is derived from it after the fsync.
    // Object.assign rather than a spread followed by fields (a slow path in this V8): this runs per keyed command.
    const record: IdempotencyRecord = Object.assign({}, reply, { scope: cmd.idem.scope, fingerprint: cmd.idem.fingerprint, atMs: ctx.nowMs });
    if (cmd.idem.h !== undefined) record.h = cmd.idem.h;
    state.idempotency.set(record);
    // A reply that is one entity's view is named, not copied: the record then carries the entity once.
    const logged: IdempotencyRecord = outcome.replyView === undefined
      ? Object.assign({}, reply, { scope: record.scope, fingerprint: record.fingerprint, atMs: record.atMs })
      : { status: reply.status, scope: record.scope, fingerprint: record.fingerprint, atMs: record.atMs, view: outcome.replyView };
    events.push({ t: 'idem.stored', record: logged });
    return { reply, events, effects: outcome.effects ?? [], stored: true };
  }
  return { reply, events, effects: outcome.effects ?? [] };
}
