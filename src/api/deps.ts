// What API modules share: the shard pool, the front end's indexes, the control store, the clocks,
// and the one helper that turns a request into a (possibly idempotent) shard command.
// Main thread. Routing uses the partition encoded in ids, so no lookup precedes a command.
// Invariant: an idempotent command carries scope and fingerprint, and runs through the index.
import { isRejection, reject, statusOf, type Rejection } from '../errors.ts';
import { partitionOfId } from '../ids.ts';
import { PARTITIONS } from '../config.ts';
import { isCurrencyCode } from '../catalogue/currencies.ts';
import type { ShardPool } from '../shard/pool.ts';
import type { CommandBody } from '../shard/protocol.ts';
import type { ControlStore } from '../store/control-store.ts';
import { FOREIGN_REPLAY, storedForAnotherCustomer, type IdempotencyIndex } from '../http/idempotency.ts';
import { FrontIdempotencyStore } from '../http/idempotency-store.ts';
import type { Reply, RequestContext } from '../http/types.ts';
import type { CustomerIndex } from './customer-index.ts';
import type { SandboxClocks } from './clocks.ts';
import type { PinPolicy } from './pin-check.ts';
import type { WalletViews } from './wallet-views.ts';
import type { FxTrust } from './live-fx.ts';

export interface ApiDeps {
  pool: ShardPool;
  idempotency: IdempotencyIndex;
  customers: CustomerIndex;
  control: ControlStore;
  clocks: SandboxClocks;
  /** Wrong-PIN lock (src/api/pin-check.ts); the defaults when absent. */
  pinPolicy?: PinPolicy;
  /** Views of wallets changed since start (src/api/wallet-views.ts); every wallet read asks its shard when absent. */
  walletViews?: WalletViews;
  /** How live FX rates are checked before they price anything (src/api/live-fx.ts). */
  fx: FxTrust;
}

export function errorOf(rejection: Rejection): Reply {
  return { status: statusOf(rejection), error: { code: rejection.code, message: rejection.message } };
}

/** The partition of a resource id, or NOT_FOUND when the id cannot name anything we minted. */
export function partitionOf(id: string, what: string): number | Rejection {
  const partition = partitionOfId(id);
  if (partition < 0) return reject('VALIDATION', `${what} id ${JSON.stringify(id)} is not a ULID.`);
  if (partition >= PARTITIONS) return reject('NOT_FOUND', `No such ${what}.`);
  return partition;
}

/**
 * The customer a request acts for: `customer_id` from the body or query, or the key's own customer for
 * a customer-scoped key (which may name no other customer: 403).
 */
export function actingCustomer(ctx: RequestContext, named: string | undefined): string | Rejection {
  const scoped = ctx.key?.customerId ?? null;
  if (scoped !== null) {
    if (named !== undefined && named !== scoped) return reject('FORBIDDEN', 'This key acts for one customer only.');
    return scoped;
  }
  if (named === undefined) return reject('VALIDATION', 'customer_id is required.');
  return named;
}

/** The acting customer and the partition its commands go to, or the error reply refusing the request. */
export function customerTarget(ctx: RequestContext, named: string | undefined): { customerId: string; partition: number } | Reply {
  const customerId = actingCustomer(ctx, named);
  if (isRejection(customerId)) return errorOf(customerId);
  const partition = partitionOf(customerId, 'customer');
  if (isRejection(partition)) return errorOf(partition);
  return { customerId, partition };
}

/** 400 VALIDATION for the first code that is not an ISO 4217 currency (the schema checks only its shape). */
export function currencyProblem(...codes: string[]): Reply | null {
  const bad = codes.find((code) => !isCurrencyCode(code));
  return bad === undefined ? null : errorOf(reject('VALIDATION', `currency ${bad} is not an ISO 4217 code.`));
}

export function fingerprintOf(ctx: RequestContext): string {
  return FrontIdempotencyStore.fingerprint(ctx.method, ctx.path, ctx.rawBody);
}

export async function command(deps: ApiDeps, ctx: RequestContext, partition: number, body: CommandBody, options: { idempotent?: boolean } = {}): Promise<Reply> {
  const base = { owner: ctx.owner, nowMs: ctx.nowMs, customerScope: ctx.key?.customerId ?? null };
  // Object.assign, not `{ ...base, partition, ...body }`: a spread followed by more properties takes a
  // slow path in this V8 (~2 µs a command, measured), on every request.
  if (options.idempotent !== true || ctx.idempotencyKey === null) return deps.pool.send(Object.assign({}, base, { partition }, body));
  const idem = { scope: `${ctx.owner}:${ctx.idempotencyKey}`, fingerprint: fingerprintOf(ctx) };
  return deps.idempotency.run(idem.scope, partition, async (target, seq, h) => {
    if (seq === null) return deps.pool.send(Object.assign({}, base, { partition: target }, body, { idem: { scope: idem.scope, fingerprint: idem.fingerprint, h } }));
    const replayed = await deps.pool.send(Object.assign({}, base, { partition: target, k: 'idem.replay' as const, idem: { scope: idem.scope, fingerprint: idem.fingerprint, seq } }));
    return base.customerScope !== null && storedForAnotherCustomer(replayed.json, base.customerScope) ? FOREIGN_REPLAY : replayed;
  });
}

/** A GET-style handler for `/…/:id`: route the id to its partition and send the command built from it. */
export function byIdHandler(deps: ApiDeps, what: string, build: (id: string) => CommandBody, options: { idempotent?: boolean } = {}): (ctx: RequestContext) => Promise<Reply> | Reply {
  return (ctx) => {
    const id = ctx.params.id ?? '';
    const partition = partitionOf(id, what);
    if (isRejection(partition)) return errorOf(partition);
    return command(deps, ctx, partition, build(id), options);
  };
}

export { isRejection } from '../errors.ts';
