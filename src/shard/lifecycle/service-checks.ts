// The checks a service quote and a service order share: the service is offered and executable in the
// service country, the customer may buy there, inputs match the catalogue, the recipient, pricing (fee
// per service, country and method; promotions; cross-currency at a locked rate) and a quote's binding.
// Runs inside shard workers. Invariant: same-currency customer_amount_minor = provider_cost_minor +
// fee_minor; cross-currency customer_amount_minor = converted_amount_minor + fee_minor; discounts come off the fee.
import { reject, type Rejection } from '../../errors.ts';
import { findCountry } from '../../catalogue/countries.ts';
import { costInSourceMinor, costInSourceMinorChecked } from '../../catalogue/fx.ts';
import { formatRate, parseRate } from '../../money/convert.ts';
import { purchaseRejection } from '../../catalogue/services-resolve.ts';
import { validatePhone } from '../../catalogue/services-phone.ts';
import { checkRecipient, snapshotRejection, type ValidationSnapshot } from '../../catalogue/services-recipient.ts';
import {
  acceptedPaymentMethods,
  countryService,
  findOperator,
  findPlan,
  isServiceCode,
  marketService,
  promotionDiscountMinor,
  serviceFeeMinor,
  variantsOf,
  SERVICE_PAYMENT_METHODS,
  type CountryService,
} from '../../catalogue/services.ts';
import { fulfilmentGap } from '../../rails/coverage.ts';
import type { Command, ServiceRequest } from '../protocol.ts';
import type { Customer } from '../state.ts';
import { iso } from '../views.ts';
import { isRejection, type HandlerContext } from './context.ts';
import { methodsFor } from './rail-requests.ts';

export interface Pricing {
  /** The payment method whose fee this prices; a quote binds it. */
  paymentMethod: string;
  sourceCurrency: string;
  destinationCurrency: string;
  convertedAmountMinor: number;
  feeMinor: number;
  discountMinor: number;
  /** The promotion whose discount is in `discountMinor` (a quote's, when the order is priced from one). */
  promotionCode: string | null;
  customerAmountMinor: number;
  fxRate: string | null;
  crossCurrency: boolean;
}

/**
 * Everything about the service itself that can be refused before pricing: the catalogue's whole
 * purchase gate (offered, eligible, visible, executable for this customer, not in a maintenance
 * window), then the inputs against the catalogue.
 */
export function serviceRejection(customer: Customer, req: ServiceRequest, options: { forOrder: boolean; nowMs: number }): Rejection | CountryService {
  const gate = purchaseRejection({ country: req.countryCode, code: req.serviceCode, customer: { homeCountry: customer.countryCode, kycLevel: customer.kycLevel, unservedReason: fulfilmentGap(customer.owner) }, nowMs: options.nowMs });
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
  // A plan, when named (a quote may name it; a fixed-price order must), fixes the amount.
  if (req.productCode !== null) {
    const plan = findPlan(req.countryCode, svc.code, req.productCode);
    if (plan === undefined) return reject('VALIDATION', `product_code ${req.productCode} is not a plan of ${svc.code} in ${req.countryCode}.`);
    // The open-amount plan (no operator of its own) is every operator's.
    if (req.operatorCode !== null && plan.operator_code !== null && plan.operator_code !== req.operatorCode) return reject('VALIDATION', 'product_code belongs to another operator.');
    if (svc.pricing === 'fixed' && plan.amount_minor !== req.providerCostMinor) return reject('VALIDATION', `provider_cost_minor must be the plan's amount_minor (${plan.amount_minor}).`);
  }
  if (!options.forOrder) return svc;
  if (variants.length > 0 && req.meterType === null) return reject('VALIDATION', `meter_type is required (${variants.map((v) => v.code).join(', ')}).`);
  if (svc.pricing === 'fixed' && req.productCode === null) return reject('VALIDATION', 'product_code is required for a fixed-price service.');
  return svc;
}

