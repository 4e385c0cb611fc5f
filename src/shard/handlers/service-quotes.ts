// Service quotes: create one (priced and checked by lifecycle/service-checks.ts, which orders share) and
// its view. Shard workers.
// Invariant: a quote stores exactly the pricing the checks produced, and lives SERVICE_QUOTE_TTL_MS.
import { isLiveOwner } from '../../rails/coverage.ts';
import { reject, type Rejection } from '../../errors.ts';
import { accountRefProblem } from '../../catalogue/services-resolve.ts';
import { validatePhone } from '../../catalogue/services-phone.ts';
import { marketService, type CountryService } from '../../catalogue/services.ts';
import type { Command, ServiceRequest } from '../protocol.ts';
import type { ServiceQuote } from '../state.ts';
import { customerFor, isRejection, okReply, rejected, type HandlerContext, type Outcome } from '../lifecycle/context.ts';
import { iso } from '../views.ts';
import { differentNumbers, priceService, serviceRejection } from '../lifecycle/service-checks.ts';

export const SERVICE_QUOTE_TTL_MS = 300_000;

/**
 * A quote's recipient, when it names one: checked as the order will check it (400 VALIDATION) and kept
 * normalised, so binding compares like with like.
 */
function quoteRecipient(svc: CountryService, req: ServiceRequest): { phone: string | null; accountRef: string | null } | Rejection {
  const service = marketService(svc.country, svc.code);
  if (service === undefined) return reject('SERVICE_UNAVAILABLE', `${svc.code} is not offered in ${svc.country}.`);
  const normalise = (value: string | null): string | null | Rejection => {
    if (value === null) return null;
    if (service.recipient !== 'phone') {
      const problem = accountRefProblem(service, value.trim());
      return problem === null ? value.trim() : reject('VALIDATION', problem);
    }
    const phone = validatePhone(value, svc.country, svc.code);
    return phone.normalized ?? reject('VALIDATION', `phone is not a reachable ${svc.country} mobile number: ${phone.messages.join(' ')}`);
  };
  const phone = service.recipient === 'phone' ? normalise(req.phone) : req.phone;
  if (isRejection(phone)) return phone;
  const accountRef = normalise(req.accountRef);
  if (isRejection(accountRef)) return accountRef;
  if (service.recipient === 'phone' && phone !== null && accountRef !== null && phone !== accountRef) return differentNumbers();
  return { phone, accountRef };
}

export function serviceQuoteView(q: ServiceQuote): object {
  return {
    quote_id: q.id,
    object: 'service_quote',
    customer_id: q.customerId,
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
    product_code: q.productCode ?? null,
    expires_at: iso(q.expiresAtMs),
  };
}

export function createServiceQuote(ctx: HandlerContext, cmd: Command & { k: 'squote.create' }): Outcome {
  const req = cmd.body;
  const customer = customerFor(ctx, cmd, req.customerId);
  if (isRejection(customer)) return rejected(customer);
  const svc = serviceRejection(customer, req, { forOrder: false, nowMs: ctx.nowMs });
  if (isRejection(svc)) return rejected(svc);
  const recipient = quoteRecipient(svc, req);
  if (isRejection(recipient)) return rejected(recipient);
  const pricing = priceService(customer, svc, req);
  if (isRejection(pricing)) return rejected(pricing);
  // Live money is priced only at an FX connector's rate for this pair (the front end asked it), never
  // at kobo's reference rates. Without one, the front end's lookup said why: no source for the pair
  // (400 VALIDATION) or no usable rate from it (422 FX_QUOTE_UNAVAILABLE).
  const fx = req.fx;
  const liveRate = fx !== undefined && 'midRate' in fx && fx.fromCurrency === pricing.destinationCurrency && fx.toCurrency === pricing.sourceCurrency;
  if (pricing.crossCurrency && isLiveOwner(cmd.owner) && !liveRate) {
    const refusal = fx !== undefined && 'refusal' in fx ? fx.refusal : reject('VALIDATION', `Unsupported pair: no live FX source is configured for ${pricing.destinationCurrency} → ${pricing.sourceCurrency}.`);
    return rejected(reject(refusal.code, refusal.message));
  }
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
    paymentMethod: pricing.paymentMethod,
    productCode: req.productCode,
    phone: recipient.phone,
    accountRef: recipient.accountRef,
    expiresAtMs: ctx.nowMs + SERVICE_QUOTE_TTL_MS,
    usedBy: null,
    createdAtMs: ctx.nowMs,
  };
  return { events: [{ t: 'squote.created', quote }], reply: (state) => okReply(200, serviceQuoteView(state.serviceQuotes.get(quote.id)!)) };
}
