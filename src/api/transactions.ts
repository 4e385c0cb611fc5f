// Transaction endpoints: create, retrieve, cancel, retry.
// Main thread; each becomes one command to the partition encoded in the customer or transaction id.
// Invariant: create and retry are idempotent (Idempotency-Key required); cancel is naturally single-shot.
import type { RouteDef } from '../http/types.ts';
import { Transaction, TransactionCreate } from '../schemas/transaction.schema.ts';
import { type ApiDeps, command, currencyProblem, customerTarget, byIdHandler } from './deps.ts';

function byId(deps: ApiDeps, k: 'txn.get' | 'txn.cancel' | 'txn.retry', idempotent: boolean): RouteDef['handle'] {
  return byIdHandler(deps, 'transaction', (id) => ({ k, id }), { idempotent });
}

export function transactionRoutes(deps: ApiDeps): RouteDef[] {
  return [
    {
      method: 'POST',
      path: '/v1/transactions',
      summary: 'Create a transaction (recorded pending)',
      auth: 'key',
      family: 'transactions',
      idempotent: true,
      body: TransactionCreate,
      response: Transaction,
      responseStatus: 201,
      errors: ['VALIDATION', 'LIMIT_EXCEEDED', 'NOT_FOUND', 'FORBIDDEN', 'IDEMPOTENCY_KEY_REQUIRED', 'IDEMPOTENCY_REPLAY'],
      handle: (ctx) => {
        const body = ctx.body as TransactionCreate;
        const badCurrency = currencyProblem(body.currency);
        if (badCurrency !== null) return badCurrency;
        const target = customerTarget(ctx, body.customer_id);
        if ('status' in target) return target;
        const { customerId, partition } = target;
        return command(deps, ctx, partition, {
          k: 'txn.create',
          body: { type: body.type, customerId, amountMinor: body.amount_minor, currency: body.currency, reference: body.reference ?? null },
        }, { idempotent: true });
      },
    },
    {
      method: 'GET',
      path: '/v1/transactions/:id',
      summary: 'Retrieve a transaction with failure, hold and status history',
      auth: 'key',
      family: 'transactions',
      response: Transaction,
      errors: ['VALIDATION', 'NOT_FOUND', 'FORBIDDEN'],
      handle: byId(deps, 'txn.get', false),
    },
    {
      method: 'POST',
      path: '/v1/transactions/:id/cancel',
      summary: 'Cancel a pending transaction (releases any hold)',
      auth: 'key',
      family: 'transactions',
      response: Transaction,
      keyedInShard: true,
      errors: ['NOT_FOUND', 'CONFLICT', 'FORBIDDEN', 'IDEMPOTENCY_REPLAY'],
      handle: byId(deps, 'txn.cancel', true),
    },
    {
      method: 'POST',
      path: '/v1/transactions/:id/retry',
      summary: 'Retry a transaction that failed with PROVIDER_ERROR, INTERNAL or RATE_LIMITED',
      auth: 'key',
      family: 'transactions',
      idempotent: true,
      response: Transaction,
      errors: ['NOT_FOUND', 'CONFLICT', 'LIMIT_EXCEEDED', 'FORBIDDEN', 'IDEMPOTENCY_KEY_REQUIRED', 'IDEMPOTENCY_REPLAY'],
      handle: byId(deps, 'txn.retry', true),
    },
  ];
}
