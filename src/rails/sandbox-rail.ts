// The sandbox's implementation of the rail interface: every rail kind answered at once, purely and
// deterministically, from the simulators in sandbox-*.ts and the reference FX table. Any thread.
// Invariant: the same request always gets the same answer (replays, resubmits and requeries after a
// restart agree), and only rails.ts hands it out — never for a live owner.
import { createHash } from 'node:crypto';
import { tailBitsOfId } from '../ids.ts';
import type { ServiceCode } from '../catalogue/services.ts';
import { midRate, supportsPair } from '../catalogue/fx.ts';
import { formatRate } from '../money/convert.ts';
import { railAnswer as fulfilmentAnswer, COMPLIANCE_DENIED_COST_MINOR } from './sandbox-fulfilment.ts';
import { COMPLIANCE_DENIED_AMOUNT_MINOR, payoutOutcome, resolveAccountName } from './sandbox-payout.ts';
import { fulfilmentSnapshot, lookupAccount } from './sandbox-services.ts';
import { FUNDING_FAILURE_CODE, parseRailReference, RETRY_REQUIRED_CODE, type Rail, type RailAnswer, type RailRequest } from './rail.ts';

export const SANDBOX_RAIL = 'sandbox';

const str = (value: unknown): string => (typeof value === 'string' ? value : '');
const strOrNull = (value: unknown): string | null => (typeof value === 'string' ? value : null);
const settled = (detail: Record<string, unknown> | null): RailAnswer => ({ outcome: 'settled', providerReference: null, detail });
const failed = (failureCode: string, message?: string): RailAnswer => ({ outcome: 'failed', providerReference: null, failureCode, ...(message === undefined ? {} : { message }) });

/** Payouts by beneficiary account number: 9999 fails, 9998 times out (a requery finds it completed). */
function payout(request: RailRequest): RailAnswer {
  const account = (request.payload.beneficiary ?? {}) as { account_number?: unknown };
  const outcome = payoutOutcome(str(account.account_number));
  if (outcome === 'failed') return failed('PROVIDER_ERROR', 'The payout rail rejected the transfer.');
  if (outcome === 'timeout') return request.op === 'requery' ? settled(null) : { outcome: 'unknown' };
  return settled(null);
}

/**
 * Purchases by recipient ending (sandbox-fulfilment.ts); a delivery's detail is the whole fulfilment
 * snapshot, stamped with the request's instant. A requery finds a timed-out purchase delivered.
 */
function fulfilment(request: RailRequest): RailAnswer {
  const reference = parseRailReference(request.reference);
  const p = request.payload;
  const recipient = str(p.recipient);
  const decided = fulfilmentAnswer(recipient, reference?.attempt ?? 1);
  const deliver = (): RailAnswer => settled(sandboxDelivery({ orderId: reference?.entityId ?? '', payload: p, atMs: request.atMs }));
  switch (decided) {
    case 'delivered':
      return deliver();
    case 'timeout':
      return request.op === 'requery' ? deliver() : { outcome: 'unknown' };
    case 'failed':
      return failed('PROVIDER_ERROR', 'The fulfilment rail refused the purchase.');
    case 'funding_failed':
      return failed(FUNDING_FAILURE_CODE, 'The rail could not fund the purchase.');
    case 'retry':
      return failed(RETRY_REQUIRED_CODE);
    case 'manual':
      return { outcome: 'accepted', providerReference: null, checkoutUrl: null, manualReview: true };
  }
}

/** What the sandbox hands back on delivering a purchase (`payload` as in a fulfilment request). */
export function sandboxDelivery(input: { orderId: string; payload: Record<string, unknown>; atMs: number }): Record<string, unknown> {
  const p = input.payload;
  return fulfilmentSnapshot({
    service: str(p.service_code) as ServiceCode,
    country: str(p.country_code),
    operatorCode: str(p.operator_code),
    orderId: input.orderId,
    recipient: str(p.recipient),
    providerCostMinor: typeof p.amount_minor === 'number' ? p.amount_minor : 0,
    currency: str(p.currency),
    meterType: strOrNull(p.meter_type),
    planCode: strOrNull(p.product_code),
    atMs: input.atMs,
  });
}

