// WAL events and the one function that applies them to partition state, live and on replay alike.
// Runs inside a shard worker (and the CLI's verify/restore). Pure: every time and id is in the event.
// Invariant: replaying the WAL from a snapshot yields exactly the state the live shard had.
import assert from 'node:assert/strict';
import { applyLedgerOp, type LedgerOp } from '../ledger/ledger.ts';
import type { TransactionStatus } from '../../machines/transaction.machine.ts';
import type { PaymentStatus } from '../../machines/payment.machine.ts';
import type { TransferStatus } from '../../machines/transfer.machine.ts';
import type { OrderStatus } from '../../machines/order.machine.ts';
import type {
  Beneficiary,
  InboundCredit,
  OutboxEvent,
  ServiceOrder,
  ServiceQuote,
  Transfer,
  Customer,
  Exchange,
  ExchangeQuote,
  Failure,
  HoldStatus,
  OrderRefund,
  IdempotencyRecord,
  PartitionState,
  Payment,
  Reconciliation,
  Transaction,
  Wallet,
} from './state.ts';
import { collectionDue, expiresUnpaid } from './collections.ts';
import { transactionOfPayment } from './payment-opened.ts';
import { viewReplyJson } from './views.ts';
import { eventBody, noteEntries, noteResource } from './list-notes.ts';
import type { Hold } from '../ledger/ledger.ts';

export type CustomerPatch = Partial<Pick<Customer, 'name' | 'email' | 'phone' | 'tier' | 'kycLevel' | 'pinHash'>>;

export type WalEvent =
  | { t: 'customer.created'; customer: Customer }
  | { t: 'customer.updated'; id: string; patch: CustomerPatch; atMs: number }
  | { t: 'customer.usage'; id: string; day: number; currency: string; deltaMinor: number }
  /** A wrong transaction PIN: durable, so a restart does not lift a PIN lock. */
  | { t: 'customer.pin_failed'; id: string; atMs: number }
  | { t: 'wallet.opened'; wallet: Wallet }
  | { t: 'txn.created'; txn: Transaction }
  | {
      t: 'txn.moved';
      id: string;
      status: TransactionStatus;
      atMs: number;
      failure: Failure | null;
      holdStatus?: HoldStatus;
      holdId?: string | null;
      attempt?: number;
    }
  /** A contradiction a rail reported is recorded on the transaction, or an operator resolved it. */
  | { t: 'txn.reconciliation'; id: string; reconciliation: Reconciliation; atMs: number }
  | { t: 'payment.created'; payment: Payment }
  /** A payment and the transaction derived from it (payment-opened.ts): one copy of the facts in the record. */
  | { t: 'payment.opened'; payment: Payment }
  | { t: 'payment.moved'; id: string; status: PaymentStatus; atMs: number }
  /** A live collection rail took the payment: its reference and the page where the payer completes it. */
  | { t: 'payment.rail'; id: string; providerReference: string | null; payUrl: string | null; atMs: number }
  | { t: 'ledger'; ops: LedgerOp[]; atMs: number }
  | { t: 'quote.created'; quote: ExchangeQuote }
  | { t: 'beneficiary.created'; beneficiary: Beneficiary }
  | { t: 'transfer.created'; transfer: Transfer }
  | { t: 'transfer.credited_in'; credit: InboundCredit }
  | { t: 'outbox.added'; event: OutboxEvent }
  | { t: 'squote.created'; quote: ServiceQuote }
  | { t: 'order.created'; order: ServiceOrder }
  | {
      t: 'order.moved';
      id: string;
      status: OrderStatus;
      atMs: number;
      providerReference?: string;
      fulfillmentSnapshot?: Record<string, unknown>;
      dispatchAttempt?: number;
      /** A retried order paying through a new collection (the last one's money went back to the payer). */
      paymentId?: string;
      paymentTransactionId?: string;
    }
  /**
   * A refund of one of the order's collections opened or completed: recorded on the order (by its
   * payment transaction) and on that transaction; the order's status is not touched.
   */
  | { t: 'order.refund'; id: string; refund: OrderRefund; atMs: number }
  | { t: 'outbox.handed'; ids: string[] }
  | { t: 'transfer.moved'; id: string; status: TransferStatus; atMs: number; providerReference?: string }
  | { t: 'exchange.created'; exchange: Exchange }
  /**
   * `inRow`: the record itself (with its reply) is the shard file's `idem_log` row written in the
   * same transaction, so replay has nothing to do; the event keeps who stored what for the audit
   * trail. Records written before then carried the whole record and are stored again by replay.
   */
  | { t: 'idem.stored'; record: IdempotencyRecord; inRow?: true }
  /**
   * Records older than their owner's cutoff are forgotten. Records written before this form existed
   * listed the scopes instead; replay still honours them.
   */
  | { t: 'idem.expired'; cutoffMs: Record<string, number>; defaultCutoffMs: number }
  | { t: 'idem.expired'; scopes: string[] }
  /** Unused quotes past expiry leave the heap (kept cold, so an order naming one still hears QUOTE_EXPIRED). */
  | { t: 'quotes.expired'; fx: string[]; service: string[] };

