// Services catalogue endpoints: catalogue, definition, availability, payment methods, operators, plans,
// variants, validate, and the sandbox rail-down switch. Main thread; the only shard call is customer.get
// (home country and KYC level of the customer the request acts for); everything else is reference data.
// Invariant: every endpoint gates through purchaseRejection in the same order (service, customer,
// eligibility, maintenance window, offer, visibility), so they never disagree on a verdict.
import { findCountry, methodRules } from '../catalogue/countries.ts';
import {
  acceptedPaymentMethods,
  eligibleServiceCountries,
  findOperator,
  inMaintenance,
  isServiceCode,
  isServiceMarket,
  maintenanceEndsAtMs,
  marketService,
  operatorsOf,
  plansOfKind,
  serviceEligible,
  serviceFeeMinor,
  serviceFeeRule,
  variantsOf,
  SERVICE_CODES,
  type MarketService,
  type Plan,
  type ServiceCode,
} from '../catalogue/services.ts';
import { validatePhone } from '../catalogue/services-phone.ts';
import { checkRecipient } from '../catalogue/services-recipient.ts';
import { accountRefProblem, catalogueFor, pickerFor, purchaseRejection, resolveAccess, serviceDefinition, type CustomerProfile } from '../catalogue/services-resolve.ts';
import { reject, type Rejection } from '../errors.ts';
import type { Reply, RequestContext, RouteDef } from '../http/types.ts';
import { keptBytes } from '../http/write-body.ts';
import { railDown, setRailDown } from '../rails/sandbox-services.ts';
import { lookUpRecipient } from './recipient-lookup.ts';
import { fulfilmentGap, isLiveOwner, NO_LIVE_CONNECTOR, railServes } from '../rails/coverage.ts';
import {
  Catalogue,
  OperatorList,
  PlanList,
  RailSwitch,
  RailSwitchBody,
  ServiceAvailability,
  ServiceAvailabilityQuery,
  ServiceCountryQuery,
  ServiceDefinition,
  ServicePaymentMethods,
  ServicePaymentMethodsQuery,
  ServicePlansQuery,
  ServiceValidateBody,
  ServiceValidateQuery,
  ValidationResult,
  VariantList,
} from '../schemas/services.schema.ts';
import { actingCustomer, command, errorOf, isRejection, partitionOf, type ApiDeps } from './deps.ts';
import { profileCache } from './profile-cache.ts';


export { railDown, setRailDown } from '../rails/sandbox-services.ts';

/** The catalogue may be cached briefly per country (spec: "a few minutes"); availability is re-resolved at checkout. */
const CATALOGUE_CACHE_CONTROL = 'private, max-age=120';
const CATALOGUE_HEADERS: Readonly<Record<string, string>> = { 'Cache-Control': CATALOGUE_CACHE_CONTROL };

type Result<T> = { ok: true; value: T } | { ok: false; reply: Reply };

interface Profile extends CustomerProfile {
  id: string;
  owner: string;
}

interface Scope {
  service: MarketService;
  profile: Profile;
}

/** browse: visible is enough (operators, plans, …); execute: the customer must be able to buy it now. */
type Gate = 'browse' | 'execute';

function refuse(rejection: Rejection, ctx: RequestContext, country: string): { ok: false; reply: Reply } {
  const reply = errorOf(rejection);
  if (rejection.code !== 'MAINTENANCE') return { ok: false, reply };
  const endsAtMs = maintenanceEndsAtMs(country, ctx.nowMs) ?? ctx.nowMs;
  return { ok: false, reply: { ...reply, headers: { 'Retry-After': String(Math.max(1, Math.ceil((endsAtMs - ctx.nowMs) / 1000))) } } };
}

function ok(data: unknown, headers?: Record<string, string>): Reply {
  return { status: 200, json: JSON.stringify({ data }), ...(headers === undefined ? {} : { headers }) };
}

/**
 * The customer the request acts for, with the home country and KYC level resolution needs. Synchronous
 * when the front end's cache answers, so a cached catalogue read needs no promise at all.
 */