/**
 * The method a quote or order is priced for: the one named, else the first the service accepts that
 * this customer can use. A method the customer cannot use is refused here, at quote time, not when the
 * order that relies on the quote arrives.
 */
function pricedMethod(customer: Customer, svc: CountryService, named: string | null): string | Rejection {
  const usable = new Set(methodsFor(customer).filter((m) => m.selectable).map((m) => m.method));
  const accepted = acceptedPaymentMethods(svc.country, svc.code).filter((m) => (SERVICE_PAYMENT_METHODS as readonly string[]).includes(m));
  if (named === null) {
    const first = accepted.find((m) => usable.has(m));
    return first ?? reject('METHOD_NOT_SELECTABLE', `No payment method of ${svc.code} in ${svc.country} is open to this customer.`);
  }
  if (!accepted.includes(named) || !usable.has(named)) return reject('METHOD_NOT_SELECTABLE', `payment_method ${named} cannot pay for ${svc.code} for this customer.`);
  return named;
}

/** The method's min_amount_minor / max_amount_minor (customer's country, paying currency) bound what the customer pays. */
export function methodBoundsRejection(customer: Customer, method: string, customerAmountMinor: number): Rejection | null {
  const rule = methodsFor(customer).find((m) => m.method === method);
  if (rule === undefined) return null;
  if (rule.min_amount_minor !== null && customerAmountMinor < rule.min_amount_minor) {
    return reject('VALIDATION', `customer_amount_minor ${customerAmountMinor} is below the ${method} minimum of ${rule.min_amount_minor}.`);
  }
  if (rule.max_amount_minor !== null && customerAmountMinor > rule.max_amount_minor) {
    return reject('VALIDATION', `customer_amount_minor ${customerAmountMinor} is above the ${method} maximum of ${rule.max_amount_minor}.`);
  }
  return null;
}

/** A phone service's recipient named twice, as two different numbers: refused on quotes and orders alike. */
export const differentNumbers = (): Rejection => reject('VALIDATION', 'phone and account_ref name different numbers; send one recipient.');

/** The recipient as an order stores it: phone in E.164 for phone services, account_ref as checked. */
export interface OrderRecipient {
  phone: string | null;
  accountRef: string | null;
  operatorCode: string;
  meterType: string | null;
}

/**
 * The recipient checks of validate, applied to an order, then the rail's verdict from
 * validation_snapshot when it is about this recipient. Every refusal is the order's 400 VALIDATION
 * (422 VALIDATION_ERROR is validate's own code). The operator is derived from the number (airtime,
 * data) or the only operator when not named.
 */
export function orderRecipient(svc: CountryService, req: ServiceRequest, snapshot: ValidationSnapshot | null): OrderRecipient | Rejection {
  const service = marketService(svc.country, svc.code);
  if (service === undefined) return reject('SERVICE_UNAVAILABLE', `${svc.code} is not offered in ${svc.country}.`);
  const phoneService = service.recipient === 'phone';
  const raw = phoneService ? req.phone ?? req.accountRef : req.accountRef;
  if (raw === null) return reject('VALIDATION', phoneService ? 'phone is required.' : 'account_ref is required.');
  const checked = checkRecipient(service, { recipient: raw, operatorCode: req.operatorCode, meterType: req.meterType, productCode: req.productCode, failureCode: 'VALIDATION' });
  if (isRejection(checked)) return checked;
  if (phoneService && req.phone !== null && req.accountRef !== null && validatePhone(req.accountRef, svc.country, svc.code).normalized !== checked.recipient) {
    return differentNumbers();
  }
  const refused = snapshotRejection(service, checked.recipient, snapshot);
  if (refused !== null) return refused;
  return {
    phone: phoneService ? checked.recipient : req.phone,
    accountRef: phoneService ? (req.accountRef === null ? null : checked.recipient) : checked.recipient,
    operatorCode: checked.operatorCode,
    meterType: checked.meterType,
  };
}

