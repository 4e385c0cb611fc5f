// Beneficiary and transfer endpoints. Main thread. A transfer from a customer with a PIN needs
// X-Transaction-Authorization: the front end reads the PIN hash from the customer's shard and checks
// it with scrypt off the event loop before the money-moving command is sent.
// Invariant: no transfer command reaches a shard without the customer's PIN when one is set.
import { reject } from '../errors.ts';
import type { Reply, RequestContext, RouteDef } from '../http/types.ts';
import { Beneficiary, BeneficiaryCreate, Transfer, TransferCreate } from '../schemas/transfer.schema.ts';
import { type ApiDeps, command, currencyProblem, customerTarget, errorOf, isRejection, partitionOf, byIdHandler } from './deps.ts';
import { pinCheck } from './pin-check.ts';
import { randomUUID } from 'node:crypto';
import { isLiveOwner } from '../rails/coverage.ts';
import { lookUp } from '../rails/rails.ts';

export { pinCheck } from './pin-check.ts';

/**
 * A wallet beneficiary names another customer's wallet (its id as account_number). Its holder is looked
 * up in the wallet's own partition; an unknown wallet, another account's or another currency's → null
 * (the shard then answers VERIFICATION_FAILED, stored like any result).
 */
async function resolveWalletHolder(deps: ApiDeps, ctx: RequestContext, walletId: string, currency: string): Promise<string | null | Reply> {
  const partition = partitionOf(walletId, 'wallet');
  if (isRejection(partition)) return partition.code === 'VALIDATION' ? errorOf(reject('VALIDATION', 'account_number of a wallet beneficiary is the wallet id.')) : null;
  const reply = await deps.pool.send({ k: 'wallet.resolve', id: walletId, owner: ctx.owner, nowMs: ctx.nowMs, partition, customerScope: null });
  if (reply.json === undefined) return reply.status >= 500 ? reply : null;
  const data = (JSON.parse(reply.json) as { data: { currency: string; name: string } }).data;
  return data.currency === currency ? data.name : null;
}

/**
 * A live bank or mobile-money account is resolved by the connector serving its payout before the shard
 * is asked, like a wallet holder: its name, or null with the rail's reason when it says the account does
 * not exist. No connector → null (the shard refuses). A rail that does not answer → 502 PROVIDER_FAILURE
 * (retry). The sandbox rail answers at once, inside the shard.
 */
async function resolveOnRail(deps: ApiDeps, ctx: RequestContext, body: BeneficiaryCreate): Promise<{ name: string | null; problem?: string } | Reply> {
  const country = body.country ?? (await customerCountry(deps, ctx, body.customer_id));
  if (typeof country !== 'string') return country;
  const account = { type: body.type, country, currency: body.currency, bank_code: body.bank_code ?? null, account_number: body.account_number };
  const answer = await lookUp(ctx.owner, 'resolve', { method: body.type, country, currency: body.currency }, `resolve-${randomUUID()}`, { account }, ctx.nowMs);
  if (answer === null) return { name: null };
  if (answer.outcome === 'settled' && typeof answer.detail?.account_name === 'string' && answer.detail.account_name !== '') return { name: answer.detail.account_name.slice(0, 128) };
  if (answer.outcome === 'failed') return { name: null, ...(answer.message === undefined ? {} : { problem: answer.message }) };
  if (answer.outcome === 'settled' || answer.outcome === 'terminal' || answer.outcome === 'not_found') return { name: null };
  return errorOf(reject('PROVIDER_FAILURE', 'The account-name rail did not answer; retry with the same Idempotency-Key.'));
}

export async function customerCountry(deps: ApiDeps, ctx: RequestContext, named: string | undefined): Promise<string | Reply> {
  const target = customerTarget(ctx, named);
  if ('status' in target) return target;
  const reply = await command(deps, ctx, target.partition, { k: 'customer.get', id: target.customerId });
  if (reply.json === undefined) return reply;
  return (JSON.parse(reply.json) as { data: { country_code: string } }).data.country_code;
}

function byId(deps: ApiDeps, k: 'beneficiary.get' | 'transfer.get', what: string): RouteDef['handle'] {
  return byIdHandler(deps, what, (id) => ({ k, id }));
}