function profileOf(deps: ApiDeps, ctx: RequestContext, named: string | undefined): Result<Profile> | Promise<Result<Profile>> {
  const id = actingCustomer(ctx, named);
  if (isRejection(id)) return { ok: false, reply: errorOf(id) };
  const partition = partitionOf(id, 'customer');
  if (isRejection(partition)) return { ok: false, reply: errorOf(partition) };
  // Served from the front end's cache when it knows this customer for this owner; otherwise the shard
  // answers (and decides 403/404 for another owner's or an unknown id).
  const cached = profileCache.get(id);
  if (cached !== undefined && cached.owner === ctx.owner) return { ok: true, value: { id, homeCountry: cached.homeCountry, kycLevel: cached.kycLevel, owner: cached.owner, unservedReason: fulfilmentGap(cached.owner) } };
  return profileFromShard(deps, ctx, { id, partition });
}

async function profileFromShard(deps: ApiDeps, ctx: RequestContext, { id, partition }: { id: string; partition: number }): Promise<Result<Profile>> {
  const epoch = profileCache.epoch;
  const reply = await command(deps, ctx, partition, { k: 'customer.get', id });
  if (reply.status !== 200 || reply.json === undefined) return { ok: false, reply };
  const data = (JSON.parse(reply.json) as { data?: { country_code?: unknown; kyc_level?: unknown } }).data;
  if (typeof data?.country_code !== 'string' || typeof data.kyc_level !== 'number') {
    throw new Error('customer.get must answer country_code (string) and kyc_level (number)');
  }
  profileCache.store(id, { owner: ctx.owner, homeCountry: data.country_code, kycLevel: data.kyc_level }, epoch);
  return { ok: true, value: { id, homeCountry: data.country_code, kycLevel: data.kyc_level, owner: ctx.owner, unservedReason: fulfilmentGap(ctx.owner) } };
}

function noSuchService(code: string): Reply {
  return errorOf(reject('NOT_FOUND', `No service ${JSON.stringify(code)}.`));
}

async function scopeOf(deps: ApiDeps, ctx: RequestContext, input: { code: string; country: string; customerId: string | undefined; gate: Gate }): Promise<Result<Scope>> {
  const { code } = input;
  if (!isServiceCode(code)) return { ok: false, reply: noSuchService(code) };
  const country = input.country.toUpperCase();
  const profile = await profileOf(deps, ctx, input.customerId);
  if (!profile.ok) return profile;
  const rejection = purchaseRejection({ country, code, customer: profile.value, nowMs: ctx.nowMs });
  // Browsing a live service no connector serves still shows kobo's reference data (operators, plans,
  // payment methods); validate, quote and order refuse it with SERVICE_UNAVAILABLE.
  const browsable = input.gate === 'browse' && (rejection?.code === 'SERVICE_NOT_EXECUTABLE' || liveGap(country, code, profile.value));
  if (rejection !== null && !browsable) return refuse(rejection, ctx, country);
  const service = marketService(country, code);
  if (service === undefined) throw new Error(`purchaseRejection passed ${code} in ${country}, which is not offered`);
  return { ok: true, value: { service, profile: profile.value } };
}

function liveGap(country: string, code: string, profile: Profile): boolean {
  const service = marketService(country, code);
  return service !== undefined && resolveAccess(service, profile).availability.reason === NO_LIVE_CONNECTOR;
}

function railFailure(ctx: RequestContext, service: MarketService): Reply | null {
  if (!railDown(ctx.owner, service.code, service.country)) return null;
  return errorOf(reject('PROVIDER_FAILURE', `The ${service.code} rail in ${service.country} is not answering; retry shortly.`));
}

function queryOf(ctx: RequestContext, name: string): string | undefined {
  return ctx.query.get(name) ?? undefined;
}

/** Catalogue bodies by (service country, home country, KYC level): all that resolution depends on. */
const catalogueBodies = new Map<string, { json: string; bytes: Buffer }>();
/** Countries × home countries × KYC levels stay far below this; the cap only bounds a surprise. */
const CATALOGUE_BODIES_MAX = 4_096;

