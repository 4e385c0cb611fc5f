// Command handlers for beneficiaries: create (bank account and mobile-money numbers resolved on the
// payout rail, wallets by the front end), read, and the reads transfers need from another partition
// (a wallet's holder, a customer's PIN hash). Runs inside shard workers.
// Invariant: a beneficiary is created only once its account name is resolved.
import { reject } from '../../errors.ts';
import { findCountry } from '../../catalogue/countries.ts';
import { accountNumberValid, destinationName } from '../../catalogue/payouts.ts';
import { answerAtOnce, railFor } from '../../rails/rails.ts';
import type { Command } from '../protocol.ts';
import { walletOf, type Beneficiary } from '../state.ts';
import { accessRejection, customerFor, isRejection, okReply, rejected, type HandlerContext, type Outcome } from '../lifecycle/context.ts';
import { iso } from '../views.ts';
import { payoutRailRejection } from '../lifecycle/rail-requests.ts';

export function beneficiaryView(b: Beneficiary): object {
  return {
    id: b.id,
    object: 'beneficiary',
    customer_id: b.customerId,
    type: b.type,
    currency: b.currency,
    country: b.country,
    bank_code: b.bankCode,
    bank_name: b.bankName,
    account_number: b.accountNumber,
    account_name: b.accountName,
    verified: true,
    created_at: iso(b.createdAtMs),
  };
}

export function customerSecret(ctx: HandlerContext, cmd: Command & { k: 'customer.secret' }): Outcome {
  const customer = customerFor(ctx, cmd, cmd.id);
  if (isRejection(customer)) return rejected(customer);
  return { events: [], reply: () => okReply(200, { pin_hash: customer.pinHash, pin_failures_at_ms: customer.pinFailuresAtMs ?? [] }) };
}

export function createBeneficiary(ctx: HandlerContext, cmd: Command & { k: 'beneficiary.create' }): Outcome {
  const b = cmd.body;
  const customer = customerFor(ctx, cmd, b.customerId);
  if (isRejection(customer)) return rejected(customer);
  const country = b.country ?? customer.countryCode;
  if (findCountry(country)?.payments_enabled !== true) return rejected(reject('VALIDATION', `Payouts to ${country} are not offered.`));
  let bankName: string | null = null;
  if (b.type === 'wallet') return createWalletBeneficiary(ctx, cmd, customer.id, country);
  if (b.bankCode === null) return rejected(reject('VALIDATION', `bank_code is required for ${b.type}.`));
  bankName = destinationName(b.type, country, b.bankCode) ?? null;
  if (bankName === null) return rejected(reject('VALIDATION', `bank_code ${b.bankCode} is not a ${b.type === 'bank_account' ? 'bank' : 'mobile-money operator'} in ${country}.`));
  if (b.type === 'bank_account' && !accountNumberValid(country, b.accountNumber)) {
    return rejected(reject('VALIDATION', `account_number is not a valid ${country} account number.`));
  }
  if (b.type === 'mobile_money' && !/^\+[1-9][0-9]{7,14}$/.test(b.accountNumber)) {
    return rejected(reject('VALIDATION', 'account_number of a mobile_money beneficiary is the E.164 phone number.'));
  }
  const noRail = payoutRailRejection(cmd.owner, b.type, country, b.currency);
  if (noRail !== null) return rejected(noRail);
  // A live connector resolved the name at the front end (null: it could not); the sandbox rail answers here.
  const account = { type: b.type, country, currency: b.currency, bank_code: b.bankCode, account_number: b.accountNumber };
  const inline = b.resolvedName === null ? answerAtOnce({ rail: railFor(cmd.owner, 'resolve', { method: b.type, country, currency: b.currency }) ?? '', kind: 'resolve', op: 'submit', reference: `resolve-${customer.id}`, payload: { account } }, ctx.nowMs) : null;
  const accountName = inline?.outcome === 'settled' && typeof inline.detail?.account_name === 'string' ? inline.detail.account_name : b.resolvedName;
  if (accountName === null) {
    const problem = inline?.outcome === 'failed' ? inline.message : b.resolveProblem;
    return rejected(reject('VERIFICATION_FAILED', problem ?? 'The payout rail could not verify this account.'));
  }
  const beneficiary: Beneficiary = {
    id: ctx.mintId(),
    owner: cmd.owner,
    customerId: customer.id,
    type: b.type,
    currency: b.currency,
    country,
    bankCode: b.bankCode,
    bankName,
    accountNumber: b.accountNumber,
    accountName,
    createdAtMs: ctx.nowMs,
  };
  return { events: [{ t: 'beneficiary.created', beneficiary }], reply: (state) => okReply(201, beneficiaryView(state.beneficiaries.get(beneficiary.id)!)) };
}

/** A wallet beneficiary is another customer's wallet of the same account; the front end resolved it. */
function createWalletBeneficiary(ctx: HandlerContext, cmd: Command & { k: 'beneficiary.create' }, customerId: string, country: string): Outcome {
  const b = cmd.body;
  if (b.resolvedName === null) return rejected(reject('VERIFICATION_FAILED', 'No wallet of this account has that id and currency.'));
  if (ctx.state.customers.get(customerId)?.wallets[b.currency] === b.accountNumber) {
    return rejected(reject('VALIDATION', 'A customer cannot add its own wallet as a beneficiary.'));
  }
  const beneficiary: Beneficiary = {
    id: ctx.mintId(),
    owner: cmd.owner,
    customerId,
    type: 'wallet',
    currency: b.currency,
    country,
    bankCode: null,
    bankName: null,
    accountNumber: b.accountNumber,
    accountName: b.resolvedName,
    createdAtMs: ctx.nowMs,
  };
  return { events: [{ t: 'beneficiary.created', beneficiary }], reply: (state) => okReply(201, beneficiaryView(state.beneficiaries.get(beneficiary.id)!)) };
}

/** Answers the front end's lookup of a wallet (for a wallet beneficiary): holder name and currency. */
export function resolveWallet(ctx: HandlerContext, cmd: Command & { k: 'wallet.resolve' }): Outcome {
  const wallet = walletOf(ctx.state, cmd.id);
  if (wallet === undefined || wallet.owner !== cmd.owner) return rejected(reject('NOT_FOUND', 'No such wallet.'));
  const holder = ctx.state.customers.get(wallet.customerId);
  return { events: [], reply: () => okReply(200, { wallet_id: wallet.id, customer_id: wallet.customerId, currency: wallet.currency, name: holder?.name ?? '' }) };
}

export function getBeneficiary(ctx: HandlerContext, cmd: Command & { k: 'beneficiary.get' }): Outcome {
  const beneficiary = ctx.state.beneficiaries.get(cmd.id);
  const denied = accessRejection(cmd, beneficiary, 'beneficiary');
  if (denied !== null || beneficiary === undefined) return rejected(denied ?? reject('NOT_FOUND', 'No such beneficiary.'));
  return { events: [], reply: () => okReply(200, beneficiaryView(beneficiary)) };
}
