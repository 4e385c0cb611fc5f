// Command handlers for transfers (payouts; beneficiaries are in beneficiaries.ts): create with a two-phase
// hold of amount + fee, submit to the payout rail, settle (post), fail (void), time out (unknown) and reconcile.
// Runs inside shard workers; rail answers arrive as commands after the simulated latency.
// Invariant: a pending or processing transfer has exactly amount + fee held; unknown is never resubmitted.
import assert from 'node:assert/strict';
import { reject, type Rejection } from '../../errors.ts';
import { payoutFeeMinor } from '../../catalogue/payouts.ts';
import { costInSourceMinor } from '../../catalogue/fx.ts';
import { parseRate, type Rate } from '../../money/convert.ts';
import { canDebit, systemAccountId, type LedgerOp } from '../../ledger/ledger.ts';
import { screenedBySandbox } from '../../rails/rails.ts';
import { isLiveOwner } from '../../rails/coverage.ts';
import { railFailureCode, RAIL_RETRY_AFTER_MS } from '../../rails/rail.ts';
import type { WalEvent } from '../events.ts';
import type { Command } from '../protocol.ts';
import { walletOf, type Beneficiary, type Transaction, type Transfer } from '../state.ts';
import { effectsOf, accessRejection, customerFor, isRejection, limitRejection, okJson, okReply, outboxEvent, rejected, REQUERY_AFTER_MS, stale, usageEvent, type Effect, type HandlerContext, type Outcome } from '../lifecycle/context.ts';
import { after, failEvents, holdOp, moveTransaction, moveTransfer, newTransaction, releaseUsage, transferHandles, transitAccount } from '../lifecycle/lifecycle.ts';
import { payoutCall, payoutRailRejection } from '../lifecycle/rail-requests.ts';
import { contradiction, recordedOutcome } from '../lifecycle/reconcile.ts';
import { creditEffect } from '../lifecycle/wallets.ts';
import { compileView } from '../../schemas/compile-serialiser.ts';
import { Transfer as TransferSchema } from '../../schemas/transfer.schema.ts';

const transferCompiled = compileView<Transfer>('transfer', TransferSchema, {
  id: (t) => t.id,
  transaction_id: (t) => t.transactionId,
  status: (t) => t.status,
  customer_id: (t) => t.customerId,
  beneficiary_id: (t) => t.beneficiaryId,
  amount_minor: (t) => t.amountMinor,
  fee_minor: (t) => t.feeMinor,
  currency: (t) => t.currency,
  destination_amount_minor: (t) => t.destinationAmountMinor,
  destination_currency: (t) => t.destinationCurrency,
  quote_id: (t) => t.quoteId,
  narration: (t) => t.narration,
  provider_reference: (t) => t.providerReference,
  created_at: { ms: (t) => t.createdAtMs },
  updated_at: { ms: (t) => t.updatedAtMs },
});
/** A transfer as the API shows it; `transferJson` writes the same JSON without building it. */
export const transferView = transferCompiled.view;
export const transferJson = transferCompiled.json;

