// Resolves the catalogue for one customer: what each service looks like to them (access, availability),
// the service definition (steps, limits, form schema, rules), the plan picker verdict, and the one
// purchase gate quotes and orders share. Any thread; pure over the reference data.
// Invariant: a service a customer cannot see is never executable for them, and the catalogue, the
// definition and purchaseRejection agree on every verdict because they all go through resolveAccess.
import { reject, type Rejection } from '../errors.ts';
import { countryContext, findCountry } from './countries.ts';
import {
  inMaintenance,
  isServiceCode,
  marketService,
  operatorsOf,
  serviceEligible,
  variantsOf,
  PLAN_CATEGORIES,
  type MarketService,
  type Plan,
} from './services.ts';

/** What resolution needs to know about the customer (from customer.get). */
export interface CustomerProfile {
  homeCountry: string;
  kycLevel: number;
  /**
   * Why no fulfilment rail serves this service for the caller (live money needs a connector), or null
   * when one does. The caller asks the rails (reference data never imports one); absent: every service
   * is served, as in the sandbox.
   */
  unservedReason?: (scope: { service: string; country: string; currency: string }) => string | null;
}

export interface Access {
  visible: boolean;
  executable: boolean;
  availability: { status: 'available' | 'coming_soon' | 'maintenance' | 'unavailable' | 'restricted'; reason: string | null };
}

/**
 * The render and purchase gates of a service for a customer. Hidden: state unavailable, or a
 * residents-only service (domestic licences, e.g. betting) for a customer from elsewhere. Visible but
 * not executable: coming_soon, maintenance, or a KYC level below the service's minimum.
 */
export function resolveAccess(service: MarketService, customer: CustomerProfile): Access {
  const hidden = (reason: string): Access => ({ visible: false, executable: false, availability: { status: 'unavailable', reason } });
  if (service.state === 'unavailable') return hidden(service.availabilityReason ?? 'not_offered');
  if (service.audience === 'residents' && customer.homeCountry !== service.country) return hidden('residents_only');
  const unserved = customer.unservedReason?.({ service: service.code, country: service.country, currency: service.currency }) ?? null;
  if (unserved !== null) return { visible: true, executable: false, availability: { status: 'unavailable', reason: unserved } };
  if (service.state === 'coming_soon') {
    return { visible: true, executable: false, availability: { status: 'coming_soon', reason: service.availabilityReason ?? 'launching_soon' } };
  }
  if (service.state === 'maintenance') {
    return { visible: true, executable: false, availability: { status: 'maintenance', reason: service.availabilityReason ?? 'provider_maintenance' } };
  }
  if (customer.kycLevel < service.kycLevelMin) {
    return { visible: true, executable: false, availability: { status: 'restricted', reason: 'kyc_level_required' } };
  }
  return { visible: true, executable: true, availability: { status: 'available', reason: null } };
}

/**
 * The purchase gate shared by quotes and orders, in the order the catalogue endpoints apply it:
 * unknown service or country → SERVICE_UNAVAILABLE; home country may not buy there →
 * SERVICE_COUNTRY_NOT_ELIGIBLE; catalogue maintenance window → MAINTENANCE; not offered or hidden for
 * this customer → SERVICE_UNAVAILABLE; visible but not purchasable → SERVICE_NOT_EXECUTABLE.
 */
export function purchaseRejection(input: { country: string; code: string; customer: CustomerProfile; nowMs: number }): Rejection | null {
  const { country, code, customer } = input;
  if (!isServiceCode(code) || findCountry(country)?.services_enabled !== true) {
    return reject('SERVICE_UNAVAILABLE', `${code} is not offered in ${country}.`);
  }
  if (!serviceEligible(customer.homeCountry, country)) {
    return reject('SERVICE_COUNTRY_NOT_ELIGIBLE', `Customers from ${customer.homeCountry} cannot buy services in ${country}.`);
  }
  if (inMaintenance(country, input.nowMs)) return reject('MAINTENANCE', `The ${country} catalogue is under maintenance.`);
  const service = marketService(country, code);
  if (service === undefined) return reject('SERVICE_UNAVAILABLE', `${code} is not offered in ${country}.`);
  const access = resolveAccess(service, customer);
  if (!access.visible) return reject('SERVICE_UNAVAILABLE', `${code} is not offered in ${country} to this customer (${access.availability.reason ?? 'unavailable'}).`);
  // Visible yet unavailable: no rail serves it for this caller (see unservedReason).
  if (access.availability.status === 'unavailable') {
    return reject('SERVICE_UNAVAILABLE', `${code} is not offered in ${country} in live mode: no connector serves it (${access.availability.reason ?? 'unavailable'}).`);
  }
  if (!access.executable) return reject('SERVICE_NOT_EXECUTABLE', `${code} in ${country} cannot be bought now (${access.availability.status}: ${access.availability.reason ?? ''}).`);
  return null;
}

export interface CatalogueItem {
  service_code: string;
  title: string;
  description: string;
  icon: string;
  icon_url: string | null;
  category: string;
  sort_order: number;
  state: MarketService['state'];
  access: { visible: boolean; executable: boolean };
  availability: Access['availability'];
  presentation: object;
  actions: readonly object[];
}

/** The catalogue of a service country as a customer sees it, in display order; hidden items omitted. */
export function catalogueFor(country: string, customer: CustomerProfile): CatalogueItem[] {
  const items: CatalogueItem[] = [];
  for (const entry of countryContext(country)?.services ?? []) {
    const service = marketService(country, entry.service_code);
    if (service === undefined) continue;
    const access = resolveAccess(service, customer);
    if (!access.visible) continue;
    items.push({
      service_code: service.code,
      title: entry.title,
      description: entry.description,
      icon: entry.icon,
      icon_url: null,
      category: service.category,
      sort_order: entry.sort_order,
      state: service.state,
      access: { visible: access.visible, executable: access.executable },
      availability: access.availability,
      presentation: service.presentation,
      actions: service.actions,
    });
  }
  return items;
}

