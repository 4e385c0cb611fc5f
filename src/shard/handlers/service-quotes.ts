// Service quotes and the checks a quote and an order share: the service is offered and executable in
// the service country, the customer may buy there, inputs match the catalogue, and pricing
// (fee per service, country and method; promotions; cross-currency at a locked rate). Shard workers.
// Invariant: same-currency customer_amount_minor = provider_cost_minor + fee_minor; cross-currency
// customer_amount_minor = converted_amount_minor + fee_minor; discounts come off the fee.
import { reject, type Rejection } from '../../errors.ts';
import { findCountry } from '../../catalogue/countries.ts';
import { costInSourceMinor, formatRate } from '../../catalogue/fx.ts';
import { purchaseRejection } from '../../catalogue/services-resolve.ts';
import {
  acceptedPaymentMethods,
  countryService,
  findOperator,
  findPlan,
  isServiceCode,
  promotionDiscountMinor,
  serviceFeeMinor,
  variantsOf,
  type CountryService,
} from '../../catalogue/services.ts';
import type { Command, ServiceRequest } from '../protocol.ts';
import type { Customer, ServiceQuote } from '../state.ts';
import { customerFor, isRejection, okReply, rejected, type HandlerContext, type Outcome } from './common.ts';

export const SERVICE_QUOTE_TTL_MS = 300_000;
export const SERVICE_PAYMENT_METHODS = ['wallet', 'card', 'bank_transfer'] as const;
const iso = (ms: number): string => new Date(ms).toISOString();

export interface Pricing {
  sourceCurrency: string;
  destinationCurrency: string;
  convertedAmountMinor: number;
  feeMinor: number;
  discountMinor: number;
  customerAmountMinor: number;
  fxRate: string | null;
  crossCurrency: boolean;
}

/**
 * Everything about the service itself that can be refused before pricing: the catalogue's whole
 * purchase gate (offered, eligible, visible, executable for this customer, not in a maintenance
 * window), then the inputs against the catalogue.
 */
export function serviceRejection(customer: Customer, req: ServiceRequest, options: { productCode?: string | null; forOrder: boolean; nowMs: number }): Rejection | CountryService {
  const gate = purchaseRejection({ country: req.countryCode, code: req.serviceCode, customer: { homeCountry: customer.countryCode, kycLevel: customer.kycLevel }, nowMs: options.nowMs });
  if (gate !== null) return gate;
  const svc = countryService(req.countryCode, req.serviceCode);
  if (svc === undefined || !isServiceCode(req.serviceCode)) return reject('SERVICE_UNAVAILABLE', `${req.serviceCode} is not offered in ${req.countryCode}.`);
  if (req.paymentMethod !== null && !acceptedPaymentMethods(svc.country, svc.code).includes(req.paymentMethod)) {
    return reject('METHOD_NOT_SELECTABLE', `${svc.code} in ${svc.country} cannot be paid by ${req.paymentMethod}.`);
  }
  if (req.currency !== svc.currency) return reject('VALIDATION', `currency must be ${svc.currency}, the currency of provider_cost_minor in ${req.countryCode}.`);
  if (req.providerCostMinor < svc.minAmountMinor || req.providerCostMinor > svc.maxAmountMinor) {
    return reject('VALIDATION', `provider_cost_minor must be between ${svc.minAmountMinor} and ${svc.maxAmountMinor} ${svc.currency}.`);
  }
  if (req.operatorCode !== null && findOperator(req.countryCode, svc.code, req.operatorCode) === undefined) {
    return reject('VALIDATION', `operator_code ${req.operatorCode} is not an operator of ${svc.code} in ${req.countryCode}.`);
  }
  const variants = variantsOf(req.countryCode, svc.code);
  if (req.meterType !== null && !variants.some((v) => v.code === req.meterType)) return reject('VALIDATION', `meter_type ${req.meterType} is not a variant here.`);
  if (!options.forOrder) return svc;
  if (variants.length > 0 && req.meterType === null) return reject('VALIDATION', `meter_type is required (${variants.map((v) => v.code).join(', ')}).`);
  if (svc.recipient === 'phone' ? req.phone === null && req.accountRef === null : req.accountRef === null) {
    return reject('VALIDATION', svc.recipient === 'phone' ? 'phone is required.' : 'account_ref is required.');
  }
  if (svc.pricing === 'fixed') {
    if (options.productCode == null) return reject('VALIDATION', 'product_code is required for a fixed-price service.');
    const plan = findPlan(req.countryCode, svc.code, options.productCode);
    if (plan === undefined) return reject('VALIDATION', `product_code ${options.productCode} is not a plan of ${svc.code} in ${req.countryCode}.`);
    if (req.operatorCode !== null && plan.operator_code !== req.operatorCode) return reject('VALIDATION', 'product_code belongs to another operator.');
    if (plan.amount_minor !== req.providerCostMinor) return reject('VALIDATION', `provider_cost_minor must be the plan's amount_minor (${plan.amount_minor}).`);
  }
  return svc;
}

/**
 * Fees and promotions are configured in the service country's currency and applied to the provider
 * cost there; for a customer paying in another currency every amount is then converted at the locked
 * rate (rounded up: the house never delivers value it was not paid for).
 */
