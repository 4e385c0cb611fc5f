// Command handlers for customers and wallets: create (with the home-currency wallet), read, update.
// Runs inside shard workers. Email and phone uniqueness is reserved by the front end before the
// command arrives (it spans partitions); the shard records what the front end reserved.
// Invariant: every customer has exactly one wallet per currency, its home currency's from creation.
import { reject } from '../../errors.ts';
import { findCountry } from '../../catalogue/countries.ts';
import type { Command } from '../protocol.ts';
import type { Customer } from '../state.ts';
import { walletOf } from '../state.ts';
import { customerJson, walletJson } from '../views.ts';
import { accessRejection, customerFor, isRejection, okJson, okReply, rejected, type HandlerContext, type Outcome } from '../lifecycle/context.ts';
import type { CustomerPatch } from '../events.ts';
import { openWallet } from '../lifecycle/wallets.ts';

export function createCustomer(ctx: HandlerContext, cmd: Command & { k: 'customer.create' }): Outcome {
  if (cmd.body.duplicate !== null) {
    return rejected(reject('DUPLICATE', `A customer with this ${cmd.body.duplicate} is already registered.`));
  }
  const country = findCountry(cmd.body.countryCode);
  if (country === undefined) return rejected(reject('VALIDATION', `country_code ${cmd.body.countryCode} is not served.`));
  const customer: Customer = {
    id: ctx.mintId(),
    owner: cmd.owner,
    name: cmd.body.name,
    email: cmd.body.email,
    phone: cmd.body.phone,
    countryCode: country.code,
    tier: 'tier_1',
    kycLevel: 0,
    pinHash: null,
    wallets: {},
    usageDay: 0,
    usageMinor: {},
    createdAtMs: ctx.nowMs,
    updatedAtMs: ctx.nowMs,
  };
  const wallet = openWallet(ctx, customer, country.currency_code);
  return {
    events: [
      { t: 'customer.created', customer },
      { t: 'wallet.opened', wallet },
    ],
    reply: (state) => okJson(201, customerJson(state.customers.get(customer.id)!)),
  };
}

export function getCustomer(ctx: HandlerContext, cmd: Command & { k: 'customer.get' }): Outcome {
  const customer = customerFor(ctx, cmd, cmd.id);
  if (isRejection(customer)) return rejected(customer);
  return { events: [], reply: () => okJson(200, customerJson(customer)) };
}

export function updateCustomer(ctx: HandlerContext, cmd: Command & { k: 'customer.update' }): Outcome {
  const customer = customerFor(ctx, cmd, cmd.id);
  if (isRejection(customer)) return rejected(customer);
  const patch: CustomerPatch = {};
  const p = cmd.patch;
  if (p.name !== undefined) patch.name = p.name;
  if (p.email !== undefined) patch.email = p.email;
  if (p.phone !== undefined) patch.phone = p.phone;
  if (p.pinHash !== undefined) patch.pinHash = p.pinHash;
  if (p.tier !== undefined) patch.tier = p.tier;
  if (p.kycLevel !== undefined) patch.kycLevel = p.kycLevel;
  return {
    events: [{ t: 'customer.updated', id: customer.id, patch, atMs: ctx.nowMs }],
    reply: (state) => okJson(200, customerJson(state.customers.get(customer.id)!)),
  };
}

/** Records a wrong transaction PIN (the front end decides locks from the recorded times). */
export function recordPinFailure(ctx: HandlerContext, cmd: Command & { k: 'customer.pin_failed' }): Outcome {
  const customer = customerFor(ctx, cmd, cmd.id);
  if (isRejection(customer)) return rejected(customer);
  return { events: [{ t: 'customer.pin_failed', id: customer.id, atMs: ctx.nowMs }], reply: () => okReply(200, { recorded: true }) };
}

export function getWallet(ctx: HandlerContext, cmd: Command & { k: 'wallet.get' }): Outcome {
  const wallet = walletOf(ctx.state, cmd.id);
  const denied = accessRejection(cmd, wallet, 'wallet');
  if (denied !== null || wallet === undefined) return rejected(denied ?? reject('NOT_FOUND', 'No such wallet.'));
  return { events: [], reply: () => okJson(200, walletJson(wallet)) };
}
