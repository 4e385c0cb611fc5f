// The services catalogue: which service each country offers, its operators, plans, variants, fees,
// promotions, who may buy where, and when a country's catalogue is under maintenance.
// Any thread; pure lookups over the frozen reference data of services-data.ts.
// Invariant: money here is integer minor units of the service country's currency; fees and discounts
// follow the one fee rule of src/money/fee.ts (bigint, rounded down), so no float touches an amount.
import { getCountryCallingCode, isSupportedCountry } from 'libphonenumber-js';
import {
  ELIGIBILITY,
  MARKETS,
  OPEN_AMOUNT_PLAN_CODE,
  PROMOTIONS,
  SERVICE_CODES,
  type MarketService,
  type PlanKind,
  type PlanRecord,
} from './services-data.ts';
import { bpsOfMinor, feeMinor, type FeeRule } from '../money/fee.ts';
import { assertPositiveMinor } from '../money/minor.ts';

export type ServiceCode = 'airtime' | 'data' | 'electricity' | 'water' | 'internet' | 'tv' | 'betting' | 'gift_cards' | 'education' | 'insurance';

export interface Operator { code: string; title: string; service_code: string; country: string }

export interface Plan {
  code: string;
  title: string;
  /** Null on an open-amount plan listed without an operator: it is every operator's. */
  operator_code: string | null;
  service_code: string;
  country: string;
  amount_minor: number | null;
  currency: string;
  /** Null when the plan has no validity (an open amount). */
  validity: string | null;
  category: 'daily' | 'weekly' | 'monthly' | 'others';
  pricing: 'fixed' | 'open';
}

export interface Variant { code: string; title: string }

export interface CountryService {
  code: ServiceCode;
  country: string;
  currency: string;
  pricing: 'fixed' | 'open';
  state: 'active' | 'coming_soon' | 'maintenance' | 'unavailable';
  requiresValidation: boolean;
  minAmountMinor: number;
  maxAmountMinor: number;
  recipient: 'phone' | 'meter' | 'account' | 'smartcard' | 'email' | 'candidate' | 'policy';
}

export { OPEN_AMOUNT_PLAN_CODE, SERVICE_CODES, SERVICE_PAYMENT_METHODS, PLAN_CATEGORIES } from './services-data.ts';
export type { MarketService, PlanKind, Step, ServicePaymentMethod } from './services-data.ts';

const DAY_MS = 86_400_000;
const MINUTE_MS = 60_000;

export function isServiceCode(code: string): code is ServiceCode {
  return (SERVICE_CODES as readonly string[]).includes(code);
}

// Plain CountryService records (no RegExp, no catalogue detail), safe to copy into events and replies.
const COUNTRY_SERVICES: ReadonlyMap<string, CountryService> = new Map(
  [...MARKETS.values()].flatMap((market) => [...market.services.values()].map((s): [string, CountryService] => [
    `${s.country}:${s.code}`,
    Object.freeze({
      code: s.code, country: s.country, currency: s.currency, pricing: s.pricing, state: s.state, requiresValidation: s.requiresValidation,
      minAmountMinor: s.minAmountMinor, maxAmountMinor: s.maxAmountMinor, recipient: s.recipient,
    }),
  ])),
);

/** The country's offer of a service (in any state); undefined when the country does not offer it. */
export function countryService(country: string, code: string): CountryService | undefined {
  return COUNTRY_SERVICES.get(`${country}:${code}`);
}

/** countryService with the catalogue detail (steps, audience, KYC level, account rule, presentation). */
export function marketService(country: string, code: string): MarketService | undefined {
  return isServiceCode(code) ? MARKETS.get(country)?.services.get(code) : undefined;
}

/** Every service a country offers, in any state (display order comes from the country context). */
export function marketServices(country: string): readonly MarketService[] {
  return [...(MARKETS.get(country)?.services.values() ?? [])];
}

/** Whether a country sells services at all (has a market in data/reference/services). */
export function isServiceMarket(country: string): boolean {
  return MARKETS.has(country);
}