function transferRejection(ctx: HandlerContext, cmd: Command & { k: 'transfer.create' }): Rejection | { beneficiary: Beneficiary; fee: number; destinationAmountMinor: number; destinationCurrency: string } {
  const b = cmd.body;
  const beneficiary = ctx.state.beneficiaries.get(b.beneficiaryId);
  if (beneficiary === undefined || beneficiary.owner !== cmd.owner || beneficiary.customerId !== b.customerId) {
    return reject('VALIDATION', 'beneficiary_id does not name a verified beneficiary of this customer.');
  }
  // A sandbox magic value: live screening belongs to the operator's rail, never to an amount.
  if (screenedBySandbox(cmd.owner, 'transfer', b.amountMinor)) return reject('COMPLIANCE_DENIED', 'Screening blocked this transfer; do not retry.', 422);
  const noRail = payoutRailRejection(cmd.owner, beneficiary.type, beneficiary.country, beneficiary.currency);
  if (noRail !== null) return noRail;
  if (beneficiary.type === 'wallet' && (beneficiary.currency !== b.currency || b.quoteId !== null)) {
    return reject('VALIDATION', 'A wallet transfer is in the wallet’s own currency, without a quote.');
  }
  if (beneficiary.currency === b.currency) {
    const fee = payoutFeeMinor(beneficiary.type, b.currency, b.amountMinor);
    if (fee === undefined) return reject('VALIDATION', `${beneficiary.type} payouts in ${b.currency} are not offered.`);
    if (b.quoteId !== null) return reject('VALIDATION', 'quote_id is only for cross-border transfers.');
    return { beneficiary, fee, destinationAmountMinor: b.amountMinor, destinationCurrency: b.currency };
  }
  if (payoutFeeMinor(beneficiary.type, beneficiary.currency, 1) === undefined) {
    return reject('VALIDATION', `${beneficiary.type} payouts in ${beneficiary.currency} are not offered.`);
  }
  if (b.quoteId === null) return reject('FX_QUOTE_UNAVAILABLE', `The beneficiary is paid in ${beneficiary.currency}: send a live quote_id for ${b.currency} → ${beneficiary.currency}.`);
  const quote = ctx.state.quotes.get(b.quoteId);
  if (quote === undefined || quote.owner !== cmd.owner || quote.customerId !== b.customerId) return reject('VALIDATION', 'quote_id does not name a quote of this customer.');
  if (quote.usedBy !== null || ctx.nowMs >= quote.expiresAtMs) return reject('CONFLICT', 'The quote has expired or was used; request a new quote.');
  if (quote.fromCurrency !== b.currency || quote.toCurrency !== beneficiary.currency || quote.fromAmountMinor !== b.amountMinor) {
    return reject('VALIDATION', 'The quote does not match this transfer’s currencies and amount.');
  }
  // Live money is priced at the live quote's mid rate (its FX connector's), never at the reference table's.
  const liveMid = isLiveOwner(cmd.owner) ? parseRate(quote.midRate) : undefined;
  const fee = crossBorderFeeMinor(beneficiary, quote.toAmountMinor, b.currency, liveMid === undefined ? undefined : { num: liveMid.den, den: liveMid.num });
  return { beneficiary, fee, destinationAmountMinor: quote.toAmountMinor, destinationCurrency: quote.toCurrency };
}

/**
 * A cross-border payout runs on the destination's rail, so its fee is priced there: the rail's fee in
 * the beneficiary's currency on the amount delivered, converted into the transfer's currency at mid
 * plus spread, rounded up (the house never pays a rail fee it was not paid for). Held with the amount.
 */
function crossBorderFeeMinor(beneficiary: Beneficiary, destinationAmountMinor: number, sourceCurrency: string, mid?: Rate): number {
  const railFee = payoutFeeMinor(beneficiary.type, beneficiary.currency, destinationAmountMinor);
  assert(railFee !== undefined, 'transfers: the rail currency was checked to have a fee');
  return railFee === 0 ? 0 : costInSourceMinor(railFee, beneficiary.currency, sourceCurrency, mid).amountMinor;
}

export function createTransfer(ctx: HandlerContext, cmd: Command & { k: 'transfer.create' }): Outcome {
  const b = cmd.body;
  const customer = customerFor(ctx, cmd, b.customerId);
  if (isRejection(customer)) return rejected(customer);
  const checked = transferRejection(ctx, cmd);
  if (isRejection(checked)) return rejected(checked);
  // LIMIT_EXCEEDED is decided before INSUFFICIENT_FUNDS, everywhere.
  const over = limitRejection(customer, b.currency, b.amountMinor, ctx.nowMs);
  if (over !== null) return rejected(over);
  const walletId = customer.wallets[b.currency];
  const wallet = walletId === undefined ? undefined : walletOf(ctx.state, walletId);
  if (wallet === undefined || !canDebit(wallet, b.amountMinor + checked.fee)) {
    return rejected(reject('INSUFFICIENT_FUNDS', `The ${b.currency} wallet cannot cover ${b.amountMinor} plus the ${checked.fee} fee.`));
  }
  const transferId = ctx.mintId();
  const txn = newTransaction(ctx, {
    owner: cmd.owner,
    customerId: customer.id,
    type: 'transfer',
    amountMinor: b.amountMinor,
    feeMinor: checked.fee,
    currency: b.currency,
    reference: b.narration,
    paymentId: null,
    transferId,
  });
  const hold = holdOp(ctx, txn.id, { amountMinor: b.amountMinor, feeMinor: checked.fee, currency: b.currency }, wallet.id, checked.beneficiary.type);
  const held: Transaction = Object.assign({}, txn, { holdId: hold.id, holdStatus: 'held' as const });
  const transfer: Transfer = {
    id: transferId,
    owner: cmd.owner,
    customerId: customer.id,
    beneficiaryId: checked.beneficiary.id,
    transactionId: txn.id,
    status: 'pending',
    amountMinor: b.amountMinor,
    feeMinor: checked.fee,
    currency: b.currency,
    narration: b.narration,
    quoteId: b.quoteId,
    destinationAmountMinor: checked.destinationAmountMinor,
    destinationCurrency: checked.destinationCurrency,
    providerReference: null,
    createdAtMs: ctx.nowMs,
    updatedAtMs: ctx.nowMs,
  };
  return {
    events: [
      { t: 'txn.created', txn: held },
      { t: 'ledger', ops: [hold], atMs: ctx.nowMs },
      { t: 'transfer.created', transfer },
      usageEvent(customer, b.currency, b.amountMinor, ctx.nowMs),
    ],
    reply: (state) => okJson(201, transferJson(state.transfers.get(transferId)!)),
    effects: [after(ctx, cmd, { k: 'transfer.submit', id: transferId }, ctx.railLatencyMs)],
  };
}