/**
 * A catalogue body, memoised with its bytes: at ~3 KB, encoding it for every read took a fresh slab of
 * Node's buffer pool every other request, about a tenth of a catalogue read's CPU.
 */
function catalogueBody(country: string, profile: Profile): { json: string; bytes: Buffer } {
  // The environment is part of the key: live availability depends on connectors, the sandbox's does not.
  const key = `${country}|${profile.homeCountry}|${profile.kycLevel}|${isLiveOwner(profile.owner ?? '') ? 'live' : 'test'}`;
  let body = catalogueBodies.get(key);
  if (body === undefined) {
    const json = JSON.stringify({ data: { country_code: country, items: catalogueFor(country, profile) } });
    body = { json, bytes: keptBytes(json) };
    if (catalogueBodies.size >= CATALOGUE_BODIES_MAX) catalogueBodies.clear();
    catalogueBodies.set(key, body);
  }
  return body;
}

function listCatalogue(deps: ApiDeps, ctx: RequestContext): Reply | Promise<Reply> {
  const country = (queryOf(ctx, 'country') ?? '').toUpperCase();
  if (findCountry(country)?.services_enabled !== true || !isServiceMarket(country)) {
    return errorOf(reject('NOT_FOUND', `Country ${country} is not served or sells no services.`));
  }
  const profile = profileOf(deps, ctx, queryOf(ctx, 'customer_id'));
  return profile instanceof Promise ? profile.then((known) => catalogueReply(ctx, country, known)) : catalogueReply(ctx, country, profile);
}

function catalogueReply(ctx: RequestContext, country: string, profile: Result<Profile>): Reply {
  if (!profile.ok) return profile.reply;
  if (!serviceEligible(profile.value.homeCountry, country)) {
    return errorOf(reject('SERVICE_COUNTRY_NOT_ELIGIBLE', `Customers from ${profile.value.homeCountry} cannot buy services in ${country}.`));
  }
  if (inMaintenance(country, ctx.nowMs)) return refuse(reject('MAINTENANCE', `The ${country} catalogue is under maintenance.`), ctx, country).reply;
  const body = catalogueBody(country, profile.value);
  return { status: 200, json: body.json, bytes: body.bytes, headers: CATALOGUE_HEADERS };
}

async function availability(deps: ApiDeps, ctx: RequestContext): Promise<Reply> {
  const code = ctx.params.code ?? '';
  if (!isServiceCode(code)) return noSuchService(code);
  const profile = await profileOf(deps, ctx, queryOf(ctx, 'customer_id'));
  if (!profile.ok) return profile.reply;
  const items = eligibleServiceCountries(profile.value.homeCountry).flatMap((country) => {
    const service = marketService(country, code);
    const market = findCountry(country);
    if (service === undefined || market === undefined) return [];
    const access = resolveAccess(service, profile.value);
    if (!access.visible) return [];
    const closed = inMaintenance(country, ctx.nowMs);
    return [{
      country_code: country,
      name: market.name,
      flag_emoji: market.flag_emoji,
      currency: service.currency,
      state: closed ? 'maintenance' : service.state,
      access: { visible: true, executable: access.executable && !closed },
      availability: closed ? { status: 'maintenance', reason: 'catalogue_maintenance' } : access.availability,
    }];
  });
  // A named country is the selection when the customer may buy there; otherwise the first executable one.
  const named = queryOf(ctx, 'country')?.toUpperCase();
  const selected = items.find((i) => i.country_code === named && i.access.executable);
  const preferred = selected ?? items.find((i) => i.access.executable) ?? items[0];
  return ok({
    service_code: code,
    customer_id: profile.value.id,
    home_country: profile.value.homeCountry,
    requested_country_code: named ?? null,
    requested_available: named === undefined ? null : selected !== undefined,
    default_country_code: preferred?.country_code ?? null,
    items,
  });
}