function touchWallets(state: PartitionState, ops: LedgerOp[], atMs: number): void {
  for (const op of ops) {
    const hold = op.op === 'commit' || op.op === 'void' ? state.ledger.holds.get(op.id) : undefined;
    const ids = op.op === 'post' || op.op === 'hold' ? [op.dr, op.cr] : hold === undefined ? [] : [hold.dr, hold.cr];
    for (const id of ids) {
      const account = state.ledger.accounts.get(id);
      if (account?.kind !== 'wallet') continue;
      (account as Wallet).updatedAtMs = atMs;
      state.walletsChanged.add(id);
    }
  }
}

/** Wrong PINs remembered per customer: enough for any KOBO_PIN_ATTEMPTS_MAX (at most 100). */
export const PIN_FAILURES_KEPT = 100;

export function applyEvent(state: PartitionState, event: WalEvent): void {
  const holds = holdsSettled(state, event);
  applyOne(state, event);
  noteListed(state, event, holds);
}

/** The holds a ledger event's commits settle, read before the event removes them (its statement entries). */
function holdsSettled(state: PartitionState, event: WalEvent): Array<Hold | undefined> | null {
  if (!state.listed.on || event.t !== 'ledger') return null;
  return event.ops.map((op) => (op.op === 'commit' ? state.ledger.holds.get(op.id) : undefined));
}

/** Notes what an applied event changed for the lists (list-notes.ts), on replay as live. */
function noteListed(state: PartitionState, event: WalEvent, holds: Array<Hold | undefined> | null): void {
  if (!state.listed.on) return;
  switch (event.t) {
    case 'customer.created':
      return noteResource(state, 'customer', Object.assign({}, event.customer, { customerId: event.customer.id }));
    case 'txn.created':
    case 'txn.moved':
      return noteResource(state, 'transaction', state.transactions.get(event.t === 'txn.created' ? event.txn.id : event.id));
    case 'payment.opened':
      noteResource(state, 'transaction', state.transactions.get(event.payment.transactionId));
      return noteResource(state, 'payment', state.payments.get(event.payment.id));
    case 'payment.created':
    case 'payment.moved':
      return noteResource(state, 'payment', state.payments.get(event.t === 'payment.created' ? event.payment.id : event.id));
    case 'transfer.created':
    case 'transfer.moved':
      return noteResource(state, 'transfer', state.transfers.get(event.t === 'transfer.created' ? event.transfer.id : event.id));
    case 'order.created':
    case 'order.moved':
      return noteResource(state, 'order', state.orders.get(event.t === 'order.created' ? event.order.id : event.id));
    case 'beneficiary.created':
      return noteResource(state, 'beneficiary', event.beneficiary);
    case 'outbox.added': {
      const customerId = event.event.data.customer_id;
      state.listed.row({ kind: 'event', id: event.event.id, owner: event.event.owner, customerId: typeof customerId === 'string' ? customerId : null, status: event.event.type, body: eventBody(event.event) });
      return;
    }
    case 'ledger':
      return noteEntries(state, event.ops, event.atMs, holds ?? []);
    default:
      return;
  }
}

