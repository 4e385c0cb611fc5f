// The one rail interface: every external rail (collections, payouts, name resolution, service
// fulfilment, FX) is asked `submit` or `requery` about one reference and answers one of these.
// Any thread. The sandbox rail (sandbox-rail.ts) and operator connectors (src/connectors) implement it;
// rails.ts alone chooses which one serves an owner. Invariant: an answer is data; the shard applies
// it as a command after commit, never inline.

import type { FailureCode } from '../../machines/transaction.machine.ts';

export type RailKind = 'collection' | 'payout' | 'resolve' | 'fulfilment' | 'fx';
export type RailOp = 'submit' | 'requery';

export type RailAnswer =
  /** Taken; the outcome comes later (a callback, or a requery). May carry what the payer needs. */
  | { outcome: 'accepted'; providerReference: string | null; checkoutUrl: string | null; /** fulfilment: held for the operator's manual review */ manualReview?: boolean }
  /** Answered: done. `detail` is what the rail hands back (a token, a receipt). */
  | { outcome: 'settled'; providerReference: string | null; detail: Record<string, unknown> | null }
  /** Answered: refused, with the rail's failure code. */
  | { outcome: 'failed'; providerReference: string | null; failureCode: string; /** the rail's own words, recorded as the failure message */ message?: string }
  /** No answer we can trust (timeout, network, bad signature): the outcome is unknown; requery later. */
  | { outcome: 'unknown' }
  /** Requery only: the rail never saw this reference, so submitting it (same idempotency id) is safe. */
  | { outcome: 'not_found' }
  /** The rail is busy or broken (429, 5xx): ask again later with the same idempotency id. */
  | { outcome: 'retryable' }
  /** The rail refused the request itself (4xx): never resubmitted. */
  | { outcome: 'terminal'; message: string };

/** One request to a rail: `reference` is `<entity id>:<attempt>` (a lookup: `resolve-<uuid>`). */
export interface RailRequest {
  kind: RailKind;
  op: RailOp;
  reference: string;
  payload: Record<string, unknown>;
  /** The owner's clock when the request is made (the sandbox stamps deliveries with it). */
  atMs: number;
}

/** A rail: the sandbox simulator answers at once and purely; a connector answers over signed HTTP. */
export interface Rail {
  readonly name: string;
  call(request: RailRequest): RailAnswer | Promise<RailAnswer>;
}

/** What a handler asks for: a rail call made after commit, its answer fed back as a `rail.answer` command. */
export interface RailCall {
  /** `sandbox` or a connector's name (rails.ts chose it). */
  rail: string;
  kind: RailKind;
  op: RailOp;
  /** `<entity id>:<attempt>`: the rail's idempotency id for this attempt. */
  reference: string;
  payload: Record<string, unknown>;
}

/** Fulfilment failure codes with a meaning of their own (the order's spec states of the same name). */
export const FUNDING_FAILURE_CODE = 'provider_funding_failure';
export const RETRY_REQUIRED_CODE = 'retry_required';

/** How an entity and attempt are named to a rail: `<entity id>:<attempt>` (also the idempotency id). */
export function railReference(entityId: string, attempt: number): string {
  return `${entityId}:${attempt}`;
}

export function parseRailReference(reference: string): { entityId: string; attempt: number } | null {
  const match = /^([0-9A-HJKMNP-TV-Z]{26}):([1-9][0-9]{0,5})$/.exec(reference);
  return match === null ? null : { entityId: match[1]!, attempt: Number(match[2]) };
}

/** Failure codes a connector may report; anything else is recorded as PROVIDER_ERROR (retryable). */
const RAIL_FAILURE_CODES: readonly FailureCode[] = ['PROVIDER_ERROR', 'INTERNAL', 'RATE_LIMITED', 'COMPLIANCE_DENIED', 'INSUFFICIENT_FUNDS', 'LIMIT_EXCEEDED'];

export function railFailureCode(code: string): FailureCode {
  return (RAIL_FAILURE_CODES as readonly string[]).includes(code) ? (code as FailureCode) : 'PROVIDER_ERROR';
}

/** How long after a retryable answer (429/5xx) the same request is sent again, on the owner's clock. */
export const RAIL_RETRY_AFTER_MS = 5_000;

