// The state of one partition: customers, wallets (ledger accounts) and beneficiaries in the heap;
// transactions, payments, transfers, orders, exchanges and quotes hot while in flight and in the
// shard file's cold table once finished; idempotency records in the shard file. Owned by exactly one
// shard worker; changed only by apply() of WAL events.
// Invariant: entities are plain records (not live actors) so that idle ones stay small.
import type { LedgerAccount, LedgerState } from '../ledger/ledger.ts';
import { EntityTable, IdemTable, type ColdReader, type IdemReader } from './entity-table.ts';
import { emptyLedger } from '../ledger/ledger.ts';
import type { FailureCode, TransactionStatus } from '../../machines/transaction.machine.ts';
import type { PaymentStatus } from '../../machines/payment.machine.ts';
import type { TransferStatus } from '../../machines/transfer.machine.ts';
import type { OrderStatus } from '../../machines/order.machine.ts';
import { awaitsPayer } from './collections.ts';
import { DueIndex } from './due-index.ts';
import { ListNotes } from './list-queue.ts';
import type { EventType } from '../schemas/event-type.schema.ts';

/** `test:acme` or `live:acme`: the account and environment a resource belongs to. */
export type Owner = string;

export type Tier = 'tier_1' | 'tier_2' | 'tier_3';

export interface Customer {
  id: string;
  owner: Owner;
  name: string;
  email: string;
  phone: string;
  countryCode: string;
  tier: Tier;
  kycLevel: number;
  pinHash: string | null;
  /** Sandbox-clock times of the latest wrong PINs (at most PIN_FAILURES_KEPT); absent before any. */
  pinFailuresAtMs?: number[];
  /** currency → wallet id */
  wallets: Record<string, string>;
  usageDay: number;
  /** currency → minor units committed today (UTC day `usageDay` on the sandbox clock) */
  usageMinor: Record<string, number>;
  createdAtMs: number;
  updatedAtMs: number;
}

export interface Wallet extends LedgerAccount {
  kind: 'wallet';
  customerId: string;
  owner: Owner;
  createdAtMs: number;
  updatedAtMs: number;
}

export type TransactionType = 'payment' | 'transfer' | 'exchange' | 'funding' | 'service';
export type FailureStage = 'client' | 'screening' | 'collection' | 'payout' | 'fulfilment' | 'processing';
export type HoldStatus = 'none' | 'held' | 'posted' | 'released';

export interface Failure {
  code: FailureCode;
  stage: FailureStage;
  message: string;
}

export interface StatusEntry {
  status: TransactionStatus;
  atMs: number;
  attempt: number;
  failureCode: FailureCode | null;
}

export interface Transaction {
  id: string;
  owner: Owner;
  customerId: string;
  type: TransactionType;
  status: TransactionStatus;
  amountMinor: number;
  feeMinor: number;
  currency: string;
  reference: string | null;
  failure: Failure | null;
  holdId: string | null;
  holdStatus: HoldStatus;
  attempt: number;
  history: StatusEntry[];
  paymentId: string | null;
  transferId: string | null;
  /** The service order this transaction is the ledger truth of (type service), if any. */
  orderId?: string;
  /**
   * Created by POST /v1/transactions: a recorded intent that nothing moves but a cancel. It lives in the
   * cold table from its creation (a client may leave millions pending); a cancel brings it back.
   */
  bare?: true;
  /** A sandbox collection's transaction: cold while it waits for the payer, like its payment. */
  awaitsPayer?: true;
  /** An exchange's transaction: the exchange and its other leg (amount_minor/currency are the source leg). */
  exchange?: { id: string; toAmountMinor: number; toCurrency: string };
  /** A service order's collection whose money went back to the payer when the purchase failed. */
  refund?: RefundState;
  /**
   * A rail reported an outcome that contradicts the final one kobo had recorded (settled after failed,
   * failed after completed): retry is refused until an operator resolves it (kobo reconcile).
   */
  reconciliation?: Reconciliation;
  createdAtMs: number;
  updatedAtMs: number;
}

