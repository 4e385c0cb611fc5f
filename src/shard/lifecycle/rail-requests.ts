// The rail requests of an entity's attempt, built once for submit, requery, recovery and the sandbox
// rail's inline answer: a collection, a payout, a purchase; and which collection methods and payout
// rails serve a customer. Runs inside shard workers; pure. Invariant: a request names the entity and
// attempt as `<id>:<attempt>` and goes to the rail rails.ts chooses (never the sandbox for live money).
import { reject, type Rejection } from '../../errors.ts';
import { methodRules, type MethodRule } from '../../catalogue/countries.ts';
import { coverageGeneration, isLiveOwner, NO_LIVE_CONNECTOR, railServes } from '../../rails/coverage.ts';
import type { RailOp } from '../../rails/rail.ts';
import type { Beneficiary, Customer, Payment, ServiceOrder, Transfer } from '../state.ts';
import { railEffect, type Effect, type HandlerContext } from './context.ts';

export type MethodChoice = Readonly<MethodRule & { selectable: boolean; reason: string | null }>;

/**
 * The choices of each (country, KYC level, live or test) once computed: they depend on nothing else
 * (the country's rules are fixed, and a live method's coverage changes only with setConnectors, which
 * empties this). Every payment asked for them, building a copy of each rule per request.
 */
const choicesByKey = new Map<string, readonly MethodChoice[]>();
let choicesGeneration = -1;

/** The collection methods of the customer's country, each with whether this customer may use it and why not. */
export function methodsFor(customer: Customer): readonly MethodChoice[] {
  if (choicesGeneration !== coverageGeneration()) {
    choicesByKey.clear();
    choicesGeneration = coverageGeneration();
  }
  const live = isLiveOwner(customer.owner);
  const key = `${customer.countryCode} ${customer.kycLevel} ${live ? 'live' : 'test'}`;
  let choices = choicesByKey.get(key);
  if (choices === undefined) {
    choices = Object.freeze(methodRules(customer.countryCode).map((rule) => {
      let reason: string | null = null;
      if (!rule.selectable) reason = 'funding_instrument';
      else if (!rule.enabled) reason = 'not_enabled_in_country';
      else if (customer.kycLevel < rule.kyc_level_min) reason = 'kyc_level_too_low';
      else if (rule.method !== 'wallet' && !railServes(customer.owner, 'collection', { method: rule.method, country: customer.countryCode })) reason = NO_LIVE_CONNECTOR;
      return Object.freeze(Object.assign({}, rule, { selectable: reason === null, reason }));
    }));
    choicesByKey.set(key, choices);
  }
  return choices;
}

/** A collection call to the rail serving the method (null when none does). */
export function collectionCall(ctx: HandlerContext, payment: Payment, customer: Customer, attempt: number, op: RailOp, dueAtMs?: number): Effect | null {
  const scope = { method: payment.method, country: customer.countryCode, currency: payment.currency };
  // A requery repeats the request: a connector keys it by reference; the sandbox rail answers from it.
  const payload = {
    method: payment.method,
    amount_minor: payment.amountMinor,
    currency: payment.currency,
    customer: { id: customer.id, name: customer.name, email: customer.email, phone: customer.phone, country: customer.countryCode },
  };
  return railEffect(ctx, { owner: payment.owner, kind: 'collection', scope }, { id: payment.id, attempt, op, payload, dueAtMs });
}

/**
 * Why no payout rail serves this beneficiary, or null: live payouts to a bank account or mobile wallet
 * need a connector serving that payout rail (which also resolves the account name); without one the
 * account cannot be verified: 422 VERIFICATION_FAILED.
 */
export function payoutRailRejection(owner: string, type: Beneficiary['type'], country: string, currency: string): Rejection | null {
  if (type === 'wallet') return null;
  const scope = { method: type, country, currency };
  if (railServes(owner, 'payout', scope) && railServes(owner, 'resolve', scope)) return null;
  return reject('VERIFICATION_FAILED', `No live payout rail serves ${type} payouts in ${currency} to ${country}: the operator has not configured a connector for it.`);
}

/**
 * A payout call to the rail serving the beneficiary (null when none does): submit carries the payout;
 * requery asks about the same reference. `dueAtMs` defers it on the owner's clock.
 */
export function payoutCall(ctx: HandlerContext, transfer: Transfer, attempt: number, op: RailOp, dueAtMs?: number): Effect | null {
  const beneficiary = ctx.state.beneficiaries.get(transfer.beneficiaryId);
  if (beneficiary === undefined || beneficiary.type === 'wallet') return null;
  const scope = { method: beneficiary.type, country: beneficiary.country, currency: beneficiary.currency };
  // A requery repeats the request: a connector keys it by reference; the sandbox rail answers from it.
  const payload = {
    amount_minor: transfer.destinationAmountMinor,
    currency: transfer.destinationCurrency,
    beneficiary: { type: beneficiary.type, country: beneficiary.country, bank_code: beneficiary.bankCode, account_number: beneficiary.accountNumber, account_name: beneficiary.accountName },
    narration: transfer.narration,
  };
  return railEffect(ctx, { owner: transfer.owner, kind: 'payout', scope }, { id: transfer.id, attempt, op, payload, dueAtMs });
}

export const recipientOf = (order: ServiceOrder): string => order.accountRef ?? order.phone ?? '';

/**
 * A purchase (or requery of one) at the rail serving the service and country; null when none does.
 * Requeries carry the purchase too: the sandbox rail, which keeps no memory, answers from it.
 */
export function fulfilmentCall(ctx: HandlerContext, order: ServiceOrder, attempt: number, op: RailOp, dueAtMs?: number): Effect | null {
  const scope = { service: order.serviceCode, country: order.countryCode, currency: order.destinationCurrency };
  const payload = {
    service_code: order.serviceCode,
    country_code: order.countryCode,
    operator_code: order.operatorCode,
    product_code: order.productCode,
    meter_type: order.meterType,
    recipient: recipientOf(order),
    amount_minor: order.providerCostMinor,
    currency: order.destinationCurrency,
  };
  return railEffect(ctx, { owner: order.owner, kind: 'fulfilment', scope }, { id: order.id, attempt, op, payload, dueAtMs });
}
