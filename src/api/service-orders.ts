// Service quote and order endpoints: POST /v1/services/quote, POST /v1/services/orders,
// GET /v1/services/orders/{id} and /status. Main thread: idempotency key from the header or the body,
// PIN step-up, rail availability; the customer's shard decides everything about money.
// Invariant: an order is created at most once per idempotency key, its failures replayed as stored.
import { reject } from '../errors.ts';
import { countryService, isServiceCode } from '../catalogue/services.ts';
import { readValidationSnapshot } from '../catalogue/services-recipient.ts';
import { railDown } from '../rails/sandbox-services.ts';
import type { Reply, RequestContext, RouteDef } from '../http/types.ts';
import { IDEMPOTENCY_KEY_LENGTH_MAX } from '../http/idempotency.ts';
import { OrderReadQuery, OrderStatusProjection, ServiceOrder, ServiceOrderCreate, ServiceOrderCreated, ServiceQuote, ServiceQuoteCreate } from '../schemas/service-order.schema.ts';
import type { ServiceRequest } from '../shard/protocol.ts';
import { type ApiDeps, command, currencyProblem, customerTarget, errorOf, byIdHandler, isRejection, partitionOf } from './deps.ts';
import Type from 'typebox';

const OrderResolve = Type.Object({ outcome: Type.Union([Type.Literal('delivered'), Type.Literal('failed')]) }, { additionalProperties: false });
import { customerCountry, pinCheck } from './transfers.ts';
import { liveMidRate } from './live-fx.ts';
import { isLiveOwner } from '../rails/coverage.ts';
import { findCountry } from '../catalogue/countries.ts';

function serviceRequest(customerId: string, b: ServiceQuoteCreate | ServiceOrderCreate): ServiceRequest {
  return {
    customerId,
    countryCode: b.country_code,
    serviceCode: b.service_code,
    providerCostMinor: b.provider_cost_minor,
    currency: b.currency,
    paymentMethod: b.payment_method ?? null,
    operatorCode: b.operator_code ?? null,
    meterType: b.meter_type ?? null,
    accountRef: b.account_ref ?? null,
    phone: b.phone ?? null,
    promotionCode: b.promotion_code ?? null,
    productCode: b.product_code ?? null,
  };
}

/** Shared front-end checks: currency code, a known service, the rail up, the acting customer. */
function prepare(ctx: RequestContext, b: ServiceQuoteCreate | ServiceOrderCreate): { customerId: string; partition: number } | Reply {
  const badCurrency = currencyProblem(b.currency);
  if (badCurrency !== null) return badCurrency;
  if (!isServiceCode(b.service_code)) return errorOf(reject('VALIDATION', `service_code ${b.service_code} is not a catalogue code.`));
  if (railDown(ctx.owner, b.service_code, b.country_code)) return errorOf(reject('PROVIDER_FAILURE', 'The fulfilment rail is unavailable and nothing was charged; retry later (an order may repeat its Idempotency-Key).'));
  return customerTarget(ctx, b.customer_id);
}

/**
 * A live quote for a service priced in another currency than the customer's: the FX connector's mid rate
 * for service currency → customer currency; null when no conversion is needed; the lookup's refusal
 * (400 VALIDATION with no FX source for the pair, 422 FX_QUOTE_UNAVAILABLE when the source gives no
 * usable rate), for the shard to answer after its own checks; no answer → 502 PROVIDER_FAILURE.
 */
async function liveServiceFx(deps: ApiDeps, ctx: RequestContext, b: ServiceQuoteCreate): Promise<NonNullable<ServiceRequest['fx']> | null | Reply> {
  const home = await customerCountry(deps, ctx, b.customer_id);
  if (typeof home !== 'string') return home;
  const source = findCountry(home)?.currency_code;
  const destination = countryService(b.country_code, b.service_code)?.currency;
  if (source === undefined || destination === undefined || source === destination) return null;
  const midRate = await liveMidRate(deps.fx, ctx.owner, destination, source, ctx.nowMs);
  if (typeof midRate === 'string') return { fromCurrency: destination, toCurrency: source, midRate };
  // No rate: the shard answers the lookup's refusal after its own checks, so a quote for a service live
  // mode does not offer still answers SERVICE_UNAVAILABLE first.
  if (midRate.status >= 500 || midRate.error === undefined) return midRate;
  return { fromCurrency: destination, toCurrency: source, refusal: { code: midRate.error.code === 'VALIDATION' ? 'VALIDATION' : 'FX_QUOTE_UNAVAILABLE', message: midRate.error.message } };
}

/** Order reads act for the customer named in the query (or the key's own customer): anyone else's order is 404. */
function orderById(deps: ApiDeps, projection: 'full' | 'status'): RouteDef['handle'] {
  return (ctx) => byIdHandler(deps, 'service order', (id) => ({ k: 'order.get', id, projection, customerId: ctx.query.get('customer_id') ?? null }))(ctx);
}