/** The final outcome of an attempt, as kobo records it or a rail reports it. */
export type FinalOutcome = 'completed' | 'failed';

export interface Reconciliation {
  /** required: the block is on; resolved: an operator decided which outcome stands. */
  status: 'required' | 'resolved';
  recorded: FinalOutcome;
  reported: FinalOutcome;
  /** The rail answer that contradicted: for which entity and attempt, from which rail. */
  kind: 'payout' | 'collection' | 'fulfilment';
  entityId: string;
  attempt: number;
  rail: string;
  providerReference: string | null;
  failureCode: string | null;
  reportedAtMs: number;
  /** recorded: kobo's outcome stands (retry allowed again); reported: the rail's stands (never retried). */
  resolution?: 'recorded' | 'reported';
  resolvedAtMs?: number;
  note?: string;
}

export type PaymentMethod = 'card' | 'bank_transfer' | 'wallet' | 'mobile_money' | 'virtual_account';

export interface BankTransferInstructions {
  bankName: string;
  bankCode: string;
  accountNumber: string;
  accountName: string;
  reference: string;
  expiresAtMs: number;
}

export interface Payment {
  id: string;
  owner: Owner;
  customerId: string;
  transactionId: string;
  method: PaymentMethod;
  status: PaymentStatus;
  amountMinor: number;
  feeMinor: number;
  currency: string;
  reference: string | null;
  walletId: string;
  instructions: BankTransferInstructions | null;
  /** card: the secret in the hosted checkout address; only that page may complete or decline. */
  checkoutToken?: string;
  /** mobile_money: the number the approval prompt was sent to. */
  promptPhone?: string;
  /** Set when the payment collects for a service order: settlement funds the order, not the wallet. */
  orderId?: string;
  /** Live collections: what the connector answered (its reference, where the payer completes it). */
  rail?: { providerReference: string | null; payUrl: string | null };
  createdAtMs: number;
  updatedAtMs: number;
}

export type BeneficiaryType = 'bank_account' | 'mobile_money' | 'wallet';

export interface Beneficiary {
  id: string;
  owner: Owner;
  customerId: string;
  type: BeneficiaryType;
  currency: string;
  country: string;
  /** Bank code or mobile-money operator code; null for wallets. */
  bankCode: string | null;
  bankName: string | null;
  accountNumber: string;
  accountName: string;
  createdAtMs: number;
}

export interface Transfer {
  id: string;
  owner: Owner;
  customerId: string;
  beneficiaryId: string;
  transactionId: string;
  status: TransferStatus;
  amountMinor: number;
  feeMinor: number;
  currency: string;
  narration: string | null;
  quoteId: string | null;
  destinationAmountMinor: number;
  destinationCurrency: string;
  providerReference: string | null;
  createdAtMs: number;
  updatedAtMs: number;
}

// The event types and the stored reply are shared with the front end, so they live in src/schemas/.
export type { EventType } from '../schemas/event-type.schema.ts';
export { isStoredResult, type StoredReply } from '../schemas/reply.schema.ts';

/**
 * An event for the webhook outbox, written in the same WAL record as the change that caused it and
 * kept here until the dispatcher has stored it durably (then `outbox.handed` removes it).
 */
export interface OutboxEvent {
  id: string;
  owner: Owner;
  type: EventType;
  /** event_type:transaction_id — receivers dedupe on it. */
  key: string;
  occurredAtMs: number;
  data: Record<string, unknown>;
}

