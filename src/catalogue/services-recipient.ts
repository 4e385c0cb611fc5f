// The recipient checks of a service purchase, shared by POST /v1/services/{code}/validate and by service
// quotes and orders: phone validity, country and carrier for phone services, the account_ref format
// (meter, smartcard, account, policy, candidate, email) for the rest, operator and meter type. Any thread.
// Invariant: validate and an order never disagree about a recipient: both run this one function.
import { reject, type Rejection } from '../errors.ts';
import { accountRefProblem } from './services-resolve.ts';
import { validatePhone, type PhoneValidation } from './services-phone.ts';
import { findOperator, findPlan, operatorsOf, variantsOf, type MarketService } from './services.ts';

export interface RecipientInput {
  /** The recipient identifier: the phone for phone services, else the meter, smartcard, account or email. */
  recipient: string;
  operatorCode: string | null;
  meterType: string | null;
  productCode: string | null;
  /**
   * The code of every refusal: validate's own is 422 VALIDATION_ERROR; quotes and orders answer the
   * contract's 400 VALIDATION for the same checks.
   */
  failureCode: RecipientFailureCode;
}

export interface Recipient {
  /** The E.164 form for phone services; the identifier as sent otherwise. */
  recipient: string;
  /** Named, else the phone's network, else the only operator there is. */
  operatorCode: string;
  meterType: string | null;
  productCode: string | null;
  phone: PhoneValidation | null;
}

export type RecipientFailureCode = 'VALIDATION' | 'VALIDATION_ERROR';

/**
 * Every check validate makes before it may call the rail, refused with `input.failureCode`: an
 * impossible or foreign phone number, an account_ref that does not fit the service's format, an
 * operator that does not sell the service, a missing or unknown meter type, a plan of another operator.
 */
export function checkRecipient(service: MarketService, input: RecipientInput): Recipient | Rejection {
  const validationError = (message: string): Rejection => reject(input.failureCode, message);
  let operatorCode = input.operatorCode?.toUpperCase() ?? null;
  if (operatorCode !== null && findOperator(service.country, service.code, operatorCode) === undefined) {
    return validationError(`operator_code ${operatorCode} does not sell ${service.code} in ${service.country}.`);
  }
  let phone: PhoneValidation | null = null;
  let recipient = input.recipient.trim();
  if (service.recipient === 'phone') {
    phone = validatePhone(recipient, service.country, service.code);
    if (!phone.valid || phone.normalized === null) return validationError(`phone is not a reachable ${service.country} mobile number: ${phone.messages.join(' ')}`);
    recipient = phone.normalized;
    operatorCode ??= phone.carrier;
  } else {
    const problem = accountRefProblem(service, recipient);
    if (problem !== null) return validationError(problem);
  }
  if (operatorCode === null) {
    const operators = operatorsOf(service.country, service.code);
    const [only] = operators;
    if (operators.length !== 1 || only === undefined) return validationError(`operator_code is required: one of ${operators.map((o) => o.code).join(', ')}.`);
    operatorCode = only.code;
  }
  const variants = variantsOf(service.country, service.code);
  let meterType = input.meterType;
  if (meterType !== null && !variants.some((v) => v.code === meterType)) {
    return validationError(variants.length === 0 ? `${service.code} in ${service.country} has no meter types.` : `meter_type must be one of ${variants.map((v) => v.code).join(', ')}.`);
  }
  const [onlyVariant] = variants;
  if (meterType === null && variants.length === 1 && onlyVariant !== undefined) meterType = onlyVariant.code;
  if (meterType === null && variants.length > 1) return validationError(`meter_type is required: one of ${variants.map((v) => v.code).join(', ')}.`);
  const productCode = input.productCode;
  if (productCode !== null) {
    const plan = findPlan(service.country, service.code, productCode);
    if (plan === undefined || (plan.operator_code !== null && plan.operator_code !== operatorCode)) {
      return validationError(`product_code ${productCode} is not a plan of ${operatorCode} for ${service.code} in ${service.country}.`);
    }
  }
  return { recipient, operatorCode, meterType, productCode, phone };
}

/** What an order keeps of the validate response it was sent (validation_snapshot). */
export interface ValidationSnapshot {
  serviceCode: string | null;
  countryCode: string | null;
  accountRef: string | null;
  normalized: string | null;
  valid: boolean | null;
  serviceable: boolean | null;
  reason: string | null;
}

/** Reads the fields an order needs from a client-sent validate response; anything else is ignored. */
export function readValidationSnapshot(value: Record<string, unknown> | undefined): ValidationSnapshot | null {
  if (value === undefined) return null;
  const text = (v: unknown): string | null => (typeof v === 'string' ? v : null);
  const flag = (v: unknown): boolean | null => (typeof v === 'boolean' ? v : null);
  const serviceability = typeof value.serviceability === 'object' && value.serviceability !== null ? value.serviceability as Record<string, unknown> : {};
  const phone = typeof value.phone_validation === 'object' && value.phone_validation !== null ? value.phone_validation as Record<string, unknown> : {};
  return {
    serviceCode: text(value.service_code),
    countryCode: text(value.country_code),
    accountRef: text(value.account_ref),
    normalized: text(phone.normalized),
    valid: flag(value.valid),
    serviceable: flag(serviceability.serviceable),
    reason: text(serviceability.reason),
  };
}

/**
 * The rail's verdict on this recipient from the validate response the client sent, when that response
 * is about this service, country and recipient: a recipient reported invalid or not serviceable is
 * refused (400 VALIDATION, the order's code). A snapshot about anything else says nothing about this
 * order and is ignored.
 */
export function snapshotRejection(service: MarketService, recipient: string, snapshot: ValidationSnapshot | null): Rejection | null {
  if (snapshot === null || snapshot.serviceCode !== service.code || snapshot.countryCode !== service.country) return null;
  let about = snapshot.normalized ?? snapshot.accountRef?.trim() ?? null;
  if (service.recipient === 'phone' && snapshot.normalized === null && about !== null) about = validatePhone(about, service.country, service.code).normalized;
  if (about !== recipient) return null;
  if (snapshot.valid === false) return reject('VALIDATION', `validate found ${recipient} invalid on the ${service.code} rail; it cannot be ordered.`);
  if (snapshot.serviceable === false) return reject('VALIDATION', `validate reported ${recipient} not serviceable (${snapshot.reason ?? 'no reason given'}); it cannot be ordered.`);
  return null;
}