export function transferRoutes(deps: ApiDeps): RouteDef[] {
  return [
    {
      method: 'POST',
      path: '/v1/beneficiaries',
      summary: 'Create a beneficiary; the rail resolves and verifies the account name',
      auth: 'key',
      family: 'beneficiaries',
      idempotent: true,
      body: BeneficiaryCreate,
      response: Beneficiary,
      responseStatus: 201,
      errors: ['VALIDATION', 'VERIFICATION_FAILED', 'NOT_FOUND', 'FORBIDDEN', 'IDEMPOTENCY_KEY_REQUIRED', 'IDEMPOTENCY_REPLAY'],
      handle: async (ctx) => {
        const body = ctx.body as BeneficiaryCreate;
        const badCurrency = currencyProblem(body.currency);
        if (badCurrency !== null) return badCurrency;
        if (body.account_number === undefined) return errorOf(reject('VALIDATION', `account_number is required for ${body.type}.`));
        if (body.type === 'bank_account' && body.bank_code === undefined) return errorOf(reject('VALIDATION', 'bank_code is required for bank_account.'));
        const target = customerTarget(ctx, body.customer_id);
        if ('status' in target) return target;
        const { customerId, partition } = target;
        const resolved = body.type === 'wallet'
          ? await resolveWalletHolder(deps, ctx, body.account_number, body.currency)
          : isLiveOwner(ctx.owner) ? await resolveOnRail(deps, ctx, body) : null;
        if (resolved !== null && typeof resolved !== 'string' && 'status' in resolved) return resolved;
        const resolvedName = resolved === null || typeof resolved === 'string' ? resolved : resolved.name;
        const resolveProblem = resolved !== null && typeof resolved !== 'string' ? resolved.problem : undefined;
        return command(deps, ctx, partition, {
          k: 'beneficiary.create',
          body: { customerId, type: body.type, bankCode: body.bank_code ?? null, accountNumber: body.account_number, currency: body.currency, country: body.country ?? null, resolvedName, ...(resolveProblem === undefined ? {} : { resolveProblem }) },
        }, { idempotent: true });
      },
    },
    {
      method: 'GET',
      path: '/v1/beneficiaries/:id',
      summary: 'Retrieve a beneficiary',
      auth: 'key',
      family: 'beneficiaries',
      response: Beneficiary,
      errors: ['VALIDATION', 'NOT_FOUND', 'FORBIDDEN'],
      handle: byId(deps, 'beneficiary.get', 'beneficiary'),
    },
    {
      method: 'POST',
      path: '/v1/transfers',
      summary: 'Send a payout: amount plus fee held now, settled by the payout rail',
      auth: 'key',
      family: 'transfers',
      idempotent: true,
      body: TransferCreate,
      response: Transfer,
      responseStatus: 201,
      errors: ['VALIDATION', 'PIN_REQUIRED', 'PIN_LOCKED', 'COMPLIANCE_DENIED', 'LIMIT_EXCEEDED', 'INSUFFICIENT_FUNDS', 'FX_QUOTE_UNAVAILABLE', 'CONFLICT', 'NOT_FOUND', 'FORBIDDEN', 'IDEMPOTENCY_KEY_REQUIRED', 'IDEMPOTENCY_REPLAY'],
      handle: async (ctx) => {
        const body = ctx.body as TransferCreate;
        const badCurrency = currencyProblem(body.currency);
        if (badCurrency !== null) return badCurrency;
        const target = customerTarget(ctx, body.customer_id);
        if ('status' in target) return target;
        const { customerId, partition } = target;
        const pin = await pinCheck(deps, ctx, customerId, partition);
        if (pin !== null) return pin;
        return command(deps, ctx, partition, {
          k: 'transfer.create',
          body: { customerId, beneficiaryId: body.beneficiary_id, amountMinor: body.amount_minor, currency: body.currency, narration: body.narration ?? null, quoteId: body.quote_id ?? null },
        }, { idempotent: true });
      },
    },
    {
      method: 'GET',
      path: '/v1/transfers/:id',
      summary: 'Retrieve a transfer (failure and hold detail on its transaction)',
      auth: 'key',
      family: 'transfers',
      response: Transfer,
      errors: ['VALIDATION', 'NOT_FOUND', 'FORBIDDEN'],
      handle: byId(deps, 'transfer.get', 'transfer'),
    },
  ];
}