export interface ServiceQuote {
  id: string;
  owner: Owner;
  customerId: string;
  countryCode: string;
  serviceCode: string;
  providerCostMinor: number;
  destinationCurrency: string;
  sourceCurrency: string;
  convertedAmountMinor: number;
  feeMinor: number;
  customerAmountMinor: number;
  fxRate: string | null;
  promotionCode: string | null;
  promotionDiscountMinor: number;
  paymentMethod: string | null;
  /** The plan the quote priced (absent on quotes recorded before quotes took product_code). */
  productCode?: string | null;
  phone: string | null;
  accountRef: string | null;
  expiresAtMs: number;
  usedBy: string | null;
  /** Set when the expiry sweep took the unused quote out of the heap (it still answers as expired). */
  expired?: true;
  createdAtMs: number;
}

export interface ServiceOrder {
  id: string;
  owner: Owner;
  customerId: string;
  transactionId: string;
  paymentId: string;
  paymentTransactionId: string;
  countryCode: string;
  serviceCode: string;
  status: OrderStatus;
  customerAmountMinor: number;
  feeMinor: number;
  providerCostMinor: number;
  /** The paying currency (customer_amount_minor's). */
  currency: string;
  destinationCurrency: string;
  operatorCode: string | null;
  meterType: string | null;
  accountRef: string | null;
  phone: string | null;
  productCode: string | null;
  providerReference: string | null;
  idempotencyKey: string;
  quoteId: string | null;
  fulfillmentSnapshot: Record<string, unknown> | null;
  pricingSnapshot: Record<string, unknown>;
  metadata: Record<string, unknown> | null;
  dispatchAttempt: number;
  /**
   * Money collected for the order (card, bank transfer) and returned to the payer because the purchase
   * failed, one per collection, oldest first; the order's status stays what it is (failed). Absent on
   * orders recorded before refunds were kept here.
   */
  refunds?: OrderRefund[];
  /** Every status the order took, in order (absent on orders recorded before it was kept). */
  history?: Array<{ status: OrderStatus; atMs: number }>;
  createdAtMs: number;
  updatedAtMs: number;
}

export interface RefundState {
  status: 'pending' | 'completed';
  amountMinor: number;
  currency: string;
  createdAtMs: number;
  completedAtMs: number | null;
}

/** A refund of one of an order's collections (its payment and that payment's transaction). */
export interface OrderRefund extends RefundState {
  paymentId: string;
  paymentTransactionId: string;
}

/** The receiving side of a wallet-to-wallet transfer, recorded once per transfer id (the dedupe key). */
export interface InboundCredit {
  transferId: string;
  walletId: string;
  transactionId: string;
  amountMinor: number;
  currency: string;
  atMs: number;
}

export interface ExchangeQuote {
  id: string;
  owner: Owner;
  customerId: string;
  fromCurrency: string;
  toCurrency: string;
  fromAmountMinor: number;
  toAmountMinor: number;
  /** Customer rate (after spread), `to` units per `from` unit, as a decimal string. */
  rate: string;
  midRate: string;
  spreadBps: number;
  expiresAtMs: number;
  /** The exchange or transfer that executed this quote; a quote is used once. */
  usedBy: string | null;
  /** Set when the expiry sweep took the unused quote out of the heap (it still answers as expired). */
  expired?: true;
  createdAtMs: number;
}

export interface Exchange {
  id: string;
  owner: Owner;
  customerId: string;
  quoteId: string;
  transactionId: string;
  fromCurrency: string;
  fromAmountMinor: number;
  fromWalletId: string;
  toCurrency: string;
  toAmountMinor: number;
  toWalletId: string;
  rate: string;
  createdAtMs: number;
}

/** The store owns the record's format; a shard sees it as a stored reply with its scope. */
export type { IdempotencyRecord } from '../store/tiers.ts';

