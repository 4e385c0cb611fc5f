// The one place that chooses a rail: the sandbox rail for `test:` owners, the operator's connector
// covering the rail for `live:` owners, none otherwise. Handlers and the front end ask here and never
// import a simulator. Any thread (each sets the live rails it can call at start-up).
// Invariant: a live owner is never served by the sandbox rail; no connector means "not offered".
import { isLiveOwner, liveConnectorFor, type RailScope } from './coverage.ts';
import type { Rail, RailAnswer, RailCall, RailKind, RailOp, RailRequest } from './rail.ts';
import { railReference } from './rail.ts';
import { SANDBOX_RAIL, SANDBOX_SCREENED, sandboxDelivery, sandboxOpening, sandboxRail, type SandboxOpening } from './sandbox-rail.ts';

export { SANDBOX_RAIL };

/** The rail serving `owner` for this kind and scope(s): `sandbox`, a connector's name, or null. */
export function railFor(owner: string, kind: RailKind, ...scopes: RailScope[]): string | null {
  if (!isLiveOwner(owner)) return SANDBOX_RAIL;
  return liveConnectorFor(kind, ...scopes)?.name ?? null;
}

/** A rail call for an entity's attempt, to run after commit (null when no rail serves it). */
export function railCall(route: { owner: string; kind: RailKind; scope: RailScope }, call: { id: string; attempt: number; op: RailOp; payload: Record<string, unknown> }): RailCall | null {
  const rail = railFor(route.owner, route.kind, route.scope);
  if (rail === null) return null;
  return { rail, kind: route.kind, op: call.op, reference: railReference(call.id, call.attempt), payload: call.payload };
}

/**
 * How long after commit a call starts: the sandbox simulates a provider's latency, a connector has its
 * own. The sandbox keeps no memory of requests, so on recovery asking it again is submitting again
 * (the same answer); a connector is requeried.
 */
export function isSimulated(rail: string): boolean {
  return rail === SANDBOX_RAIL;
}

export function resumeOp(rail: string): RailOp {
  return isSimulated(rail) ? 'submit' : 'requery';
}

/** Sandbox screening by magic amounts (never live: screening live money is the operator's rail's job). */
export function screenedBySandbox(owner: string, what: 'transfer' | 'order', amountMinor: number): boolean {
  if (isLiveOwner(owner)) return false;
  return amountMinor === (what === 'transfer' ? SANDBOX_SCREENED.transferAmountMinor : SANDBOX_SCREENED.orderProviderCostMinor);
}

/**
 * What a collection offers the payer when it is created. The sandbox collection rail answers its submit
 * at once (pure): bank-transfer instructions or a hosted checkout token, recorded with the payment. A
 * connector is asked after commit (null here; see railCall).
 */
export function collectionOpening(owner: string, input: Parameters<typeof sandboxOpening>[0]): SandboxOpening | null {
  return isLiveOwner(owner) ? null : sandboxOpening(input);
}

/**
 * What an order an operator resolved as delivered hands the customer: in the sandbox, what its rail
 * would have delivered; live, null (the operator's word, not a token of kobo's making).
 */
export function operatorDelivery(owner: string, input: Parameters<typeof sandboxDelivery>[0]): Record<string, unknown> | null {
  return isLiveOwner(owner) ? null : sandboxDelivery(input);
}

// ---------------------------------------------------------------------------------------------------
// The rails this thread can call: the sandbox, and the connectors set at start-up.

const rails = new Map<string, Rail>([[SANDBOX_RAIL, sandboxRail]]);

export function setLiveRails(list: readonly Rail[]): void {
  for (const name of [...rails.keys()]) if (name !== SANDBOX_RAIL) rails.delete(name);
  for (const rail of list) rails.set(rail.name, rail);
}

export function railNamed(name: string): Rail | undefined {
  return rails.get(name);
}

/** Makes one call now (an effect after commit, or a lookup that moves no money); a rail gone is `unknown`. */
export function callRail(call: Pick<RailCall, 'rail' | 'kind' | 'op' | 'reference' | 'payload'>, atMs: number): RailAnswer | Promise<RailAnswer> {
  const rail = rails.get(call.rail);
  if (rail === undefined) return { outcome: 'unknown' };
  const request: RailRequest = { kind: call.kind, op: call.op, reference: call.reference, payload: call.payload, atMs };
  return rail.call(request);
}

/**
 * The answer of a rail that answers at once without I/O (the sandbox simulator), or null for a rail
 * that must be called as an effect (a connector). Pure: the shard may take it inline.
 */
export function answerAtOnce(call: Pick<RailCall, 'rail' | 'kind' | 'op' | 'reference' | 'payload'>, atMs: number): RailAnswer | null {
  if (!isSimulated(call.rail)) return null;
  return sandboxRail.call({ kind: call.kind, op: call.op, reference: call.reference, payload: call.payload, atMs });
}

/**
 * A lookup that moves no money (an account name, a service recipient, an FX rate), asked before any
 * command: null when no rail serves the owner for it.
 */
export async function lookUp(owner: string, kind: 'resolve' | 'fx', scope: RailScope | RailScope[], reference: string, payload: Record<string, unknown>, atMs: number): Promise<RailAnswer | null> {
  const rail = railFor(owner, kind, ...(Array.isArray(scope) ? scope : [scope]));
  if (rail === null) return null;
  return callRail({ rail, kind, op: 'submit', reference, payload }, atMs);
}