/** May a customer whose home country is `homeCountry` buy in `serviceCountry`? */
export function serviceEligible(homeCountry: string, serviceCountry: string): boolean {
  return ELIGIBILITY.get(homeCountry)?.includes(serviceCountry) ?? false;
}

/** The service countries open to customers of a home country, home market first; [] when none. */
export function eligibleServiceCountries(homeCountry: string): readonly string[] {
  return ELIGIBILITY.get(homeCountry) ?? [];
}

export function operatorsOf(country: string, code: ServiceCode): readonly Operator[] {
  return (MARKETS.get(country)?.operators.get(code) ?? []).map(({ code: operatorCode, title, service_code, country: where }) => ({ code: operatorCode, title, service_code, country: where }));
}

export function findOperator(country: string, code: ServiceCode, operatorCode: string): Operator | undefined {
  return operatorsOf(country, code).find((operator) => operator.code === operatorCode);
}

/**
 * The one synthetic plan of an open-amount service: the customer enters provider_cost_minor. It is the
 * same for every operator; `operatorCode` only scopes the item (null when no operator is named, as
 * the listing's own operator_code is). It has no validity: null, one value for "none" (issue #25).
 */
export function openAmountPlan(service: CountryService, operatorCode: string | null): Plan {
  return {
    code: OPEN_AMOUNT_PLAN_CODE, title: 'Enter an amount', operator_code: operatorCode, service_code: service.code,
    country: service.country, amount_minor: null, currency: service.currency, validity: null, category: 'others', pricing: 'open',
  };
}

/** Plans of one kind; an open-amount service answers its synthetic plan for 'plans' (and nothing else). */
export function plansOfKind(country: string, code: ServiceCode, operatorCode: string | null, kind: PlanKind): readonly Plan[] {
  const service = marketService(country, code);
  if (service === undefined) return [];
  if (service.pricing === 'open') return kind === 'plans' ? [openAmountPlan(service, operatorCode)] : [];
  const plans = MARKETS.get(country)?.plans.get(code) ?? [];
  return plans.filter((p) => p.kind === kind && (operatorCode === null || p.operator_code === operatorCode)).map(planView);
}

/** Sellable plans (kind 'plans'); `null` operator: every operator's. */
export function plansOf(country: string, code: ServiceCode, operatorCode: string | null): readonly Plan[] {
  return plansOfKind(country, code, operatorCode, 'plans');
}

/** A plan or add-on package by code (codes are unique per country and service); open_amount on open-amount services. */
export function findPlan(country: string, code: ServiceCode, planCode: string): Plan | undefined {
  const service = marketService(country, code);
  if (service === undefined) return undefined;
  if (service.pricing === 'open') return planCode === OPEN_AMOUNT_PLAN_CODE ? openAmountPlan(service, null) : undefined;
  const plan = MARKETS.get(country)?.plans.get(code)?.find((p) => p.code === planCode);
  return plan === undefined ? undefined : planView(plan);
}

function planView(plan: PlanRecord): Plan {
  const { kind: _kind, ...view } = plan;
  return view;
}

export function variantsOf(country: string, code: ServiceCode): readonly Variant[] {
  return MARKETS.get(country)?.variants.get(code) ?? [];
}

/** The payment methods a service accepts in a country (wallet, card, bank_transfer at most), in that order. */
export function acceptedPaymentMethods(country: string, code: ServiceCode): readonly string[] {
  return [...(MARKETS.get(country)?.fees.get(code)?.keys() ?? [])];
}

export function serviceFeeRule(country: string, code: ServiceCode, paymentMethod: string): FeeRule | undefined {
  return MARKETS.get(country)?.fees.get(code)?.get(paymentMethod);
}

/**
 * Service fee in minor units of the service country's currency, on provider_cost_minor (also in that
 * currency), under the fee rule of src/money/fee.ts charged on top: flat_minor + floor(amount ×
 * percent_bps / 10 000), then capped at cap_minor. Rounding down leaves the fraction of a minor unit
 * with the customer. Throws RangeError when the amount is not a positive safe integer or the service
 * does not accept the method in that country (check acceptedPaymentMethods first): charging nothing by
 * default would silently give fees away.
 */