/** At least this many plans in at least two categories make the picker tabs; anything smaller is a select. */
export const PICKER_TABS_ITEMS_MIN = 8;

export function pickerFor(plans: readonly Plan[]): { picker: 'tabs' | 'select'; categories: string[] } {
  const present = new Set(plans.map((p) => p.category));
  const categories = PLAN_CATEGORIES.filter((c) => present.has(c));
  return { picker: plans.length >= PICKER_TABS_ITEMS_MIN && categories.length >= 2 ? 'tabs' : 'select', categories };
}

const PHONE_FIELD_PATTERN = '^\\+?[0-9][0-9 ]{5,19}$';
const EMAIL_PATTERN = /^[^\s@]{1,64}@[^\s@]{1,190}\.[^\s@]{2,63}$/;

/** Why an account_ref does not fit the service's recipient format, or null when it fits. */
export function accountRefProblem(service: MarketService, accountRef: string): string | null {
  if (service.recipient === 'email') return EMAIL_PATTERN.test(accountRef) ? null : 'account_ref must be the recipient email address.';
  if (service.accountPattern === null || service.account === null) return null;
  return service.accountPattern.test(accountRef) ? null : `account_ref is not a valid ${service.account.label.toLowerCase()} (${service.account.hint}).`;
}

function formSchema(service: MarketService): object {
  const properties: Record<string, object> = {};
  const required: string[] = [];
  const add = (field: string, schema: object): void => {
    properties[field] = schema;
    required.push(field);
  };
  for (const step of service.steps) {
    switch (step) {
      case 'operator':
        add('operator_code', { type: 'string', title: 'Operator', enum: operatorsOf(service.country, service.code).map((o) => o.code) });
        break;
      case 'plan':
        add('product_code', { type: 'string', title: 'Plan', description: `A plan code from GET /v1/services/${service.code}/plans` });
        break;
      case 'variant':
        add('meter_type', { type: 'string', title: 'Meter type', enum: variantsOf(service.country, service.code).map((v) => v.code) });
        break;
      case 'phone':
        add('phone', { type: 'string', title: 'Phone number', description: `A mobile number in ${service.country}, national or E.164`, pattern: PHONE_FIELD_PATTERN });
        break;
      case 'account_ref':
        add('account_ref', { type: 'string', title: service.account?.label ?? 'Account', description: service.account?.hint ?? '', ...(service.account === null ? {} : { pattern: service.account.pattern }) });
        break;
      case 'email':
        add('account_ref', { type: 'string', title: 'Recipient email', format: 'email', maxLength: 254 });
        break;
      case 'amount':
        add('provider_cost_minor', { type: 'integer', title: `Amount (${service.currency} minor units)`, minimum: service.minAmountMinor, maximum: service.maxAmountMinor });
        break;
    }
  }
  return { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties, required };
}

function rulesOf(service: MarketService): object[] {
  const rules: object[] = [{
    field: 'provider_cost_minor', rule: 'range', min_amount_minor: service.minAmountMinor, max_amount_minor: service.maxAmountMinor, currency: service.currency,
    message: `Amounts run from ${service.minAmountMinor} to ${service.maxAmountMinor} ${service.currency} minor units.`,
  }];
  if (service.pricing === 'fixed') rules.push({ field: 'provider_cost_minor', rule: 'equals_plan_amount', message: "Send the selected plan's amount_minor as provider_cost_minor." });
  if (service.account !== null) rules.push({ field: 'account_ref', rule: 'pattern', pattern: service.account.pattern, message: service.account.hint });
  if (service.recipient === 'email') rules.push({ field: 'account_ref', rule: 'email', message: 'The voucher is sent to this address.' });
  if (service.recipient === 'phone') rules.push({ field: 'phone', rule: 'phone_country', country: service.country, message: `A mobile number registered in ${service.country}.` });
  if (service.requiresValidation) {
    rules.push({ field: 'validation_snapshot', rule: 'validate_first', message: `Call POST /v1/services/${service.code}/validate and pass its result as validation_snapshot.` });
  }
  if (service.kycLevelMin > 0) rules.push({ field: null, rule: 'kyc_level_min', kyc_level_min: service.kycLevelMin, message: `Customers need KYC level ${service.kycLevelMin}.` });
  return rules;
}

/** GET /v1/services/{code}: everything a client needs to collect inputs and purchase. */
export function serviceDefinition(service: MarketService, customer: CustomerProfile): object {
  const country = findCountry(service.country);
  const entry = countryContext(service.country)?.services.find((s) => s.service_code === service.code);
  const access = resolveAccess(service, customer);
  return {
    service_code: service.code,
    country_code: service.country,
    title: entry?.title ?? service.code,
    description: entry?.description ?? '',
    icon: entry?.icon ?? '',
    category: service.category,
    pricing: service.pricing,
    currency: service.currency,
    recipient: service.recipient,
    state: service.state,
    access: { visible: access.visible, executable: access.executable },
    availability: access.availability,
    steps: service.steps,
    requires_validation: service.requiresValidation,
    limits: { min_amount_minor: service.minAmountMinor, max_amount_minor: service.maxAmountMinor, currency: service.currency, kyc_level_min: service.kycLevelMin },
    country_context: country === undefined ? null : {
      code: country.code, name: country.name, currency_code: country.currency_code, currency_symbol: country.currency_symbol,
      phone_code: country.phone_code, locale: country.locale, timezone: country.timezone, flag_emoji: country.flag_emoji,
    },
    form_schema: formSchema(service),
    rules: rulesOf(service),
  };
}