/**
 * Fees and promotions are configured in the service country's currency and applied to the provider
 * cost there; for a customer paying in another currency every amount is then converted at the locked
 * rate (rounded up: the house never delivers value it was not paid for).
 */
export function priceService(customer: Customer, svc: CountryService, req: ServiceRequest): Pricing | Rejection {
  const source = findCountry(customer.countryCode)?.currency_code ?? svc.currency;
  const cross = source !== svc.currency;
  const method = pricedMethod(customer, svc, req.paymentMethod);
  if (isRejection(method)) return method;
  const baseFeeDest = serviceFeeMinor(svc.country, svc.code, method, req.providerCostMinor);
  let discountDest = 0;
  if (req.promotionCode !== null) {
    const found = promotionDiscountMinor(req.promotionCode, svc.country, svc.code, req.providerCostMinor);
    if (found === undefined) return reject('VALIDATION', `promotion_code ${req.promotionCode} is not valid for ${svc.code} in ${svc.country}.`);
    discountDest = Math.min(found, baseFeeDest);
  }
  // A live FX connector's rate for exactly this pair, when the front end brought one; else the reference table's.
  const mid = req.fx !== undefined && 'midRate' in req.fx && req.fx.fromCurrency === svc.currency && req.fx.toCurrency === source ? parseRate(req.fx.midRate) : undefined;
  const toSource = (amountMinor: number): number | null => (!cross || amountMinor === 0 ? amountMinor : (costInSourceMinorChecked(amountMinor, svc.currency, source, mid)?.amountMinor ?? null));
  const converted = toSource(req.providerCostMinor);
  const fee = toSource(baseFeeDest - discountDest);
  const discount = toSource(discountDest);
  if (converted === null || fee === null || discount === null || !Number.isSafeInteger(converted + fee)) {
    return reject('VALIDATION', `provider_cost_minor is too large: with its fee in ${source} it passes the largest amount kobo can hold (${Number.MAX_SAFE_INTEGER} minor units).`);
  }
  const bounds = methodBoundsRejection(customer, method, converted + fee);
  if (bounds !== null) return bounds;
  return {
    paymentMethod: method,
    sourceCurrency: source,
    destinationCurrency: svc.currency,
    convertedAmountMinor: converted,
    feeMinor: fee,
    discountMinor: discount,
    promotionCode: req.promotionCode,
    customerAmountMinor: converted + fee,
    fxRate: cross ? formatRate(costInSourceMinor(1, svc.currency, source, mid).rate) : null,
    crossCurrency: cross,
  };
}

/** The locked pricing of a quote for this order, or why the quote cannot be used. */
export function boundQuote(ctx: HandlerContext, cmd: Command, req: ServiceRequest, quoteId: string, recipient: Pick<OrderRecipient, 'phone' | 'accountRef'>): Pricing | Rejection {
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
    // A quote binds the method whose fee it priced (quotes made before this rule may have none).
    (quote.paymentMethod !== null && quote.paymentMethod !== req.paymentMethod) ||
    (quote.productCode != null && quote.productCode !== req.productCode) ||
    (quote.phone !== null && quote.phone !== recipient.phone) ||
    (quote.accountRef !== null && quote.accountRef !== recipient.accountRef && quote.accountRef !== recipient.phone);
  if (mismatch) return reject('QUOTE_MISMATCH', 'The quote does not match this order’s service, country, amount, method, plan or recipient; re-quote.');
  return {
    paymentMethod: req.paymentMethod ?? quote.paymentMethod ?? '',
    sourceCurrency: quote.sourceCurrency,
    destinationCurrency: quote.destinationCurrency,
    convertedAmountMinor: quote.convertedAmountMinor,
    feeMinor: quote.feeMinor,
    discountMinor: quote.promotionDiscountMinor,
    promotionCode: quote.promotionCode,
    customerAmountMinor: quote.customerAmountMinor,
    fxRate: quote.fxRate,
    crossCurrency: quote.fxRate !== null,
  };
}