/** Name lookups: a payout account (sandbox-payout.ts) or a service recipient (sandbox-services.ts). */
function resolve(request: RailRequest): RailAnswer {
  const account = (request.payload.account ?? {}) as Record<string, unknown>;
  if (account.type === 'service') {
    const found = lookupAccount({ service: str(account.service_code) as ServiceCode, country: str(account.country), operatorCode: strOrNull(account.operator_code), accountRef: str(account.account_ref), meterType: strOrNull(account.meter_type) });
    if (!found.valid) return failed(found.reason ?? 'account_not_found');
    return settled({ account_name: found.customerName, address: found.address, serviceable: found.serviceable, reason: found.reason });
  }
  const resolved = resolveAccountName(str(account.account_number).replace(/^\+/, ''));
  return resolved.ok ? settled({ account_name: resolved.accountName }) : failed('PROVIDER_ERROR', resolved.reason);
}

/** Mid rates from the reference table (kobo adds its own spread). */
function fx(request: RailRequest): RailAnswer {
  const from = str(request.payload.from_currency);
  const to = str(request.payload.to_currency);
  if (!supportsPair(from, to)) return failed('PROVIDER_ERROR', `No sandbox rate for ${from}/${to}.`);
  return settled({ mid_rate: formatRate(midRate(from, to)) });
}

export const sandboxRail = {
  name: SANDBOX_RAIL,
  call(request: RailRequest): RailAnswer {
    switch (request.kind) {
      case 'payout':
        return payout(request);
      case 'fulfilment':
        return fulfilment(request);
      case 'resolve':
        return resolve(request);
      case 'fx':
        return fx(request);
      case 'collection':
        // The payer completes a sandbox collection on kobo's own page or through the test helpers.
        return { outcome: 'accepted', providerReference: null, checkoutUrl: null };
    }
  },
} satisfies Rail;

/** What a sandbox collection offers the payer, decided with the payment (see collectionOpening in rails.ts). */
export interface SandboxOpening {
  instructions: { bankName: string; bankCode: string; accountNumber: string; accountName: string; reference: string; expiresAtMs: number } | null;
  checkoutToken?: string;
}

/**
 * A stable sandbox virtual account number for a payment: ten digits from the random tail of its id. (A
 * SHA-256 of the id gave the same spread at 2% of a bank-transfer POST's CPU.)
 */
export function sandboxAccountNumber(paymentId: string): string {
  return String(tailBitsOfId(paymentId) % 1_000_000_000).padStart(10, '9');
}

export function sandboxOpening(input: { paymentId: string; method: string; customerName: string; nowMs: number; ttlMs: number; mintId: () => string }): SandboxOpening {
  const instructions = input.method === 'bank_transfer'
    ? {
        bankName: 'Kobo Sandbox Bank',
        bankCode: '999',
        accountNumber: sandboxAccountNumber(input.paymentId),
        accountName: `KOBO/${input.customerName}`.slice(0, 64),
        reference: `KOBO-${input.paymentId.slice(-10)}`,
        expiresAtMs: input.nowMs + input.ttlMs,
      }
    : null;
  // Derived from a minted id (random in production, fixed in replay tests): handlers stay pure.
  const opening: SandboxOpening = { instructions };
  if (input.method === 'card') opening.checkoutToken = createHash('sha256').update(input.mintId()).digest('hex').slice(0, 32);
  return opening;
}

/** The sandbox's screening magic values: these amounts are blocked with COMPLIANCE_DENIED. */
export const SANDBOX_SCREENED = { transferAmountMinor: COMPLIANCE_DENIED_AMOUNT_MINOR, orderProviderCostMinor: COMPLIANCE_DENIED_COST_MINOR } as const;