function applyOne(state: PartitionState, event: WalEvent): void {
  switch (event.t) {
    case 'customer.created':
      assert(!state.customers.has(event.customer.id), 'apply: customer exists');
      state.customers.set(event.customer.id, Object.assign({}, event.customer, { wallets: { ...event.customer.wallets }, usageMinor: { ...event.customer.usageMinor } }));
      return;
    case 'customer.updated': {
      const customer = state.customers.get(event.id);
      assert(customer !== undefined, 'apply: customer missing');
      Object.assign(customer, event.patch);
      customer.updatedAtMs = event.atMs;
      return;
    }
    case 'customer.usage': {
      const customer = state.customers.get(event.id);
      assert(customer !== undefined, 'apply: customer missing');
      if (customer.usageDay !== event.day) {
        customer.usageDay = event.day;
        customer.usageMinor = {};
      }
      const next = (customer.usageMinor[event.currency] ?? 0) + event.deltaMinor;
      customer.usageMinor[event.currency] = Math.max(0, next);
      return;
    }
    case 'customer.pin_failed': {
      const customer = state.customers.get(event.id);
      assert(customer !== undefined, 'apply: customer missing');
      customer.pinFailuresAtMs = [...(customer.pinFailuresAtMs ?? []), event.atMs].slice(-PIN_FAILURES_KEPT);
      return;
    }
    case 'wallet.opened': {
      const customer = state.customers.get(event.wallet.customerId);
      assert(customer !== undefined, 'apply: wallet for missing customer');
      assert(!state.ledger.accounts.has(event.wallet.id), 'apply: wallet exists');
      state.ledger.accounts.set(event.wallet.id, { ...event.wallet });
      customer.wallets[event.wallet.currency] = event.wallet.id;
      state.walletsChanged.add(event.wallet.id);
      return;
    }
    case 'txn.created':
      assert(!state.transactions.hasHot(event.txn.id), 'apply: transaction exists');
      state.transactions.set(event.txn.id, Object.assign({}, event.txn, { history: [...event.txn.history] }));
      return;
    case 'txn.moved': {
      const txn = state.transactions.mutable(event.id);
      assert(txn !== undefined, 'apply: transaction missing');
      txn.status = event.status;
      txn.failure = event.failure;
      if (event.holdStatus !== undefined) txn.holdStatus = event.holdStatus;
      if (event.holdId !== undefined) txn.holdId = event.holdId;
      if (event.attempt !== undefined) txn.attempt = event.attempt;
      txn.updatedAtMs = event.atMs;
      txn.history.push({ status: event.status, atMs: event.atMs, attempt: txn.attempt, failureCode: event.failure?.code ?? null });
      return;
    }
    case 'txn.reconciliation': {
      const txn = state.transactions.mutable(event.id);
      assert(txn !== undefined, 'apply: transaction missing');
      txn.reconciliation = { ...event.reconciliation };
      txn.updatedAtMs = event.atMs;
      return;
    }
    case 'payment.opened':
      applyOne(state, { t: 'txn.created', txn: transactionOfPayment(event.payment) });
      applyOne(state, { t: 'payment.created', payment: event.payment });
      return;
    case 'payment.created':
      assert(!state.payments.hasHot(event.payment.id), 'apply: payment exists');
      state.payments.set(event.payment.id, { ...event.payment });
      if (expiresUnpaid(event.payment)) state.due.set(collectionDue(event.payment));
      return;
    case 'payment.rail': {
      const payment = state.payments.mutable(event.id);
      assert(payment !== undefined, 'apply: payment missing');
      payment.rail = { providerReference: event.providerReference, payUrl: event.payUrl };
      payment.updatedAtMs = event.atMs;
      return;
    }
    case 'payment.moved': {
      const payment = state.payments.mutable(event.id);
      assert(payment !== undefined, 'apply: payment missing');
      payment.status = event.status;
      payment.updatedAtMs = event.atMs;
      // A collection that waits no more keeps its expiry row until the sweep finds it so (one write fewer).
      if (expiresUnpaid(payment)) state.due.set(collectionDue(payment));
      return;
    }
    case 'ledger':
      touchWallets(state, event.ops, event.atMs); // before: commit and void remove the hold it reads
      for (const op of event.ops) applyLedgerOp(state.ledger, op);
      return;
    case 'quote.created':
      assert(!state.quotes.hasHot(event.quote.id), 'apply: quote exists');
      state.quotes.set(event.quote.id, { ...event.quote });
      return;
    case 'exchange.created': {
      const quote = state.quotes.mutable(event.exchange.quoteId);
      assert(quote !== undefined && quote.usedBy === null, 'apply: exchange needs an unused quote');
      assert(!state.exchanges.hasHot(event.exchange.id), 'apply: exchange exists');
      quote.usedBy = event.exchange.id;
      state.exchanges.set(event.exchange.id, { ...event.exchange });
      return;
    }
    case 'beneficiary.created':
      assert(!state.beneficiaries.has(event.beneficiary.id), 'apply: beneficiary exists');
      state.beneficiaries.set(event.beneficiary.id, { ...event.beneficiary });
      return;
    case 'transfer.created': {
      assert(!state.transfers.hasHot(event.transfer.id), 'apply: transfer exists');
      if (event.transfer.quoteId !== null) {
        const quote = state.quotes.mutable(event.transfer.quoteId);
        assert(quote !== undefined && quote.usedBy === null, 'apply: transfer needs an unused quote');
        quote.usedBy = event.transfer.id;
      }
      state.transfers.set(event.transfer.id, { ...event.transfer });
      return;
    }
    case 'transfer.moved': {
      const transfer = state.transfers.mutable(event.id);
      assert(transfer !== undefined, 'apply: transfer missing');
      transfer.status = event.status;
      transfer.updatedAtMs = event.atMs;
      if (event.providerReference !== undefined) transfer.providerReference = event.providerReference;
      return;
    }
    case 'transfer.credited_in':
      assert(!state.inboundCredits.hasHot(event.credit.transferId), 'apply: transfer credited twice');
      state.inboundCredits.set(event.credit.transferId, { ...event.credit });
      return;
    case 'outbox.added':
      assert(!state.outbox.has(event.event.id), 'apply: outbox event exists');
      state.outbox.set(event.event.id, { ...event.event });
      return;
    case 'squote.created':
      assert(!state.serviceQuotes.hasHot(event.quote.id), 'apply: service quote exists');
      state.serviceQuotes.set(event.quote.id, { ...event.quote });
      return;
    case 'order.created': {
      assert(!state.orders.hasHot(event.order.id), 'apply: order exists');
      if (event.order.quoteId !== null) {
        const quote = state.serviceQuotes.mutable(event.order.quoteId);
        assert(quote !== undefined && quote.usedBy === null, 'apply: order needs an unused quote');
        quote.usedBy = event.order.id;
      }
      state.orders.set(event.order.id, Object.assign({}, event.order, event.order.history === undefined ? {} : { history: [...event.order.history] }));
      return;
    }
    case 'order.moved': {
      const order = state.orders.mutable(event.id);
      assert(order !== undefined, 'apply: order missing');
      order.status = event.status;
      order.updatedAtMs = event.atMs;
      order.history?.push({ status: event.status, atMs: event.atMs });
      if (event.providerReference !== undefined) order.providerReference = event.providerReference;
      if (event.fulfillmentSnapshot !== undefined) order.fulfillmentSnapshot = event.fulfillmentSnapshot;
      if (event.dispatchAttempt !== undefined) order.dispatchAttempt = event.dispatchAttempt;
      if (event.paymentId !== undefined) order.paymentId = event.paymentId;
      if (event.paymentTransactionId !== undefined) order.paymentTransactionId = event.paymentTransactionId;
      return;
    }
    case 'order.refund': {
      const order = state.orders.mutable(event.id);
      const txn = state.transactions.mutable(event.refund.paymentTransactionId);
      assert(order !== undefined && txn !== undefined, 'apply: refund of a missing order or collection');
      const { paymentId: _payment, paymentTransactionId: _txn, ...refund } = event.refund;
      // One refund per collection, in the order they were opened: a completion replaces its opening.
      const refunds = order.refunds ?? [];
      const at = refunds.findIndex((r) => r.paymentTransactionId === event.refund.paymentTransactionId);
      order.refunds = at < 0 ? [...refunds, { ...event.refund }] : refunds.map((r, i) => (i === at ? { ...event.refund } : r));
      order.updatedAtMs = event.atMs;
      txn.refund = refund;
      txn.updatedAtMs = event.atMs;
      return;
    }
    case 'outbox.handed':
      for (const id of event.ids) state.outbox.delete(id);
      // Emptied: a new map rather than the old one rehashing in the old generation (EntityTable.evict).
      if (state.outbox.size === 0) state.outbox = new Map();
      return;
    case 'idem.stored':
      // No "exists" guard: on replay the shard file already holds the record this event wrote.
      if (event.inRow === true) return;
      // A reply named by view is rebuilt here, where the state is exactly what the live reply saw.
      if (event.record.view === undefined) state.idempotency.set(event.record);
      else {
        const { view, ...record } = event.record;
        state.idempotency.set(Object.assign({}, record, { json: viewReplyJson(state, view) }));
      }
      return;
    case 'idem.expired':
      if ('scopes' in event) state.idempotency.forget(event.scopes);
      else state.idempotency.expire(event.cutoffMs, event.defaultCutoffMs);
      return;
    case 'quotes.expired':
      for (const id of event.fx) {
        const quote = state.quotes.mutable(id);
        assert(quote !== undefined && quote.usedBy === null, 'apply: only an unused quote expires');
        quote.expired = true;
      }
      for (const id of event.service) {
        const quote = state.serviceQuotes.mutable(id);
        assert(quote !== undefined && quote.usedBy === null, 'apply: only an unused quote expires');
        quote.expired = true;
      }
      return;
    default: {
      const never: never = event;
      throw new Error(`apply: unknown event ${JSON.stringify(never)}`);
    }
  }
}
