// Payment endpoints: selectable methods for a customer, create (bank_transfer collection or inline
// wallet debit), retrieve. Main thread; the shard decides selectability, limits and funds.
// Invariant: virtual_account is never selectable (422 METHOD_NOT_SELECTABLE).
import { isCurrencyCode } from '../catalogue/currencies.ts';
import { reject } from '../errors.ts';
import type { RouteDef } from '../http/types.ts';
import { Payment, PaymentCreate, PaymentMethods, PaymentMethodsQuery } from '../schemas/transaction.schema.ts';
import { actingCustomer, command, errorOf, isRejection, partitionOf, type ApiDeps } from './deps.ts';

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
        const customerId = actingCustomer(ctx, ctx.query.get('customer_id') ?? undefined);
        if (isRejection(customerId)) return errorOf(customerId);
        const partition = partitionOf(customerId, 'customer');
        if (isRejection(partition)) return errorOf(partition);
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
        if (!isCurrencyCode(body.currency)) return errorOf(reject('VALIDATION', `currency ${body.currency} is not an ISO 4217 code.`));
        const customerId = actingCustomer(ctx, body.customer_id);
        if (isRejection(customerId)) return errorOf(customerId);
        const partition = partitionOf(customerId, 'customer');
        if (isRejection(partition)) return errorOf(partition);
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
      handle: (ctx) => {
        const id = ctx.params.id ?? '';
        const partition = partitionOf(id, 'payment');
        if (isRejection(partition)) return errorOf(partition);
        return command(deps, ctx, partition, { k: 'payment.get', id });
      },
    },
  ];
}