export function getTransfer(ctx: HandlerContext, cmd: Command & { k: 'transfer.get' }): Outcome {
  const transfer = ctx.state.transfers.get(cmd.id);
  const denied = accessRejection(cmd, transfer, 'transfer');
  if (denied !== null || transfer === undefined) return rejected(denied ?? reject('NOT_FOUND', 'No such transfer.'));
  return { events: [], reply: () => okJson(200, transferJson(transfer)) };
}

function internal(ctx: HandlerContext, id: string): { transfer: Transfer; txn: Transaction } | null {
  const transfer = ctx.state.transfers.get(id);
  if (transfer === undefined) return null;
  return { transfer, txn: ctx.state.transactions.get(transfer.transactionId)! };
}

/** Submits a pending transfer to the payout rail; the rail's answer comes back as `transfer.rail`. */
export function submitTransfer(ctx: HandlerContext, cmd: Command & { k: 'transfer.submit' }): Outcome {
  const found = internal(ctx, cmd.id);
  if (found === null || !transferHandles(found.transfer, 'submit')) return stale('transfer is not pending');
  const { transfer, txn } = found;
  const beneficiary = ctx.state.beneficiaries.get(transfer.beneficiaryId)!;
  if (payoutRailRejection(transfer.owner, beneficiary.type, beneficiary.country, beneficiary.currency) !== null) {
    // A live payout no rail serves (made before its connector went away): released, never simulated.
    const failed = failEvents(ctx, txn, { code: 'PROVIDER_ERROR', stage: 'payout', message: 'No live payout rail serves this beneficiary.' }, 'fail');
    assert(failed !== null, 'transfers: a pending transaction accepts fail');
    return { events: failed, reply: () => okReply(200, {}) };
  }
  const reference = `PAYOUT-${transfer.id.slice(-12)}-${txn.attempt}`;
  const events = [moveTransaction(txn, { type: 'submit', atMs: ctx.nowMs }), moveTransfer(transfer, { type: 'submit', atMs: ctx.nowMs }, reference)];
  assert(events[0] !== null && events[1] !== null, 'transfers: a pending transfer accepts submit');
  const effect = beneficiary.type === 'wallet' ? creditEffect(ctx, cmd, transfer, beneficiary) : payoutCall(ctx, transfer, txn.attempt, 'submit');
  assert(effect !== null, 'transfers: a payout rail was checked to serve this beneficiary');
  return { events: events as WalEvent[], reply: () => okReply(200, {}), effects: [effect] };
}

