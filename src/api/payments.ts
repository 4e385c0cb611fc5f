// Payment endpoints: selectable methods for a customer, create (bank_transfer collection or inline
// wallet debit), retrieve. Main thread; the shard decides selectability, limits and funds.
// Invariant: virtual_account is never selectable (422 METHOD_NOT_SELECTABLE).
import type { RouteDef } from '../http/types.ts';
import { Payment, PaymentCreate, PaymentMethods, PaymentMethodsQuery } from '../schemas/transaction.schema.ts';
import { type ApiDeps, command, currencyProblem, customerTarget, byIdHandler } from './deps.ts';

export function paymentRoutes(deps: ApiDeps): RouteDef[] {
  return [
    {
      method: 'GET',
      path: '/v1/payments/methods',
      summary: "Payment methods selectable for a customer's country, KYC level and coverage",
      auth: 'key',
      family: 'payments',
      query: PaymentMethodsQuery,
      response: PaymentMethods,
      errors: ['VALIDATION', 'NOT_FOUND', 'FORBIDDEN'],
      handle: (ctx) => {
        const target = customerTarget(ctx, ctx.query.get('customer_id') ?? undefined);
        if ('status' in target) return target;
        const { customerId, partition } = target;
        return command(deps, ctx, partition, { k: 'payment.methods', customerId });
      },
    },
    {
      method: 'POST',
      path: '/v1/payments',
      summary: 'Create a payment',
      auth: 'key',
      family: 'payments',
      idempotent: true,
      body: PaymentCreate,
      response: Payment,
      responseStatus: 201,
      errors: ['VALIDATION', 'METHOD_NOT_SELECTABLE', 'INSUFFICIENT_FUNDS', 'LIMIT_EXCEEDED', 'NOT_FOUND', 'FORBIDDEN', 'IDEMPOTENCY_KEY_REQUIRED', 'IDEMPOTENCY_REPLAY'],
      handle: (ctx) => {
        const body = ctx.body as PaymentCreate;
        const badCurrency = currencyProblem(body.currency);
        if (badCurrency !== null) return badCurrency;
        const target = customerTarget(ctx, body.customer_id);
        if ('status' in target) return target;
        const { customerId, partition } = target;
        return command(deps, ctx, partition, {
          k: 'payment.create',
          body: { customerId, amountMinor: body.amount_minor, currency: body.currency, method: body.method, reference: body.reference ?? null },
        }, { idempotent: true });
      },
    },
    {
      method: 'GET',
      path: '/v1/payments/:id',
      summary: 'Retrieve a payment',
      auth: 'key',
      family: 'payments',
      response: Payment,
      errors: ['VALIDATION', 'NOT_FOUND', 'FORBIDDEN'],
      handle: byIdHandler(deps, 'payment', (id) => ({ k: 'payment.get', id })),
    },
  ];
}
