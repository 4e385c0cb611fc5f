// Contradicting rail outcomes: a rail reports settled for an attempt kobo recorded failed (or failed for
// one it recorded completed). The transaction is marked for reconciliation, which refuses retry until an
// operator decides which outcome stands. Runs inside shard workers; pure.
// Invariant: a contradiction is never dropped and never applied: money moves only on the operator's word.
import { reject } from '../../errors.ts';
import type { RailAnswer } from '../../rails/rail.ts';
import type { Command } from '../protocol.ts';
import type { FinalOutcome, Reconciliation, Transaction } from '../state.ts';
import { okReply, rejected, type HandlerContext, type Outcome } from './context.ts';

/** The final outcome an answer reports, or null for one that reports none (accepted, unknown, …). */
export function reportedOutcome(answer: RailAnswer): FinalOutcome | null {
  if (answer.outcome === 'settled') return 'completed';
  if (answer.outcome === 'failed') return 'failed';
  return null;
}

/** What kobo recorded for the answered attempt: earlier attempts all failed (only a failure is retried). */
export function recordedOutcome(answeredAttempt: number, currentAttempt: number, currentOutcome: FinalOutcome | null): FinalOutcome | null {
  if (answeredAttempt < currentAttempt) return 'failed';
  return answeredAttempt === currentAttempt ? currentOutcome : null;
}

export interface Answered {
  /** The transaction that is the ledger truth of the entity answered for. */
  txn: Transaction;
  kind: Reconciliation['kind'];
  entityId: string;
  /** The rail that answered (a connector's name, or `sandbox`). */
  rail: string;
  recorded: FinalOutcome | null;
}

/** The status a signed callback is acknowledged with when nothing was applied (`applied: false`). */
const NOT_APPLIED_STATUS = 202;

/**
 * The outcome of an answer that contradicts what kobo recorded: the transaction marked (once per
 * attempt and outcome reported), nothing else changed, no further requery. Null when the answer does
 * not contradict (the caller applies it, or finds it stale, as before).
 */
export function contradiction(ctx: HandlerContext, cmd: Command & { k: 'rail.answer' }, answered: Answered): Outcome | null {
  const answer = cmd.answer;
  const reported = answer === null ? null : reportedOutcome(answer);
  if (answer === null || reported === null || answered.recorded === null || reported === answered.recorded) return null;
  const known = answered.txn.reconciliation;
  const reply = (): ReturnType<typeof okReply> => okReply(NOT_APPLIED_STATUS, { transaction_id: answered.txn.id, reconciliation: 'required' });
  // Told again (or another contradiction while one is open): the transaction is marked and blocked
  // already, and the operator asks the provider about the whole of it. One resolved reopens on news.
  const same = known !== undefined && known.kind === answered.kind && known.entityId === answered.entityId && known.attempt === cmd.attempt && known.reported === reported;
  if (known !== undefined && (known.status === 'required' || same)) return { events: [], reply };
  const reconciliation: Reconciliation = {
    status: 'required',
    recorded: answered.recorded,
    reported,
    kind: answered.kind,
    entityId: answered.entityId,
    attempt: cmd.attempt,
    rail: cmd.connector ?? answered.rail,
    providerReference: 'providerReference' in answer ? answer.providerReference : null,
    failureCode: answer.outcome === 'failed' ? answer.failureCode : null,
    reportedAtMs: ctx.nowMs,
  };
  return { events: [{ t: 'txn.reconciliation', id: answered.txn.id, reconciliation, atMs: ctx.nowMs }], reply };
}

/** 409 for a retry of a transaction a rail contradicted: open, or resolved as the rail reported. */
export function reconciliationBlocksRetry(txn: Transaction): ReturnType<typeof reject> | null {
  const r = txn.reconciliation;
  if (r === undefined || (r.status === 'resolved' && r.resolution === 'recorded')) return null;
  if (r.status === 'required') {
    return reject('CONFLICT', `This transaction awaits reconciliation: its rail reported ${r.reported} after it was recorded ${r.recorded}. It cannot be retried until an operator resolves it.`);
  }
  return reject('CONFLICT', `An operator confirmed the rail's outcome (${r.reported}) for this transaction: it cannot be retried.`);
}

/** An operator's decision (kobo reconcile resolve): which outcome stands. Moves no money. */
export function resolveReconciliation(ctx: HandlerContext, cmd: Command & { k: 'txn.reconcile' }): Outcome {
  const txn = ctx.state.transactions.get(cmd.id);
  if (txn === undefined) return rejected(reject('NOT_FOUND', 'No such transaction.'));
  const r = txn.reconciliation;
  if (r?.status !== 'required') return rejected(reject('CONFLICT', 'This transaction does not await reconciliation.'));
  const resolved: Reconciliation = Object.assign({}, r, { status: 'resolved' as const, resolution: cmd.outcome, resolvedAtMs: ctx.nowMs }, cmd.note === null ? {} : { note: cmd.note });
  return { events: [{ t: 'txn.reconciliation', id: txn.id, reconciliation: resolved, atMs: ctx.nowMs }], reply: () => okReply(200, { transaction_id: txn.id, resolution: cmd.outcome }) };
}
