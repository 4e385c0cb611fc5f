// Public country endpoints: the enabled markets and a country's boot context.
// Main thread; answers from the frozen reference catalogue, no shard involved.
// Invariant: a malformed code is 400 VALIDATION; an unknown or disabled country is 404 NOT_FOUND.
import Type from 'typebox';
import { countryContext, listCountries, type CountryContext } from '../catalogue/countries.ts';
import { NO_LIVE_CONNECTOR, railServes } from '../rails/coverage.ts';
import { reject } from '../errors.ts';
import type { RouteDef } from '../http/types.ts';
import { errorOf } from './deps.ts';

const countriesJson = JSON.stringify({ data: listCountries() });

/**
 * The context as a live key sees it: collection methods and services no connector serves are not
 * enabled, with `reason: "no_live_connector"` (wallet needs no external rail).
 */
function liveContext(context: CountryContext): object {
  const owner = 'live:viewer';
  return {
    ...context,
    payment_methods: context.payment_methods.map((m) => {
      const served = m.method === 'wallet' || railServes(owner, 'collection', { method: m.method, country: context.code, currency: context.currency_code });
      return Object.assign({}, m, { enabled: m.enabled && served, reason: served ? null : NO_LIVE_CONNECTOR });
    }),
    services: context.services.map((s) => {
      const served = railServes(owner, 'fulfilment', { service: s.service_code, country: context.code, currency: context.currency_code });
      return Object.assign({}, s, { available: served, reason: served ? null : NO_LIVE_CONNECTOR });
    }),
  };
}

export function countryRoutes(): RouteDef[] {
  return [
    {
      method: 'GET',
      path: '/v1/countries',
      summary: 'List enabled countries',
      auth: 'public',
      family: 'countries',
      response: Type.Array(Type.Object({ code: Type.String(), name: Type.String(), currency_code: Type.String() }, { additionalProperties: true })),
      errors: ['RATE_LIMITED'],
      handle: () => ({ status: 200, json: countriesJson }),
    },
    {
      method: 'GET',
      path: '/v1/countries/:code/context',
      summary: 'Country boot context',
      auth: 'public',
      family: 'countries',
      response: Type.Object({ code: Type.String(), services: Type.Array(Type.Object({}, { additionalProperties: true })), payment_methods: Type.Array(Type.Object({}, { additionalProperties: true })) }, { additionalProperties: true }),
      errors: ['VALIDATION', 'NOT_FOUND', 'RATE_LIMITED'],
      handle: (ctx) => {
        const raw = ctx.params.code ?? '';
        if (!/^[A-Za-z]{2}$/.test(raw)) return errorOf(reject('VALIDATION', `code must be an ISO 3166-1 alpha-2 code, got ${JSON.stringify(raw)}.`));
        const context = countryContext(raw.toUpperCase());
        if (context === undefined) return errorOf(reject('NOT_FOUND', `Country ${raw.toUpperCase()} is not served or is disabled.`));
        return { status: 200, json: JSON.stringify({ data: ctx.viewerEnv === 'live' ? liveContext(context) : context }) };
      },
    },
  ];
}
