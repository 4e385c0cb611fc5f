// Exchange endpoints: POST /v1/exchange/quotes (rate locked until expires_at) and POST /v1/exchange.
// Main thread. The customer is named by `customer_id` (PRODUCT.md) or the key's own customer; the
// quote id carries the customer's partition, so execution routes without a lookup.
// Invariant: an exchange executes a live, unused quote of the caller's, or nothing.
import type { RouteDef } from '../http/types.ts';
import { Exchange, ExchangeCreate, ExchangeQuote, ExchangeQuoteCreate } from '../schemas/exchange.schema.ts';
import { type ApiDeps, command, currencyProblem, customerTarget, errorOf, isRejection, partitionOf } from './deps.ts';

export function exchangeRoutes(deps: ApiDeps): RouteDef[] {
  return [
    {
      method: 'POST',
      path: '/v1/exchange/quotes',
      summary: 'Quote an exchange (customer rate after spread, expires_at)',
      auth: 'key',
      family: 'exchange',
      body: ExchangeQuoteCreate,
      response: ExchangeQuote,
      responseStatus: 201,
      errors: ['VALIDATION', 'NOT_FOUND', 'FORBIDDEN'],
      handle: (ctx) => {
        const body = ctx.body as ExchangeQuoteCreate;
        for (const code of [body.from_currency, body.to_currency]) {
          const badCurrency = currencyProblem(code);
          if (badCurrency !== null) return badCurrency;
        }
        const target = customerTarget(ctx, body.customer_id);
        if ('status' in target) return target;
        const { customerId, partition } = target;
        return command(deps, ctx, partition, {
          k: 'fx.quote',
          body: { customerId, fromCurrency: body.from_currency, toCurrency: body.to_currency, fromAmountMinor: body.from_amount_minor },
        });
      },
    },
    {
      method: 'POST',
      path: '/v1/exchange',
      summary: 'Execute an exchange quote: debit the from wallet, credit the to wallet, atomically',
      auth: 'key',
      family: 'exchange',
      idempotent: true,
      body: ExchangeCreate,
      response: Exchange,
      responseStatus: 201,
      errors: ['VALIDATION', 'CONFLICT', 'INSUFFICIENT_FUNDS', 'LIMIT_EXCEEDED', 'NOT_FOUND', 'FORBIDDEN', 'IDEMPOTENCY_KEY_REQUIRED', 'IDEMPOTENCY_REPLAY'],
      handle: (ctx) => {
        const quoteId = (ctx.body as ExchangeCreate).quote_id;
        const partition = partitionOf(quoteId, 'exchange quote');
        if (isRejection(partition)) return errorOf(partition);
        return command(deps, ctx, partition, { k: 'fx.execute', quoteId }, { idempotent: true });
      },
    },
  ];
}
