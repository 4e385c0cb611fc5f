// The handler kit, below every handler and the lifecycle rules: the outcome shape, effects (rail calls
// included), replies, ownership checks, tier limits, outbox events. Runs inside shard workers. Handlers
// only read state; they return events that apply() then performs. Imports no handler.
// Invariant: a rejected command returns no events, so it changes nothing.
import { reject, statusOf, type Rejection } from '../../errors.ts';
import { tierLimits } from '../../catalogue/limits.ts';
import type { WalEvent } from '../events.ts';
import type { RailCall, RailKind, RailOp } from '../../rails/rail.ts';
import type { RailScope } from '../../rails/coverage.ts';
import { isSimulated, railCall } from '../../rails/rails.ts';
import type { Command, ForwardMessage } from '../protocol.ts';
import type { Customer, EventType, OutboxEvent, Owner, PartitionState, StoredReply, Transaction } from '../state.ts';
import type { ReplyView } from '../../store/tiers.ts';

export const DAY_MS = 86_400_000;

/** Work for after the batch is durable: a command this shard sends itself later (a rail's answer). */
export interface Effect {
  afterMs: number;
  /** When set, the command waits until the owner's clock (wall time + sandbox offset) reaches this instead. */
  dueAtMs?: number;
  cmd: Command;
  /** A rail call (sandbox or connector, see rails.ts) whose answer is put into `cmd` (a `rail.answer`) and enqueued. */
  call?: RailCall;
  /** Set for a command to another partition whose answer must come back (see ForwardMessage). */
  replyTo?: ForwardMessage['replyTo'];
}

/**
 * The effect of one rail call for an entity's attempt, made after the batch that asked for it is durable
 * (the sandbox after its simulated latency); the answer comes back to this partition as a `rail.answer`.
 * Null when no rail serves it (live, no connector).
 */
export function railEffect(ctx: HandlerContext, route: { owner: Owner; kind: RailKind; scope: RailScope }, call: { id: string; attempt: number; op: RailOp; payload: Record<string, unknown>; dueAtMs?: number | undefined }): Effect | null {
  const planned = railCall(route, call);
  if (planned === null) return null;
  return {
    afterMs: isSimulated(planned.rail) ? ctx.railLatencyMs : 0,
    ...(call.dueAtMs === undefined ? {} : { dueAtMs: call.dueAtMs }),
    call: planned,
    cmd: { k: 'rail.answer', kind: route.kind, id: call.id, attempt: call.attempt, phase: call.op, answer: null, owner: route.owner, nowMs: ctx.nowMs, partition: ctx.state.partition },
  };
}

/** The effects of the calls that exist (a live rail with no connector left asks nothing). */
export function effectsOf(...effects: Array<Effect | null>): Effect[] {
  return effects.filter((e): e is Effect => e !== null);
}

export interface Outcome {
  events: WalEvent[];
  /** Builds the reply from the state after the events were applied. */
  reply: (state: PartitionState) => StoredReply;
  effects?: Effect[];
  /**
   * The reply is exactly this entity's view (okReply of reply().status): the log record stores the
   * reference, and replay and the log's readers rebuild the same bytes (see shard/reply-views.ts).
   */
  replyView?: ReplyView;
}

export interface HandlerContext {
  state: PartitionState;
  nowMs: number;
  mintId: () => string;
  railLatencyMs: number;
}

export function okReply(status: number, data: unknown): StoredReply {
  return { status, json: JSON.stringify({ data }) };
}

/** okReply of a view already written as JSON by its compiled serialiser (schemas/compile-serialiser.ts). */
export function okJson(status: number, dataJson: string): StoredReply {
  return { status, json: `{"data":${dataJson}}` };
}

export function errorReply(rejection: Rejection): StoredReply {
  return { status: statusOf(rejection), error: { code: rejection.code, message: rejection.message } };
}

export function rejected(rejection: Rejection): Outcome {
  return { events: [], reply: () => errorReply(rejection) };
}

export function envOf(owner: Owner): string {
  return owner.slice(0, owner.indexOf(':'));
}

/**
 * Checks that a resource is the caller's. Another environment's resource does not exist for the caller
 * (404: sandbox and live never mix); another account's, or another customer's for a customer-scoped
 * key, is 403 FORBIDDEN as the spec says for payments, transfers, transactions, wallets and customers.
 */