export function priceService(customer: Customer, svc: CountryService, req: ServiceRequest): Pricing | Rejection {
  const source = findCountry(customer.countryCode)?.currency_code ?? svc.currency;
  const cross = source !== svc.currency;
  const method = req.paymentMethod ?? acceptedPaymentMethods(svc.country, svc.code)[0] ?? 'wallet';
  const baseFeeDest = serviceFeeMinor(svc.country, svc.code, method, req.providerCostMinor);
  let discountDest = 0;
  if (req.promotionCode !== null) {
    const found = promotionDiscountMinor(req.promotionCode, svc.country, svc.code, req.providerCostMinor);
    if (found === undefined) return reject('VALIDATION', `promotion_code ${req.promotionCode} is not valid for ${svc.code} in ${svc.country}.`);
    discountDest = Math.min(found, baseFeeDest);
  }
  const toSource = (amountMinor: number): number => (!cross || amountMinor === 0 ? amountMinor : costInSourceMinor(amountMinor, svc.currency, source).amountMinor);
  const converted = toSource(req.providerCostMinor);
  const fee = toSource(baseFeeDest - discountDest);
  return {
    sourceCurrency: source,
    destinationCurrency: svc.currency,
    convertedAmountMinor: converted,
    feeMinor: fee,
    discountMinor: toSource(discountDest),
    customerAmountMinor: converted + fee,
    fxRate: cross ? formatRate(costInSourceMinor(1, svc.currency, source).rate) : null,
    crossCurrency: cross,
  };
}

export function serviceQuoteView(q: ServiceQuote): object {
  return {
    quote_id: q.id,
    object: 'service_quote',
    service_code: q.serviceCode,
    country_code: q.countryCode,
    source_currency: q.sourceCurrency,
    destination_currency: q.destinationCurrency,
    destination_amount_minor: q.providerCostMinor,
    converted_amount_minor: q.convertedAmountMinor,
    fee_minor: q.feeMinor,
    customer_amount_minor: q.customerAmountMinor,
    currency: q.sourceCurrency,
    provider_cost_minor: q.providerCostMinor,
    fx_rate: q.fxRate,
    cross_currency: q.fxRate !== null,
    promotion_discount_minor: q.promotionDiscountMinor,
    promotion_code: q.promotionCode,
    payment_method: q.paymentMethod,
    expires_at: iso(q.expiresAtMs),
  };
}

export function createServiceQuote(ctx: HandlerContext, cmd: Command & { k: 'squote.create' }): Outcome {
  const req = cmd.body;
  const customer = customerFor(ctx, cmd, req.customerId);
  if (isRejection(customer)) return rejected(customer);
  const svc = serviceRejection(customer, req, { forOrder: false, nowMs: ctx.nowMs });
  if (isRejection(svc)) return rejected(svc);
  const pricing = priceService(customer, svc, req);
  if (isRejection(pricing)) return rejected(pricing);
  const quote: ServiceQuote = {
    id: ctx.mintId(),
    owner: cmd.owner,
    customerId: customer.id,
    countryCode: svc.country,
    serviceCode: svc.code,
    providerCostMinor: req.providerCostMinor,
    destinationCurrency: pricing.destinationCurrency,
    sourceCurrency: pricing.sourceCurrency,
    convertedAmountMinor: pricing.convertedAmountMinor,
    feeMinor: pricing.feeMinor,
    customerAmountMinor: pricing.customerAmountMinor,
    fxRate: pricing.fxRate,
    promotionCode: req.promotionCode,
    promotionDiscountMinor: pricing.discountMinor,
    paymentMethod: req.paymentMethod,
    phone: req.phone,
    accountRef: req.accountRef,
    expiresAtMs: ctx.nowMs + SERVICE_QUOTE_TTL_MS,
    usedBy: null,
    createdAtMs: ctx.nowMs,
  };
  return { events: [{ t: 'squote.created', quote }], reply: (state) => okReply(200, serviceQuoteView(state.serviceQuotes.get(quote.id)!)) };
}

/** The locked pricing of a quote for this order, or why the quote cannot be used. */
export function boundQuote(ctx: HandlerContext, cmd: Command, req: ServiceRequest, quoteId: string): Pricing | Rejection {
  const quote = ctx.state.serviceQuotes.get(quoteId);
  if (quote === undefined || quote.owner !== cmd.owner || quote.customerId !== req.customerId) {
    return reject('QUOTE_MISMATCH', 'quote_id does not name a quote of this customer.');
  }
  if (quote.usedBy !== null) return reject('QUOTE_EXPIRED', 'This quote has already been used by an order; re-quote.');
  if (ctx.nowMs >= quote.expiresAtMs) return reject('QUOTE_EXPIRED', `The quote expired at ${iso(quote.expiresAtMs)}; re-quote.`);
  const mismatch =
    quote.serviceCode !== req.serviceCode ||
    quote.countryCode !== req.countryCode ||
    quote.providerCostMinor !== req.providerCostMinor ||
    quote.destinationCurrency !== req.currency ||
    (quote.paymentMethod !== null && quote.paymentMethod !== req.paymentMethod) ||
    (quote.phone !== null && quote.phone !== req.phone) ||
    (quote.accountRef !== null && quote.accountRef !== req.accountRef);
  if (mismatch) return reject('QUOTE_MISMATCH', 'The quote does not match this order’s service, country, amount, method or recipient; re-quote.');
  return {
    sourceCurrency: quote.sourceCurrency,
    destinationCurrency: quote.destinationCurrency,
    convertedAmountMinor: quote.convertedAmountMinor,
    feeMinor: quote.feeMinor,
    discountMinor: quote.promotionDiscountMinor,
    customerAmountMinor: quote.customerAmountMinor,
    fxRate: quote.fxRate,
    crossCurrency: quote.fxRate !== null,
  };
}