function paymentMethods(scope: Scope, amountText: string | undefined): Reply {
  const { service, profile } = scope;
  const amountMinor = amountText === undefined ? null : Number(amountText);
  const payingCurrency = findCountry(profile.homeCountry)?.currency_code ?? service.currency;
  const rules = methodRules(profile.homeCountry);
  const items = acceptedPaymentMethods(service.country, service.code).flatMap((method) => {
    const fee = serviceFeeRule(service.country, service.code, method);
    if (fee === undefined) return [];
    const rule = rules.find((r) => r.method === method);
    let reason: string | null = null;
    if (rule === undefined) reason = 'not_offered_in_country';
    else if (!rule.selectable) reason = 'funding_instrument';
    else if (!rule.enabled) reason = 'not_enabled_in_country';
    else if (profile.kycLevel < rule.kyc_level_min) reason = 'kyc_level_too_low';
    else if (method !== 'wallet' && !railServes(profile.owner ?? '', 'collection', { method, country: profile.homeCountry })) reason = NO_LIVE_CONNECTOR;
    return [{
      method,
      selectable: reason === null,
      reason,
      min_amount_minor: rule?.min_amount_minor ?? null,
      max_amount_minor: rule?.max_amount_minor ?? null,
      fee: { ...fee, currency: service.currency },
      fee_minor: amountMinor === null ? null : serviceFeeMinor(service.country, service.code, method, amountMinor),
    }];
  });
  return ok({ service_code: service.code, country_code: service.country, customer_id: profile.id, paying_currency: payingCurrency, currency: service.currency, items });
}

function operatorRequired(service: MarketService): Rejection {
  const codes = operatorsOf(service.country, service.code).map((o) => o.code).join(', ');
  const byPhone = service.recipient === 'phone' ? ' (or pass phone to resolve it from the number)' : '';
  return reject('VALIDATION', `operator is required for ${service.code} in ${service.country}${byPhone}: one of ${codes}.`);
}

/**
 * The plan listing's operator: named, else the phone's network, else the only operator there is. An
 * open-amount service has one synthetic plan whatever the operator, so it needs none (null).
 */
function plansOperator(service: MarketService, named: string | undefined, phone: string | undefined): string | null | Rejection {
  if (named !== undefined) {
    const code = named.toUpperCase();
    if (findOperator(service.country, service.code, code) === undefined) return reject('VALIDATION', `operator ${code} does not sell ${service.code} in ${service.country}.`);
    if (phone === undefined) return code;
  }
  let carrier: string | null = null;
  if (phone !== undefined && service.recipient === 'phone') {
    const checked = validatePhone(phone, service.country, service.code);
    if (!checked.valid) return reject('VALIDATION', `phone: ${checked.messages.join(' ')}`);
    carrier = checked.carrier;
  }
  // A named operator wins over the number's prefix: ported numbers keep their prefix.
  if (named !== undefined) return named.toUpperCase();
  if (carrier !== null) return carrier;
  const operators = operatorsOf(service.country, service.code);
  const [only] = operators;
  if (operators.length === 1 && only !== undefined) return only.code;
  if (service.pricing === 'open') return null;
  return operatorRequired(service);
}

function listPlans(ctx: RequestContext, service: MarketService): Reply {
  const named = queryOf(ctx, 'operator');
  const alias = queryOf(ctx, 'operator_code');
  if (named !== undefined && alias !== undefined && named.toUpperCase() !== alias.toUpperCase()) return errorOf(reject('VALIDATION', 'operator and operator_code name different operators; send one.'));
  const operator = plansOperator(service, named ?? alias, queryOf(ctx, 'phone'));
  if (isRejection(operator)) return errorOf(operator);
  const accountRef = queryOf(ctx, 'account_ref');
  if (accountRef !== undefined && service.recipient !== 'phone') {
    const problem = accountRefProblem(service, accountRef);
    if (problem !== null) return errorOf(reject('VALIDATION', problem));
  }
  const down = railFailure(ctx, service);
  if (down !== null) return down;
  const kind = queryOf(ctx, 'kind') ?? 'plans';
  let items: readonly Plan[];
  // Rates are what an open-amount catalogue quotes per destination: its open_amount plan. The sandbox
  // prices every phone and account alike, so phone and account_ref only pick and check the operator.
  if (kind === 'rates') items = service.pricing === 'open' ? plansOfKind(service.country, service.code, operator, 'plans') : [];
  else items = plansOfKind(service.country, service.code, operator, kind === 'packages' ? 'packages' : 'plans');
  return ok({ service_code: service.code, country_code: service.country, operator_code: operator, kind, presentation: pickerFor(items), items });
}

