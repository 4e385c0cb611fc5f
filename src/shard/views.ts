// Wire shapes of the resources a shard owns: snake_case fields, ISO 8601 UTC times, minor units.
// Runs inside shard workers. One name per concept: `providerCostMinor` inside is `provider_cost_minor` out.
// Invariant: available_minor = balance_minor - held_minor for every wallet view.
import { availableMinor, balanceMinor } from '../ledger/ledger.ts';
import { type Customer, type PartitionState, type Payment, type Reconciliation, type Transaction, type Wallet } from './state.ts';
import { collectionExpiresAtMs } from './collections.ts';
import type { ReplyView } from '../store/tiers.ts';
import { isoTime } from '../iso-time.ts';
import { compileView, type Sources } from '../schemas/compile-serialiser.ts';
import { Payment as PaymentSchema, Transaction as TransactionSchema } from '../schemas/transaction.schema.ts';
import { Customer as CustomerSchema, Wallet as WalletSchema } from '../schemas/customer.schema.ts';

/** A sandbox-clock time in milliseconds as the API shows it (ISO 8601 UTC). */
export const iso = isoTime;

const customerCompiled = compileView<Customer>('customer', CustomerSchema, {
  id: (c) => c.id,
  name: (c) => c.name,
  email: (c) => c.email,
  phone: (c) => c.phone,
  country_code: (c) => c.countryCode,
  tier: (c) => c.tier,
  kyc_level: (c) => c.kycLevel,
  pin_set: (c) => c.pinHash !== null,
  wallets: { each: (c) => Object.entries(c.wallets), fields: { id: ([, id]: [string, string]) => id, currency: ([currency]: [string, string]) => currency } as Sources<never> },
  created_at: { ms: (c) => c.createdAtMs },
  updated_at: { ms: (c) => c.updatedAtMs },
});
/** A customer as the API shows it; `customerJson` writes the same JSON without building it. */
export const customerView = customerCompiled.view;
export const customerJson = customerCompiled.json;

const walletCompiled = compileView<Wallet>('wallet', WalletSchema, {
  id: (w) => w.id,
  customer_id: (w) => w.customerId,
  currency: (w) => w.currency,
  balance_minor: balanceMinor,
  available_minor: availableMinor,
  held_minor: (w) => w.debitsPending,
  incoming_minor: (w) => w.creditsPending,
  created_at: { ms: (w) => w.createdAtMs },
  updated_at: { ms: (w) => w.updatedAtMs },
});
/** A wallet as the API shows it (available_minor = balance_minor - held_minor); `walletJson` writes it without building it. */
export const walletView = walletCompiled.view;
export const walletJson = walletCompiled.json;

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

const transactionCompiled = compileView<Transaction>('transaction', TransactionSchema, {
  id: (t) => t.id,
  type: (t) => t.type,
  status: (t) => t.status,
  customer_id: (t) => t.customerId,
  amount_minor: (t) => t.amountMinor,
  fee_minor: (t) => t.feeMinor,
  currency: (t) => t.currency,
  reference: (t) => t.reference,
  failure: { json: (t) => t.failure },
  hold: { of: (t) => t, fields: { status: (t: Transaction) => t.holdStatus, amount_minor: heldMinor } as Sources<never> },
  attempt: (t) => t.attempt,
  status_history: {
    each: (t) => t.history,
    fields: { status: (h: Transaction['history'][number]) => h.status, at: { ms: (h: Transaction['history'][number]) => h.atMs }, attempt: (h: Transaction['history'][number]) => h.attempt, failure_code: (h: Transaction['history'][number]) => h.failureCode } as Sources<never>,
  },
  payment_id: (t) => t.paymentId,
  transfer_id: (t) => t.transferId,
  // A service order's collection refunded to the payer (the purchase failed): the transaction stays
  // completed, as the collection did; the refund is shown beside it.
  refund: {
    of: (t) => t.refund,
    fields: { status: (r: Refund) => r.status, amount_minor: (r: Refund) => r.amountMinor, currency: (r: Refund) => r.currency, created_at: { ms: (r: Refund) => r.createdAtMs }, completed_at: { ms: (r: Refund) => r.completedAtMs } } as Sources<never>,
  },
  reconciliation: { json: (t) => (t.reconciliation === undefined ? undefined : reconciliationView(t.reconciliation)) },
  exchange_id: (t) => t.exchange?.id,
  from_amount_minor: (t) => (t.exchange === undefined ? undefined : t.amountMinor),
  from_currency: (t) => (t.exchange === undefined ? undefined : t.currency),
  to_amount_minor: (t) => t.exchange?.toAmountMinor,
  to_currency: (t) => t.exchange?.toCurrency,
  created_at: { ms: (t) => t.createdAtMs },
  updated_at: { ms: (t) => t.updatedAtMs },
});
type Refund = NonNullable<Transaction['refund']>;
/** A transaction as the API shows it; `transactionJson` writes the same JSON without building it. */
export const transactionView = transactionCompiled.view;
export const transactionJson = transactionCompiled.json;

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

const paymentCompiled = compileView<Payment>('payment', PaymentSchema, {
  id: (p) => p.id,
  transaction_id: (p) => p.transactionId,
  customer_id: (p) => p.customerId,
  method: (p) => p.method,
  status: (p) => p.status,
  amount_minor: (p) => p.amountMinor,
  fee_minor: (p) => p.feeMinor,
  net_amount_minor: (p) => (p.method === 'wallet' ? p.amountMinor : p.amountMinor - p.feeMinor),
  currency: (p) => p.currency,
  reference: (p) => p.reference,
  wallet_id: (p) => p.walletId,
  provider: { json: providerView },
  created_at: { ms: (p) => p.createdAtMs },
  updated_at: { ms: (p) => p.updatedAtMs },
});
/** A payment as the API shows it; `paymentJson` writes the same JSON without building it (every payment reply). */
export const paymentView = paymentCompiled.view;
export const paymentJson = paymentCompiled.json;

/**
 * The reply a log record names by view (see reply-views.ts), from the state the record's earlier events
 * left: the same bytes as okReply of the entity's view, which is what the client was sent.
 */
export function viewReplyJson(state: PartitionState, view: ReplyView): string {
  const payment = state.payments.get(view.id);
  if (payment === undefined) throw new Error(`reply view: payment ${view.id} is not in the state its record left`);
  return `{"data":${paymentJson(payment)}}`;
}
