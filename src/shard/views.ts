// Wire shapes of the resources a shard owns: snake_case fields, ISO 8601 UTC times, minor units.
// Runs inside shard workers. One name per concept: `providerCostMinor` inside is `provider_cost_minor` out.
// Invariant: available_minor = balance_minor - held_minor for every wallet view.
import { availableMinor, balanceMinor } from '../ledger/ledger.ts';
import { type Customer, type PartitionState, type Payment, type Reconciliation, type Transaction, type Wallet } from './state.ts';
import { collectionExpiresAtMs } from './collections.ts';
import type { ReplyView } from '../store/tiers.ts';
import { isoTime } from '../iso-time.ts';

/** A sandbox-clock time in milliseconds as the API shows it (ISO 8601 UTC). */
export const iso = isoTime;

export function customerView(c: Customer): object {
  return {
    id: c.id,
    object: 'customer',
    name: c.name,
    email: c.email,
    phone: c.phone,
    country_code: c.countryCode,
    tier: c.tier,
    kyc_level: c.kycLevel,
    pin_set: c.pinHash !== null,
    wallets: Object.entries(c.wallets).map(([currency, id]) => ({ id, currency })),
    created_at: iso(c.createdAtMs),
    updated_at: iso(c.updatedAtMs),
  };
}

export function walletView(w: Wallet): object {
  return {
    id: w.id,
    object: 'wallet',
    customer_id: w.customerId,
    currency: w.currency,
    balance_minor: balanceMinor(w),
    available_minor: availableMinor(w),
    held_minor: w.debitsPending,
    incoming_minor: w.creditsPending,
    created_at: iso(w.createdAtMs),
    updated_at: iso(w.updatedAtMs),
  };
}

/**
 * What the transaction's hold is for: a transfer holds its amount plus the fee charged on top; every
 * other hold (wallet payments, order payments) is the amount, any fee being inside it.
 */
function heldMinor(t: Transaction): number {
  if (t.holdStatus === 'none') return 0;
  return t.type === 'transfer' ? t.amountMinor + t.feeMinor : t.amountMinor;
}

const ENTITY_OF_RAIL = { payout: 'transfer', collection: 'payment', fulfilment: 'service_order' } as const;

/** Shown only on a transaction a rail contradicted: the contract's status values stay as they are. */
function reconciliationView(r: Reconciliation): object {
  return {
    status: r.status,
    recorded_outcome: r.recorded,
    reported_outcome: r.reported,
    object: ENTITY_OF_RAIL[r.kind],
    object_id: r.entityId,
    attempt: r.attempt,
    reported_by: r.rail,
    provider_reference: r.providerReference,
    reported_at: iso(r.reportedAtMs),
    resolution: r.resolution ?? null,
    resolved_at: r.resolvedAtMs === undefined ? null : iso(r.resolvedAtMs),
  };
}

export function transactionView(t: Transaction): object {
  return {
    id: t.id,
    object: 'transaction',
    type: t.type,
    status: t.status,
    customer_id: t.customerId,
    amount_minor: t.amountMinor,
    fee_minor: t.feeMinor,
    currency: t.currency,
    reference: t.reference,
    failure: t.failure,
    hold: { status: t.holdStatus, amount_minor: heldMinor(t) },
    attempt: t.attempt,
    status_history: t.history.map((h) => ({
      status: h.status,
      at: iso(h.atMs),
      attempt: h.attempt,
      failure_code: h.failureCode,
    })),
    payment_id: t.paymentId,
    transfer_id: t.transferId,
    // A service order's collection refunded to the payer (the purchase failed): the transaction stays
    // completed, as the collection did; the refund is shown beside it.
    ...(t.refund === undefined ? {} : {
      refund: {
        status: t.refund.status,
        amount_minor: t.refund.amountMinor,
        currency: t.refund.currency,
        created_at: iso(t.refund.createdAtMs),
        completed_at: t.refund.completedAtMs === null ? null : iso(t.refund.completedAtMs),
      },
    }),
    ...(t.reconciliation === undefined ? {} : { reconciliation: reconciliationView(t.reconciliation) }),
    ...(t.exchange === undefined ? {} : {
      exchange_id: t.exchange.id,
      from_amount_minor: t.amountMinor,
      from_currency: t.currency,
      to_amount_minor: t.exchange.toAmountMinor,
      to_currency: t.exchange.toCurrency,
    }),
    created_at: iso(t.createdAtMs),
    updated_at: iso(t.updatedAtMs),
  };
}

/** The address clients reach this server at (set once the front end listens); checkout links use it. */
let publicUrl = 'http://127.0.0.1:8080';
export function setPublicUrl(url: string): void {
  publicUrl = url.replace(/\/$/, '');
}

/** Where clients (and connectors' callbacks) reach this server. */
export function publicUrlOf(): string {
  return publicUrl;
}

export function checkoutUrl(p: Payment): string {
  return `${publicUrl}/v1/checkout/${p.id}?token=${p.checkoutToken ?? ''}`;
}

function providerView(p: Payment): object {
  // A live collection is completed where its rail says (a card page, a bank, a phone prompt), never here.
  if (p.owner.startsWith('live:') && p.method !== 'wallet') {
    return { type: p.method, checkout_url: p.rail?.payUrl ?? null, provider_reference: p.rail?.providerReference ?? null };
  }
  if (p.method === 'card') return { type: 'card', checkout_url: checkoutUrl(p), expires_at: iso(collectionExpiresAtMs(p)) };
  if (p.method === 'mobile_money') {
    return { type: 'mobile_money', instructions: { phone: p.promptPhone ?? null, message: 'Approve the payment prompt sent to this phone.', expires_at: iso(collectionExpiresAtMs(p)) } };
  }
  if (p.instructions !== null) {
    const i = p.instructions;
    return {
      type: 'bank_transfer',
      instructions: {
        bank_name: i.bankName,
        bank_code: i.bankCode,
        account_number: i.accountNumber,
        account_name: i.accountName,
        reference: i.reference,
        amount_minor: p.amountMinor,
        currency: p.currency,
        expires_at: iso(i.expiresAtMs),
      },
    };
  }
  return { type: p.method, wallet_id: p.walletId };
}

export function paymentView(p: Payment): object {
  return {
    id: p.id,
    object: 'payment',
    transaction_id: p.transactionId,
    customer_id: p.customerId,
    method: p.method,
    status: p.status,
    amount_minor: p.amountMinor,
    fee_minor: p.feeMinor,
    net_amount_minor: p.method === 'wallet' ? p.amountMinor : p.amountMinor - p.feeMinor,
    currency: p.currency,
    reference: p.reference,
    wallet_id: p.walletId,
    provider: providerView(p),
    created_at: iso(p.createdAtMs),
    updated_at: iso(p.updatedAtMs),
  };
}

/**
 * The reply a log record names by view (see reply-views.ts), from the state the record's earlier events
 * left: the same bytes as okReply of the entity's view, which is what the client was sent.
 */
export function viewReplyJson(state: PartitionState, view: ReplyView): string {
  const payment = state.payments.get(view.id);
  if (payment === undefined) throw new Error(`reply view: payment ${view.id} is not in the state its record left`);
  return JSON.stringify({ data: paymentView(payment) });
}
