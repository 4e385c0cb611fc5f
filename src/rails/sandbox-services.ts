// The sandbox fulfilment rail for services: purchase outcomes by magic recipient endings, delivery
// detail (tokens, PINs, vouchers, receipts) and recipient lookup. Pure and deterministic (any thread):
// the same order id always yields the same snapshot, so replay and tests are exact.
// One exception, kept apart at the bottom: the rail-down switch, in-memory main-thread sandbox state.
import { createHash } from 'node:crypto';
import type { ServiceCode } from '../catalogue/services.ts';

export type FulfilmentOutcome = 'delivered' | 'failed' | 'timeout';

/** Magic endings (PRODUCT.md): 0000 fails at the rail, 0001 times out, 0002 is rejected by lookup; 0003 (ours) is not serviceable. */
const ENDING_FAILED = '0000';
const ENDING_TIMEOUT = '0001';
const ENDING_REJECTED = '0002';
const ENDING_NOT_SERVICEABLE = '0003';

/** Recipient identifiers are compared without spaces, dashes or a leading +, so +234 803 000 0000 ends in 0000. */
function digitsOf(recipient: string): string {
  return recipient.replace(/[\s\-+]/g, '');
}

export function fulfilmentOutcome(recipient: string): FulfilmentOutcome {
  const r = digitsOf(recipient);
  if (r.endsWith(ENDING_FAILED)) return 'failed';
  if (r.endsWith(ENDING_TIMEOUT)) return 'timeout';
  return 'delivered';
}

/** A timed-out purchase is always found delivered on requery (reconciliation settles it completed). */
export function requeryOutcome(_recipient: string): 'delivered' {
  return 'delivered';
}

function hashOf(...parts: string[]): Buffer {
  return createHash('sha256').update(parts.join('\u0000')).digest();
}

/** `length` decimal digits derived from the hash of the parts. */
function digits(length: number, ...parts: string[]): string {
  let out = '';
  let round = 0;
  while (out.length < length) {
    const value = BigInt(`0x${hashOf(String(round), ...parts).toString('hex')}`);
    out += value.toString().slice(-30);
    round += 1;
  }
  return out.slice(0, length);
}

const VOUCHER_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';

function voucherCode(...parts: string[]): string {
  const bytes = hashOf(...parts);
  const chars = [...bytes.subarray(0, 16)].map((b) => VOUCHER_ALPHABET[b % VOUCHER_ALPHABET.length] ?? 'X');
  return [0, 4, 8, 12].map((i) => chars.slice(i, i + 4).join('')).join('-');
}

function groups(text: string, size: number): string {
  return text.match(new RegExp(`.{1,${size}}`, 'g'))?.join('-') ?? text;
}

/**
 * Sandbox electricity tariffs, minor units of the country's currency per kWh (a round figure close to
 * each market's residential tariff). Units are provider_cost_minor / tariff, rounded down to 0.1 kWh.
 */
const TARIFF_MINOR_PER_KWH: Readonly<Record<string, number>> = { NG: 20950, GH: 178, KE: 2800, UG: 756, ZA: 310 };
const TARIFF_FALLBACK_MINOR_PER_KWH = 100;

function unitsKwh(country: string, providerCostMinor: number): string {
  const tariff = TARIFF_MINOR_PER_KWH[country] ?? TARIFF_FALLBACK_MINOR_PER_KWH;
  const tenths = Math.floor((providerCostMinor * 10) / tariff);
  return `${Math.floor(tenths / 10)}.${tenths % 10}`;
}

const DAY_MS = 86_400_000;

export interface FulfilmentInput {
  service: ServiceCode;
  country: string;
  operatorCode: string;
  orderId: string;
  recipient: string;
  providerCostMinor: number;
  currency: string;
  meterType: string | null;
  planCode: string | null;
  atMs: number;
}

function serviceDetail(input: FulfilmentInput): Record<string, unknown> {
  const { orderId } = input;
  switch (input.service) {
    case 'electricity':
      if (input.meterType === 'postpaid') return { meter_type: 'postpaid', account_number: input.recipient, bill_reference: `BILL-${digits(10, orderId, 'bill')}` };
      return { meter_type: input.meterType ?? 'prepaid', meter_number: input.recipient, token: groups(digits(20, orderId, 'token'), 4), units_kwh: unitsKwh(input.country, input.providerCostMinor) };
    case 'education':
      return { pin: digits(12, orderId, 'pin'), serial: `${input.operatorCode}${digits(9, orderId, 'serial')}`, candidate: input.recipient };
    case 'gift_cards':
      return { voucher_code: voucherCode(orderId, 'voucher'), pin: digits(4, orderId, 'voucher-pin'), recipient_email: input.recipient, expires_at: new Date(input.atMs + 365 * DAY_MS).toISOString() };
    case 'tv':
      return { smartcard: input.recipient, renewed_until: new Date(input.atMs + 30 * DAY_MS).toISOString().slice(0, 10) };
    case 'internet':
      return { account: input.recipient, renewed_until: new Date(input.atMs + 30 * DAY_MS).toISOString().slice(0, 10) };
    case 'insurance':
      return { policy_number: `POL-${digits(10, orderId, 'policy')}`, policy_holder: input.recipient, cover_starts_at: new Date(input.atMs).toISOString().slice(0, 10) };
    case 'airtime':
    case 'data':
      return { phone: input.recipient };
    case 'betting':
    case 'water':
      return { account: input.recipient };
  }
}