function validationError(message: string): Rejection {
  return reject('VALIDATION_ERROR', message);
}

async function validate(deps: ApiDeps, ctx: RequestContext): Promise<Reply> {
  const body = (ctx.body ?? {}) as ServiceValidateBody;
  const code = ctx.params.code ?? '';
  if (!isServiceCode(code)) return noSuchService(code);
  // The body names country and customer; the query forms the other services endpoints take work too.
  const country = body.country_code ?? queryOf(ctx, 'country')?.toUpperCase();
  const customerId = body.customer_id ?? queryOf(ctx, 'customer_id');
  if (country === undefined) return errorOf(validationError('country_code is required.'));
  const accountRef = body.account_ref?.trim() ?? '';
  if (accountRef === '') return errorOf(validationError('account_ref is required.'));
  const scope = await scopeOf(deps, ctx, { code, country, customerId, gate: 'execute' });
  if (!scope.ok) return scope.reply;
  const { service } = scope.value;
  const inputs = checkRecipient(service, { recipient: accountRef, operatorCode: body.operator_code ?? null, meterType: body.meter_type ?? null, productCode: body.product_code ?? null, failureCode: 'VALIDATION_ERROR' });
  if (isRejection(inputs)) return errorOf(inputs);
  const down = railFailure(ctx, service);
  if (down !== null) return down;
  // When the phone check normalised the number, the rail looks up (and the order reuses) that form.
  const lookup = await lookUpRecipient(ctx, service, { operatorCode: inputs.operatorCode, accountRef: inputs.phone?.normalized ?? accountRef, meterType: inputs.meterType });
  if ('status' in lookup) return lookup;
  if (!lookup.valid) return errorOf(validationError(`The ${service.code} rail rejected ${accountRef}: ${lookup.reason ?? 'not found'}.`));
  return ok({
    service_code: service.code,
    country_code: service.country,
    account_ref: accountRef,
    operator_code: inputs.operatorCode,
    meter_type: inputs.meterType,
    product_code: inputs.productCode,
    valid: lookup.valid,
    customer_name: lookup.customerName,
    address: lookup.address,
    serviceability: { serviceable: lookup.serviceable, reason: lookup.reason },
    phone_validation: inputs.phone,
    validated_at: new Date(ctx.nowMs).toISOString(),
  });
}

function switchRail(ctx: RequestContext): Reply {
  const body = ctx.body as RailSwitchBody;
  const code: ServiceCode = body.service_code;
  if (marketService(body.country, code) === undefined) return errorOf(reject('SERVICE_UNAVAILABLE', `${code} is not offered in ${body.country}.`));
  setRailDown(ctx.owner, code, body.country, body.down);
  return ok({ service_code: code, country: body.country, down: railDown(ctx.owner, code, body.country) });
}