export function accessRejection(
  cmd: Pick<Command, 'owner' | 'customerScope'>,
  resource: { owner: Owner; customerId: string } | undefined,
  what: string,
): Rejection | null {
  if (resource === undefined || envOf(resource.owner) !== envOf(cmd.owner)) {
    return reject('NOT_FOUND', `No such ${what}.`);
  }
  if (resource.owner !== cmd.owner) return reject('FORBIDDEN', `This ${what} belongs to another account.`);
  if (cmd.customerScope != null && cmd.customerScope !== resource.customerId) {
    return reject('FORBIDDEN', `This key may not reach that ${what}.`);
  }
  return null;
}

export function customerFor(ctx: HandlerContext, cmd: Command, customerId: string): Customer | Rejection {
  const customer = ctx.state.customers.get(customerId);
  const denied = accessRejection(cmd, customer === undefined ? undefined : { owner: customer.owner, customerId: customer.id }, 'customer');
  if (denied !== null || customer === undefined) return denied ?? reject('NOT_FOUND', 'No such customer.');
  return customer;
}

export { isRejection } from '../../errors.ts';

/**
 * How long after a rail timeout it is asked again about the same purchase, on the owner's clock
 * (KOBO_REQUERY_AFTER_MS, default 5 minutes; set once per shard at start-up).
 */
export let REQUERY_AFTER_MS = 5 * 60_000;

export function setRequeryAfterMs(ms: number): void {
  REQUERY_AFTER_MS = ms;
}

/** A rail answer or follow-up that no longer applies (the entity moved on): refused, nothing changes. */
export function stale(why: string): Outcome {
  return rejected(reject('CONFLICT', why));
}

/** LIMIT_EXCEEDED when the amount passes the customer's per-transaction or daily tier limit. */
export function limitRejection(customer: Customer, currency: string, amountMinor: number, nowMs: number): Rejection | null {
  const limits = tierLimits(customer.tier, currency);
  if (limits === undefined) return reject('LIMIT_EXCEEDED', `No ${customer.tier} limits are configured for ${currency}.`);
  if (amountMinor > limits.perTransactionMaxMinor) {
    return reject('LIMIT_EXCEEDED', `amount_minor ${amountMinor} is above the ${customer.tier} per-transaction limit of ${limits.perTransactionMaxMinor} ${currency}.`);
  }
  const day = Math.floor(nowMs / DAY_MS);
  const used = customer.usageDay === day ? (customer.usageMinor[currency] ?? 0) : 0;
  if (used + amountMinor > limits.dailyMaxMinor) {
    return reject('LIMIT_EXCEEDED', `amount_minor ${amountMinor} would pass the ${customer.tier} daily limit of ${limits.dailyMaxMinor} ${currency} (used ${used}).`);
  }
  return null;
}

/**
 * event_type:transaction_id for a transaction's first attempt, event_type:transaction_id:N for attempt
 * N ≥ 2: unique per event, so a retried transfer that fails again is not dropped by a deduplicating receiver.
 */
export function eventKey(type: EventType, txn: Pick<Transaction, 'id' | 'attempt'>): string {
  return txn.attempt >= 2 ? `${type}:${txn.id}:${txn.attempt}` : `${type}:${txn.id}`;
}

/** The outbox record of a webhook event about `txn` (the spec's canonical payload, plus resource ids). */
export function outboxEvent(
  ctx: HandlerContext,
  type: EventType,
  txn: Pick<Transaction, 'id' | 'owner' | 'amountMinor' | 'currency' | 'customerId' | 'attempt'>,
  data: Record<string, unknown>,
): WalEvent {
  const event: OutboxEvent = {
    id: ctx.mintId(),
    owner: txn.owner,
    type,
    key: eventKey(type, txn),
    occurredAtMs: ctx.nowMs,
    data: { transaction_id: txn.id, amount_minor: txn.amountMinor, currency: txn.currency, customer_id: txn.customerId, ...data },
  };
  return { t: 'outbox.added', event };
}

export function usageEvent(customer: Customer, currency: string, deltaMinor: number, nowMs: number): WalEvent {
  return { t: 'customer.usage', id: customer.id, day: Math.floor(nowMs / DAY_MS), currency, deltaMinor };
}
