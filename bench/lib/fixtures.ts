// Builds partition states the way the live shard does: handlers produce the events, applyEvent applies them.
// Runs in the bench process only (micro and memory benches). Ids come from src/ids.ts mintId, strings
// are made per record as the front end makes them, and every event batch is serialised as the worker's
// flush serialises it for the WAL (JSON.stringify flattens minted ids), so the heap holds what a shard holds.
import { mintId } from '../../src/ids.ts';
import { systemAccountId } from '../../src/ledger/ledger.ts';
import { applyEvent, type WalEvent } from '../../src/shard/events.ts';
import type { HandlerContext } from '../../src/shard/lifecycle/context.ts';
import { createCustomer } from '../../src/shard/handlers/customers.ts';
import { openWallet } from '../../src/shard/lifecycle/wallets.ts';
import type { Command } from '../../src/shard/protocol.ts';
import type { Customer, PartitionState, Tier } from '../../src/shard/state.ts';

export const CURRENCY = 'NGN';
/** What each bench wallet is credited with at creation: far above what any bench debits. */
export const FUNDING_MINOR = 1_000_000_000;
const CLEARING = systemAccountId('collection_clearing', CURRENCY);

/** The WAL body the worker's flush builds for a command's events; its byte length is returned. */
export function walBody(events: readonly WalEvent[]): number {
  return JSON.stringify(events).length;
}

export function contextOf(state: PartitionState, nowMs: number): HandlerContext {
  return { state, nowMs, mintId: () => mintId(state.partition, nowMs), railLatencyMs: 20 };
}

/** The owner string as the front end builds it per request (`${env}:${account}`), not one shared literal. */
export function ownerOf(env: string, account: string): string {
  return `${env}:${account}`;
}

/** Applies the customer.created event of the create handler (its wallet.opened event is dropped). */
export function addCustomer(ctx: HandlerContext, options: { owner: string; seq: number; tier?: Tier }): Customer {
  const cmd: Command & { k: 'customer.create' } = {
    k: 'customer.create',
    owner: options.owner,
    nowMs: ctx.nowMs,
    partition: ctx.state.partition,
    body: {
      name: `Customer ${options.seq}`,
      email: `user-${options.seq}@example.com`,
      phone: `+23480${String(30_000_000 + options.seq).padStart(8, '0')}`,
      countryCode: 'NG',
      duplicate: null,
    },
  };
  const outcome = createCustomer(ctx, cmd);
  const created = outcome.events[0];
  if (created === undefined || created.t !== 'customer.created') throw new Error('fixtures: createCustomer did not create');
  applyEvent(ctx.state, created);
  walBody([created]);
  const customer = ctx.state.customers.get(created.customer.id)!;
  if (options.tier !== undefined) {
    const updated: WalEvent = { t: 'customer.updated', id: customer.id, patch: { tier: options.tier }, atMs: ctx.nowMs };
    applyEvent(ctx.state, updated);
    walBody([updated]);
  }
  return customer;
}

/** Opens the customer's NGN wallet and credits it from the collection clearing account (a settled funding). */
export function addFundedWallet(ctx: HandlerContext, customer: Customer, amountMinor = FUNDING_MINOR): string {
  const wallet = openWallet(ctx, customer, CURRENCY);
  const opened: WalEvent = { t: 'wallet.opened', wallet };
  const funded: WalEvent = {
    t: 'ledger',
    ops: [{ op: 'post', id: ctx.mintId(), txn: ctx.mintId(), dr: CLEARING, cr: wallet.id, amt: amountMinor, cur: CURRENCY }],
    atMs: ctx.nowMs,
  };
  applyEvent(ctx.state, opened);
  applyEvent(ctx.state, funded);
  walBody([opened, funded]);
  return wallet.id;
}