/** The receiving partition's side: post partition clearing → wallet once per transfer id. */
export function creditInbound(ctx: HandlerContext, cmd: Command & { k: 'transfer.credit' }): Outcome {
  if (ctx.state.inboundCredits.has(cmd.transferId)) return { events: [], reply: () => okReply(200, { transfer_id: cmd.transferId, credited: true }) };
  const wallet = walletOf(ctx.state, cmd.walletId);
  if (wallet === undefined || wallet.owner !== cmd.owner || wallet.currency !== cmd.currency) {
    return rejected(reject('NOT_FOUND', 'The receiving wallet does not exist in that currency.'));
  }
  const txn = newTransaction(ctx, {
    owner: cmd.owner,
    customerId: wallet.customerId,
    type: 'transfer',
    amountMinor: cmd.amountMinor,
    feeMinor: 0,
    currency: cmd.currency,
    reference: `incoming ${cmd.transferId}`,
    paymentId: null,
  });
  const settled = moveTransaction(txn, { type: 'settle', atMs: ctx.nowMs });
  assert(settled !== null, 'transfers: a new transaction accepts settle');
  const credit = { transferId: cmd.transferId, walletId: wallet.id, transactionId: txn.id, amountMinor: cmd.amountMinor, currency: cmd.currency, atMs: ctx.nowMs };
  return {
    events: [
      { t: 'txn.created', txn },
      { t: 'ledger', atMs: ctx.nowMs, ops: [{ op: 'post', id: ctx.mintId(), txn: txn.id, dr: systemAccountId('partition_clearing', cmd.currency), cr: wallet.id, amt: cmd.amountMinor, cur: cmd.currency }] },
      settled,
      { t: 'transfer.credited_in', credit },
    ],
    reply: () => okReply(200, { transfer_id: cmd.transferId, credited: true }),
  };
}

/** The sending partition learns the credit's outcome: post the hold (completed) or void it (failed). */
export function creditOutcome(ctx: HandlerContext, cmd: Command & { k: 'transfer.credited' }): Outcome {
  const found = internal(ctx, cmd.id);
  if (found === null || !transferHandles(found.transfer, 'settle')) return stale('transfer is not awaiting its credit');
  const reply = (): ReturnType<typeof okReply> => okReply(200, {});
  if (cmd.outcome === 'credited') return { events: settleEvents(ctx, found.transfer, found.txn, false), reply };
  const events = failEvents(ctx, found.txn, { code: 'PROVIDER_ERROR', stage: 'payout', message: 'The receiving wallet could not be credited.' }, 'fail');
  assert(events !== null, 'transfers: a processing transaction accepts fail');
  return { events, reply };
}

function settleEvents(ctx: HandlerContext, transfer: Transfer, txn: Transaction, viaReconcile: boolean): WalEvent[] {
  assert(txn.holdId !== null, 'transfers: a processing transfer has a hold');
  const ops: LedgerOp[] = [{ op: 'commit', id: txn.holdId }];
  if (transfer.feeMinor > 0) {
    ops.push({ op: 'post', id: ctx.mintId(), txn: txn.id, dr: transitAccount(ctx.state.beneficiaries.get(transfer.beneficiaryId)?.type ?? 'bank_account', transfer.currency), cr: systemAccountId('fees', transfer.currency), amt: transfer.feeMinor, cur: transfer.currency });
  }
  const event = viaReconcile ? ({ type: 'reconcile', atMs: ctx.nowMs, outcome: 'completed' } as const) : ({ type: 'settle', atMs: ctx.nowMs } as const);
  const moved = moveTransaction(txn, event, { holdStatus: 'posted' });
  const transferMoved = moveTransfer(transfer, event);
  assert(moved !== null && transferMoved !== null, 'transfers: settle must be accepted');
  return [{ t: 'ledger', ops, atMs: ctx.nowMs }, moved, transferMoved, outboxEvent(ctx, 'transfer.completed', txn, { status: 'completed', transfer_id: transfer.id })];
}

/** The dispatcher has stored these outbox events durably: drop them from the shard's outbox. */
export function ackOutbox(ctx: HandlerContext, cmd: Command & { k: 'outbox.ack' }): Outcome {
  const ids = cmd.ids.filter((id) => ctx.state.outbox.has(id));
  return { events: ids.length === 0 ? [] : [{ t: 'outbox.handed', ids }], reply: () => okReply(200, { handed: ids.length }) };
}

/** An unknown payout the rail reports failed after all: the hold is voided and the money stays home. */
function reconciledFailedEvents(ctx: HandlerContext, transfer: Transfer, txn: Transaction, code: string): WalEvent[] {
  const failure = { code: railFailureCode(code), stage: 'payout' as const, message: 'The payout rail reported the payout failed on requery.' };
  const event = { type: 'reconcile', atMs: ctx.nowMs, outcome: 'failed' } as const;
  const moved = moveTransaction(txn, event, { failure, holdStatus: 'released' });
  const transferMoved = moveTransfer(transfer, event);
  assert(moved !== null && transferMoved !== null && txn.holdId !== null, 'transfers: unknown accepts reconcile failed');
  return [
    { t: 'ledger', ops: [{ op: 'void', id: txn.holdId }], atMs: ctx.nowMs },
    moved,
    transferMoved,
    ...releaseUsage(ctx, txn),
    outboxEvent(ctx, 'transfer.failed', txn, { status: 'failed', transfer_id: transfer.id, failure: { code: failure.code, stage: failure.stage } }),
  ];
}