export function serviceOrderRoutes(deps: ApiDeps): RouteDef[] {
  return [
    {
      method: 'POST',
      path: '/v1/services/quote',
      summary: 'Quote a service purchase: fee, promotion, locked FX for cross-currency',
      auth: 'key',
      family: 'services',
      body: ServiceQuoteCreate,
      response: ServiceQuote,
      keyedInShard: true,
      errors: ['VALIDATION', 'SERVICE_COUNTRY_NOT_ELIGIBLE', 'SERVICE_UNAVAILABLE', 'SERVICE_NOT_EXECUTABLE', 'METHOD_NOT_SELECTABLE', 'FX_QUOTE_UNAVAILABLE', 'PROVIDER_FAILURE', 'NOT_FOUND', 'FORBIDDEN', 'IDEMPOTENCY_REPLAY'],
      handle: async (ctx) => {
        const b = ctx.body as ServiceQuoteCreate;
        const prepared = prepare(ctx, b);
        if ('status' in prepared) return prepared;
        const fx = isLiveOwner(ctx.owner) ? await liveServiceFx(deps, ctx, b) : null;
        if (fx !== null && 'status' in fx) return fx;
        return command(deps, ctx, prepared.partition, { k: 'squote.create', body: Object.assign({}, serviceRequest(prepared.customerId, b), fx === null ? {} : { fx }) }, { idempotent: true });
      },
    },
    {
      method: 'POST',
      path: '/v1/services/orders',
      summary: 'Create a service order and open its payment',
      auth: 'key',
      family: 'services',
      body: ServiceOrderCreate,
      response: ServiceOrderCreated,
      responseStatus: 201,
      // The order command keeps the key's result in the shard, whether the key came in the header or the
      // body. Refusals before it (PIN step-up, a rail down) are not kept: the client resends under the
      // same key, with the PIN, once the rail is back.
      keyedInShard: true,
      errors: ['VALIDATION', 'SERVICE_COUNTRY_NOT_ELIGIBLE', 'PIN_REQUIRED', 'PIN_LOCKED', 'COMPLIANCE_DENIED', 'QUOTE_MISMATCH', 'QUOTE_EXPIRED', 'IDEMPOTENCY_REPLAY', 'IDEMPOTENCY_KEY_REQUIRED', 'SERVICE_UNAVAILABLE', 'SERVICE_NOT_EXECUTABLE', 'INSUFFICIENT_FUNDS', 'LIMIT_EXCEEDED', 'FX_QUOTE_UNAVAILABLE', 'METHOD_NOT_SELECTABLE', 'PROVIDER_FAILURE'],
      handle: async (ctx) => {
        const b = ctx.body as ServiceOrderCreate;
        // The key may come in the header or the body (the spec allows either); both must then agree.
        const key = ctx.idempotencyKey ?? b.idempotency_key ?? null;
        if (key === null) return errorOf(reject('IDEMPOTENCY_KEY_REQUIRED', 'Send an Idempotency-Key header (or idempotency_key in the body).'));
        if (key.length > IDEMPOTENCY_KEY_LENGTH_MAX) return errorOf(reject('VALIDATION', `idempotency key must be at most ${IDEMPOTENCY_KEY_LENGTH_MAX} characters.`));
        if (ctx.idempotencyKey !== null && b.idempotency_key !== undefined && b.idempotency_key !== ctx.idempotencyKey) {
          return errorOf(reject('VALIDATION', 'The Idempotency-Key header and the body idempotency_key differ.'));
        }
        const prepared = prepare(ctx, b);
        if ('status' in prepared) return prepared;
        const pin = await pinCheck(deps, ctx, prepared.customerId, prepared.partition);
        if (pin !== null) return pin;
        return command(deps, Object.assign({}, ctx, { idempotencyKey: key }), prepared.partition, {
          k: 'order.create',
          body: {
            ...serviceRequest(prepared.customerId, b),
            paymentMethod: b.payment_method,
            quoteId: b.quote_id ?? null,
            idempotencyKey: key,
            metadata: (b.metadata as Record<string, unknown> | undefined) ?? null,
            validationSnapshot: readValidationSnapshot(b.validation_snapshot as Record<string, unknown> | undefined),
          },
        }, { idempotent: true });
      },
    },
    {
      method: 'GET',
      path: '/v1/services/orders/:id',
      summary: 'Retrieve a service order with its fulfillment snapshot',
      auth: 'key',
      family: 'services',
      query: OrderReadQuery,
      response: ServiceOrder,
      errors: ['VALIDATION', 'NOT_FOUND'],
      handle: orderById(deps, 'full'),
    },
    {
      // Beyond the contract (docs/decisions.md): `kobo orders resolve` over HTTP, the same shard command.
      method: 'POST',
      path: '/v1/services/orders/:id/resolve',
      summary: 'Resolve an order held for manual fulfilment (or unknown after a rail timeout): delivered completes it, failed gives its money back',
      auth: 'key',
      family: 'services',
      accountLevel: true,
      body: OrderResolve,
      response: ServiceOrder,
      errors: ['VALIDATION', 'NOT_FOUND', 'CONFLICT', 'FORBIDDEN'],
      handle: async (ctx) => {
        const id = ctx.params.id ?? '';
        const partition = partitionOf(id, 'service order');
        if (isRejection(partition)) return errorOf(partition);
        const outcome = (ctx.body as { outcome: 'delivered' | 'failed' }).outcome;
        const resolved = await command(deps, ctx, partition, { k: 'order.resolve', id, outcome });
        if (resolved.status !== 200) return resolved;
        return command(deps, ctx, partition, { k: 'order.get', id, projection: 'full', customerId: null });
      },
    },
    {
      method: 'GET',
      path: '/v1/services/orders/:id/status',
      summary: 'The order status projection (poll while waiting on customer action)',
      auth: 'key',
      family: 'services',
      query: OrderReadQuery,
      response: OrderStatusProjection,
      errors: ['VALIDATION', 'NOT_FOUND'],
      handle: orderById(deps, 'status'),
    },
  ];
}