export function serviceFeeMinor(country: string, code: ServiceCode, paymentMethod: string, amountMinor: number): number {
  assertPositiveMinor(amountMinor);
  const rule = serviceFeeRule(country, code, paymentMethod);
  if (rule === undefined) throw new RangeError(`${code} in ${country} does not accept ${paymentMethod}`);
  return feeMinor(rule, amountMinor, 'on_top');
}

/**
 * Discount of a promotion code (case-insensitive) on provider_cost_minor: floor(amount × percent_bps /
 * 10 000), capped at the code's cap for the service country and never above the amount. Undefined when
 * the code is unknown or does not apply to this service in this country. Throws RangeError on an amount
 * that is not a positive safe integer.
 */
export function promotionDiscountMinor(promotionCode: string, country: string, code: ServiceCode, amountMinor: number): number | undefined {
  assertPositiveMinor(amountMinor);
  const promotion = PROMOTIONS.get(promotionCode.trim().toUpperCase());
  if (promotion === undefined || !promotion.services.has(code)) return undefined;
  const cap = promotion.capMinor.get(country);
  if (cap === undefined || marketService(country, code) === undefined) return undefined;
  return Math.min(bpsOfMinor(amountMinor, promotion.percentBps), cap, amountMinor);
}

function minuteOfDay(nowMs: number): number {
  return Math.floor((((nowMs % DAY_MS) + DAY_MS) % DAY_MS) / MINUTE_MS);
}

function windowAt(country: string, nowMs: number): { endMinute: number; reason: string } | undefined {
  const minute = minuteOfDay(nowMs);
  return MARKETS.get(country)?.windows.find((w) =>
    w.startMinute < w.endMinute ? minute >= w.startMinute && minute < w.endMinute : minute >= w.startMinute || minute < w.endMinute);
}

/** Is the country's catalogue inside a daily maintenance window (UTC, end exclusive) at `nowMs`? */
export function inMaintenance(country: string, nowMs: number): boolean {
  return windowAt(country, nowMs) !== undefined;
}

/** When the current maintenance window ends (ms), or null outside any window. */
export function maintenanceEndsAtMs(country: string, nowMs: number): number | null {
  const window = windowAt(country, nowMs);
  if (window === undefined) return null;
  const dayStart = nowMs - (((nowMs % DAY_MS) + DAY_MS) % DAY_MS);
  const end = dayStart + window.endMinute * MINUTE_MS;
  return end > nowMs ? end : end + DAY_MS;
}

/** The next moment (ms, ≥ nowMs) a maintenance window of the country starts; null when it has none. */
export function nextMaintenanceStartMs(country: string, nowMs: number): number | null {
  const windows = MARKETS.get(country)?.windows ?? [];
  const dayStart = nowMs - (((nowMs % DAY_MS) + DAY_MS) % DAY_MS);
  let next: number | null = null;
  for (const w of windows) {
    let start = dayStart + w.startMinute * MINUTE_MS;
    if (start < nowMs) start += DAY_MS;
    if (next === null || start < next) next = start;
  }
  return next;
}

/**
 * The operator owning a number's prefix (longest national prefix wins), for services sold to phones.
 * `e164` must be in E.164 form of the service country; ported numbers keep their original operator.
 */
export function operatorForPhone(country: string, code: ServiceCode, e164: string): Operator | undefined {
  if (!isSupportedCountry(country)) return undefined;
  const callingPrefix = `+${getCountryCallingCode(country)}`;
  if (!e164.startsWith(callingPrefix)) return undefined;
  const national = `0${e164.slice(callingPrefix.length)}`;
  let best: { operatorCode: string; length: number } | undefined;
  for (const operator of MARKETS.get(country)?.operators.get(code) ?? []) {
    for (const prefix of operator.prefixes) {
      if (national.startsWith(prefix) && (best === undefined || prefix.length > best.length)) best = { operatorCode: operator.code, length: prefix.length };
    }
  }
  return best === undefined ? undefined : findOperator(country, code, best.operatorCode);
}

/** The promotion codes configured, for documentation and tests. */
export function promotionCodes(): readonly string[] {
  return [...PROMOTIONS.keys()];
}