/**
 * A payout rail's answer (sandbox, connector response or callback). settled → completed (hold posted); failed →
 * failed (hold voided); no trustworthy answer → unknown, requeried on the owner's clock; accepted →
 * waits for the callback (with a requery as the safety net); not_found on requery → resubmitted with
 * the same reference; retryable → the same request again later.
 */
export function payoutAnswer(ctx: HandlerContext, cmd: Command & { k: 'rail.answer' }): Outcome {
  const found = internal(ctx, cmd.id);
  const answer = cmd.answer;
  if (found === null || answer === null) return stale('no payout by that reference');
  const { transfer, txn } = found;
  const call = payoutCall(ctx, transfer, txn.attempt, 'requery');
  if (cmd.connector !== undefined && call?.call?.rail !== cmd.connector) return stale('this payout is not served by that connector');
  const final = transfer.status === 'completed' || transfer.status === 'failed' ? transfer.status : null;
  const contradicted = contradiction(ctx, cmd, { txn, kind: 'payout', entityId: transfer.id, rail: call?.call?.rail ?? 'sandbox', recorded: recordedOutcome(cmd.attempt, txn.attempt, final) });
  if (contradicted !== null) return contradicted;
  if (txn.attempt !== cmd.attempt) return stale(`the answer is for attempt ${cmd.attempt}; the transfer is on attempt ${txn.attempt}`);
  const status = transfer.status;
  // A rail's answer applies while the payout waits for it (processing) or for reconciliation (unknown).
  const unknown = transferHandles(transfer, 'reconcile');
  if (!unknown && !transferHandles(transfer, 'settle')) return stale(`transfer is ${status}`);
  const reply = (): ReturnType<typeof okReply> => okReply(200, { transfer_id: transfer.id, status });
  const requeryAt = (atMs: number): Effect[] => effectsOf(payoutCall(ctx, transfer, txn.attempt, 'requery', atMs));
  switch (answer.outcome) {
    case 'settled':
      return { events: settleEvents(ctx, transfer, txn, unknown), reply };
    case 'failed': {
      if (unknown) return { events: reconciledFailedEvents(ctx, transfer, txn, answer.failureCode), reply };
      const events = failEvents(ctx, txn, { code: railFailureCode(answer.failureCode), stage: 'payout', message: answer.message ?? `The payout rail failed the payout (${answer.failureCode}).` }, 'fail');
      assert(events !== null, 'transfers: a processing transaction accepts fail');
      return { events, reply };
    }
    case 'terminal': {
      // The rail refused the request itself: at submit the payout never started, so it fails; a
      // refused requery leaves the outcome unknown and is asked again later.
      if (cmd.phase !== 'submit' || unknown) return { events: [], reply, effects: requeryAt(ctx.nowMs + REQUERY_AFTER_MS) };
      const events = failEvents(ctx, txn, { code: 'PROVIDER_ERROR', stage: 'payout', message: 'The payout rail refused the request.' }, 'fail');
      assert(events !== null, 'transfers: a processing transaction accepts fail');
      return { events, reply };
    }
    case 'unknown': {
      if (unknown) return { events: [], reply, effects: requeryAt(ctx.nowMs + REQUERY_AFTER_MS) };
      const moved = moveTransaction(txn, { type: 'timeout', atMs: ctx.nowMs });
      const transferMoved = moveTransfer(transfer, { type: 'timeout', atMs: ctx.nowMs });
      assert(moved !== null && transferMoved !== null, 'transfers: processing accepts timeout');
      return { events: [moved, transferMoved], reply, effects: requeryAt(ctx.nowMs + REQUERY_AFTER_MS) };
    }
    case 'accepted':
      return { events: [], reply, effects: cmd.phase === 'callback' ? [] : requeryAt(ctx.nowMs + REQUERY_AFTER_MS) };
    case 'not_found':
      return { events: [], reply, effects: effectsOf(payoutCall(ctx, transfer, txn.attempt, 'submit')) };
    case 'retryable':
      return { events: [], reply, effects: effectsOf(payoutCall(ctx, transfer, txn.attempt, cmd.phase === 'requery' ? 'requery' : 'submit', ctx.nowMs + RAIL_RETRY_AFTER_MS)) };
  }
}