/** What the rail hands back on delivery, by service; deterministic from the order id. */
export function fulfilmentSnapshot(input: FulfilmentInput): Record<string, unknown> {
  return {
    service_code: input.service,
    country_code: input.country,
    operator_code: input.operatorCode,
    product_code: input.planCode,
    amount_minor: input.providerCostMinor,
    currency: input.currency,
    receipt_number: `RCPT-${digits(12, input.orderId, 'receipt')}`,
    delivered_at: new Date(input.atMs).toISOString(),
    ...serviceDetail(input),
  };
}

const FIRST_NAMES = ['Adaeze', 'Kwame', 'Wanjiru', 'Thabo', 'Nakato', 'Chinedu', 'Ama', 'Otieno', 'Lerato', 'Mukasa', 'Funke', 'Kofi'];
const LAST_NAMES = ['Okafor', 'Mensah', 'Kamau', 'Nkosi', 'Namusoke', 'Adeyemi', 'Owusu', 'Odhiambo', 'Dlamini', 'Ssempala', 'Balogun', 'Asante'];
const ADDRESSES: Readonly<Record<string, readonly string[]>> = {
  NG: ['12 Adeola Odeku Street, Victoria Island, Lagos', '4 Aminu Kano Crescent, Wuse II, Abuja', '27 Aba Road, Port Harcourt'],
  GH: ['15 Oxford Street, Osu, Accra', '8 Harper Road, Adum, Kumasi'],
  KE: ['Ngong Road, Kilimani, Nairobi', 'Moi Avenue, Mombasa'],
  UG: ['Plot 22 Kampala Road, Kampala', 'Jinja Road, Mukono'],
  ZA: ['14 Vilakazi Street, Orlando West, Soweto', '30 Long Street, Cape Town'],
};

export interface AccountLookup {
  service: ServiceCode;
  country: string;
  operatorCode: string | null;
  accountRef: string;
  meterType: string | null;
}

/**
 * The rail's recipient lookup: ending 0002 is not found (valid false); ending 0003 is found but cannot be
 * served (e.g. a blocked meter); everything else resolves to a stable name and address.
 */
export function lookupAccount(input: AccountLookup): { valid: boolean; customerName: string; address: string; serviceable: boolean; reason: string | null } {
  const ref = digitsOf(input.accountRef);
  if (ref.endsWith(ENDING_REJECTED)) return { valid: false, customerName: '', address: '', serviceable: false, reason: 'account_not_found' };
  const hash = hashOf(input.country, input.service, ref);
  const pick = <T>(list: readonly T[], byte: number): T | undefined => list[(hash[byte] ?? 0) % list.length];
  const customerName = `${pick(FIRST_NAMES, 0) ?? 'Ada'} ${pick(LAST_NAMES, 1) ?? 'Obi'}`.toUpperCase();
  const address = pick(ADDRESSES[input.country] ?? [], 2) ?? '';
  if (ref.endsWith(ENDING_NOT_SERVICEABLE)) return { valid: true, customerName, address, serviceable: false, reason: input.service === 'electricity' ? 'meter_blocked' : 'account_suspended' };
  return { valid: true, customerName, address, serviceable: true, reason: null };
}

// ---------------------------------------------------------------------------------------------------
// Rail-down switch (sandbox only). Main thread, in memory: it is NOT durable (a restart brings every
// rail back up) and a worker thread sees its own, always-empty copy, so only the front end consults it.
// Keyed by owner (account + environment), so one account's outage never touches another's.

/** Bound on the switches held; the oldest is dropped beyond it (a forgotten switch is an up rail). */
export const RAIL_SWITCHES_MAX = 10_000;
const downRails = new Set<string>();

function railKey(owner: string, service: ServiceCode, country: string): string {
  return `${owner}\u0000${service}\u0000${country}`;
}

export function setRailDown(owner: string, service: ServiceCode, country: string, down: boolean): void {
  const key = railKey(owner, service, country);
  if (!down) {
    downRails.delete(key);
    return;
  }
  downRails.delete(key);
  if (downRails.size >= RAIL_SWITCHES_MAX) {
    const oldest = downRails.values().next();
    if (oldest.done !== true) downRails.delete(oldest.value);
  }
  downRails.add(key);
}

export function railDown(owner: string, service: ServiceCode, country: string): boolean {
  return downRails.has(railKey(owner, service, country));
}