export interface PartitionState {
  partition: number;
  customers: Map<string, Customer>;
  transactions: EntityTable<Transaction>;
  payments: EntityTable<Payment>;
  quotes: EntityTable<ExchangeQuote>;
  exchanges: EntityTable<Exchange>;
  beneficiaries: Map<string, Beneficiary>;
  transfers: EntityTable<Transfer>;
  inboundCredits: EntityTable<InboundCredit>;
  outbox: Map<string, OutboxEvent>;
  serviceQuotes: EntityTable<ServiceQuote>;
  orders: EntityTable<ServiceOrder>;
  idempotency: IdemTable;
  ledger: LedgerState;
  /**
   * When the sandbox collections waiting for their payer expire (the payments themselves wait in the
   * cold table): the expiry sweep reads this index, which lives in the shard file, not in the heap.
   */
  due: DueIndex;
  /**
   * Wallets whose balances or existence changed since the last group commit took them: the front end
   * keeps their views (GET /v1/wallets/{id} without a shard hop) and hears of each change once durable.
   */
  walletsChanged: Set<string>;
  /** What applied events mean for the shard file's list index, until the group commit takes it. */
  listed: ListNotes;
}

/** Where a partition's finished entities and idempotency records live; null keeps everything in the heap. */
export interface PartitionTiers {
  cold: ColdReader;
  idem: IdemReader;
}

const FINISHED_ORDER = new Set<OrderStatus>(['completed', 'failed', 'refunded', 'cancelled']);

/** A refund of the order's still on its way to the payer, if any. */
export function pendingRefund(order: ServiceOrder): OrderRefund | undefined {
  return order.refunds?.find((r) => r.status === 'pending');
}

export function emptyPartition(partition: number, tiers: PartitionTiers | null = null): PartitionState {
  const cold = tiers?.cold ?? null;
  return {
    partition,
    customers: new Map(),
    // One awaiting reconciliation stays hot, so the operator's list is the heap's (and every image's).
    transactions: new EntityTable<Transaction>('txn', cold, (t) => t.reconciliation?.status !== 'required' && (t.status === 'completed' || t.status === 'failed' || t.bare === true || (t.status === 'pending' && t.awaitsPayer === true))),
    payments: new EntityTable<Payment>('payment', cold, (p) => p.status === 'completed' || p.status === 'failed' || awaitsPayer(p)),
    quotes: new EntityTable<ExchangeQuote>('fx_quote', cold, (q) => q.usedBy !== null || q.expired === true),
    exchanges: new EntityTable<Exchange>('exchange', cold, () => true),
    beneficiaries: new Map(),
    transfers: new EntityTable<Transfer>('transfer', cold, (t) => t.status === 'completed' || t.status === 'failed'),
    inboundCredits: new EntityTable<InboundCredit>('credit', cold, () => true),
    outbox: new Map(),
    serviceQuotes: new EntityTable<ServiceQuote>('service_quote', cold, (q) => q.usedBy !== null || q.expired === true),
    // An order whose refund is still on its way stays in the heap: a restart resumes the refund.
    orders: new EntityTable<ServiceOrder>('order', cold, (o) => FINISHED_ORDER.has(o.status) && pendingRefund(o) === undefined),
    idempotency: new IdemTable(tiers?.idem ?? null),
    ledger: emptyLedger(),
    due: new DueIndex(tiers !== null),
    walletsChanged: new Set(),
    listed: new ListNotes(tiers !== null),
  };
}

const tablesOf = new WeakMap<PartitionState, ReadonlyArray<EntityTable<unknown>>>();

/** The tables whose finished entities leave the heap, in a fixed order (built once per partition: every group commit asks). */
export function entityTables(state: PartitionState): ReadonlyArray<EntityTable<unknown>> {
  let tables = tablesOf.get(state);
  if (tables === undefined) {
    tables = [state.transactions, state.payments, state.quotes, state.exchanges, state.transfers, state.inboundCredits, state.serviceQuotes, state.orders] as Array<EntityTable<unknown>>;
    tablesOf.set(state, tables);
  }
  return tables;
}

export function walletOf(state: PartitionState, walletId: string): Wallet | undefined {
  const account = state.ledger.accounts.get(walletId);
  return account?.kind === 'wallet' ? (account as Wallet) : undefined;
}