export function serviceCatalogueRoutes(deps: ApiDeps): RouteDef[] {
  const perService = (gate: Gate, then: (scope: Scope, ctx: RequestContext) => Reply, fixedCode?: ServiceCode): RouteDef['handle'] => async (ctx) => {
    const code = fixedCode ?? ctx.params.code ?? '';
    const scope = await scopeOf(deps, ctx, { code, country: queryOf(ctx, 'country') ?? '', customerId: queryOf(ctx, 'customer_id'), gate });
    return scope.ok ? then(scope.value, ctx) : scope.reply;
  };
  const browseErrors = ['VALIDATION', 'NOT_FOUND', 'FORBIDDEN', 'SERVICE_COUNTRY_NOT_ELIGIBLE', 'SERVICE_UNAVAILABLE', 'MAINTENANCE'];
  const base = { auth: 'key', family: 'services' } as const;
  return [
    {
      ...base, method: 'GET', path: '/v1/services', summary: 'Catalogue of a service country, resolved for the customer',
      query: ServiceCountryQuery, response: Catalogue, errors: ['VALIDATION', 'NOT_FOUND', 'FORBIDDEN', 'SERVICE_COUNTRY_NOT_ELIGIBLE', 'MAINTENANCE'],
      handle: (ctx) => listCatalogue(deps, ctx),
    },
    // One literal path per service code rather than /v1/services/:code, so that GET /v1/services/quote
    // and /v1/services/orders (POST-only routes) answer 405 with `Allow: POST`, not a GET 404.
    ...SERVICE_CODES.map((code): RouteDef => ({
      ...base, method: 'GET', path: `/v1/services/${code}`, summary: `Retrieve the ${code.replace('_', ' ')} service definition`,
      query: ServiceCountryQuery, response: ServiceDefinition, errors: [...browseErrors, 'SERVICE_NOT_EXECUTABLE'],
      handle: perService('execute', (scope) => ok(serviceDefinition(scope.service, scope.profile)), code),
    })),
    {
      ...base, method: 'GET', path: '/v1/services/:code/availability', summary: 'Service countries where this customer may buy the service, with state per country',
      query: ServiceAvailabilityQuery, response: ServiceAvailability, errors: ['VALIDATION', 'NOT_FOUND', 'FORBIDDEN'],
      handle: (ctx) => availability(deps, ctx),
    },
    {
      ...base, method: 'GET', path: '/v1/services/:code/payment-methods', summary: 'Payment methods for a service and country, with the fee of each',
      query: ServicePaymentMethodsQuery, response: ServicePaymentMethods, errors: browseErrors,
      handle: perService('browse', (scope, ctx) => paymentMethods(scope, queryOf(ctx, 'amount_minor'))),
    },
    {
      ...base, method: 'GET', path: '/v1/services/:code/operators', summary: 'Operators of a service in a country',
      query: ServiceCountryQuery, response: OperatorList, errors: [...browseErrors, 'PROVIDER_FAILURE'],
      handle: perService('browse', (scope, ctx) => railFailure(ctx, scope.service)
        ?? ok({ service_code: scope.service.code, country_code: scope.service.country, items: operatorsOf(scope.service.country, scope.service.code) })),
    },
    {
      ...base, method: 'GET', path: '/v1/services/:code/plans', summary: 'Plans of an operator (tabs or select picker); open-amount services answer open_amount',
      query: ServicePlansQuery, response: PlanList, errors: [...browseErrors, 'PROVIDER_FAILURE'],
      handle: perService('browse', (scope, ctx) => listPlans(ctx, scope.service)),
    },
    {
      ...base, method: 'GET', path: '/v1/services/:code/variants', summary: 'Variants (meter types) of a service in a country',
      query: ServiceCountryQuery, response: VariantList, errors: [...browseErrors, 'PROVIDER_FAILURE'],
      handle: perService('browse', (scope, ctx) => railFailure(ctx, scope.service)
        ?? ok({ service_code: scope.service.code, country_code: scope.service.country, items: variantsOf(scope.service.country, scope.service.code) })),
    },
    {
      ...base, method: 'POST', path: '/v1/services/:code/validate', summary: 'Verify a recipient on the rail (phone checks first for airtime and data)',
      body: ServiceValidateBody, query: ServiceValidateQuery, response: ValidationResult,
      errors: ['VALIDATION', 'VALIDATION_ERROR', 'NOT_FOUND', 'FORBIDDEN', 'SERVICE_COUNTRY_NOT_ELIGIBLE', 'SERVICE_UNAVAILABLE', 'SERVICE_NOT_EXECUTABLE', 'MAINTENANCE', 'PROVIDER_FAILURE'],
      handle: (ctx) => validate(deps, ctx),
    },
    {
      method: 'POST', path: '/v1/test_helpers/services/rails', summary: "Sandbox: take a service rail down (or up) for this account (not durable)",
      auth: 'key', family: 'test_helpers', sandboxOnly: true, accountLevel: true, body: RailSwitchBody, response: RailSwitch, errors: ['VALIDATION', 'SERVICE_UNAVAILABLE'],
      handle: switchRail,
    },
  ];
}
