// Exchange endpoints: POST /v1/exchange/quotes (rate locked until expires_at) and POST /v1/exchange.
// Main thread. The customer is named by `customer_id` (PRODUCT.md) or the key's own customer; the
// quote id carries the customer's partition, so execution routes without a lookup.
// Invariant: an exchange executes a live, unused quote of the caller's, or nothing.
import type { RouteDef } from '../http/types.ts';
import { randomUUID } from 'node:crypto';
import type { Reply } from '../http/types.ts';
import { isLiveOwner } from '../rails/coverage.ts';
import { lookUp } from '../rails/rails.ts';
import { Exchange, ExchangeCreate, ExchangeQuote, ExchangeQuoteCreate } from '../schemas/exchange.schema.ts';
import { reject } from '../errors.ts';
import { type ApiDeps, actingCustomer, command, currencyProblem, customerTarget, errorOf, isRejection, partitionOf } from './deps.ts';

/** A mid rate is a plain positive decimal of at most 12 fraction digits (as in the reference table). */
const MID_RATE_PATTERN = /^(?!0+(?:\.0+)?$)\d{1,15}(?:\.\d{1,12})?$/;

/**
 * The mid rate of the FX connector covering both currencies (rails.ts): no connector → 400 VALIDATION
 * (the contract's quote error for a pair that cannot be quoted: kobo has no live source for it); a
 * refusal or a rate that is not a plain positive decimal → 422 FX_QUOTE_UNAVAILABLE; no answer → 502
 * PROVIDER_FAILURE (retry with the same Idempotency-Key).
 */
export async function liveMidRate(owner: string, from: string, to: string, nowMs: number): Promise<string | Reply> {
  const answer = await lookUp(owner, 'fx', [{ currency: from }, { currency: to }], `fx-${randomUUID()}`, { from_currency: from, to_currency: to }, nowMs);
  if (answer === null) return errorOf(reject('VALIDATION', `Unsupported pair: no live FX source is configured for ${from} → ${to}.`));
  if (answer.outcome === 'settled') {
    const rate = answer.detail?.mid_rate;
    if (typeof rate === 'string' && MID_RATE_PATTERN.test(rate)) return rate;
    return errorOf(reject('FX_QUOTE_UNAVAILABLE', `The FX connector answered no usable rate for ${from} → ${to}.`));
  }
  if (answer.outcome === 'failed' || answer.outcome === 'terminal' || answer.outcome === 'not_found') {
    return errorOf(reject('FX_QUOTE_UNAVAILABLE', `The FX connector does not quote ${from} → ${to}.`));
  }
  return errorOf(reject('PROVIDER_FAILURE', 'The FX rail did not answer; retry with the same Idempotency-Key.'));
}

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
      keyedInShard: true,
      errors: ['VALIDATION', 'FX_QUOTE_UNAVAILABLE', 'NOT_FOUND', 'FORBIDDEN', 'IDEMPOTENCY_REPLAY', 'PROVIDER_FAILURE'],
      handle: async (ctx) => {
        const body = ctx.body as ExchangeQuoteCreate;
        for (const code of [body.from_currency, body.to_currency]) {
          const badCurrency = currencyProblem(code);
          if (badCurrency !== null) return badCurrency;
        }
        const target = customerTarget(ctx, body.customer_id);
        if ('status' in target) return target;
        const { customerId, partition } = target;
        // kobo's reference rates never price live money: a live quote takes the FX connector's mid rate.
        const live = isLiveOwner(ctx.owner) ? await liveMidRate(ctx.owner, body.from_currency, body.to_currency, ctx.nowMs) : undefined;
        if (live !== undefined && typeof live !== 'string') return live;
        return command(deps, ctx, partition, {
          k: 'fx.quote',
          body: { customerId, fromCurrency: body.from_currency, toCurrency: body.to_currency, fromAmountMinor: body.from_amount_minor, ...(live === undefined ? {} : { midRate: live }) },
        }, { idempotent: true });
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
        const body = ctx.body as ExchangeCreate;
        const quoteId = body.quote_id;
        // A customer-scoped key acts for its own customer; naming another is 403 (as everywhere).
        const customerId = ctx.key?.customerId != null || body.customer_id !== undefined ? actingCustomer(ctx, body.customer_id) : null;
        if (isRejection(customerId)) return errorOf(customerId);
        const partition = partitionOf(quoteId, 'exchange quote');
        // The spec's error for a quote_id that names no quote is 400 VALIDATION, not 404.
        if (isRejection(partition)) return errorOf(partition.code === 'NOT_FOUND' ? reject('VALIDATION', `quote_id ${quoteId} does not name an exchange quote.`) : partition);
        return command(deps, ctx, partition, { k: 'fx.execute', quoteId, customerId }, { idempotent: true });
      },
    },
  ];
}
