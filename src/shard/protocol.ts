// Messages between the front end (main thread) and shard workers: commands in, replies out.
// Both threads. Commands are plain data so they clone cheaply across the thread boundary.
// Invariant: a command names its partition; the front end routes it to partition % shards.
import type { RailAnswer, RailKind, RailOp } from '../rails/rail.ts';
import type { DueEntry } from '../store/due-log.ts';
import type { OutboxEvent, Owner, StoredReply, Tier } from './state.ts';
import type { ValidationSnapshot } from '../catalogue/services-recipient.ts';
import type { ShardMetricsMessage } from '../metrics/shard-metrics.ts';
import type { EntryQuery, ListQuery } from '../store/list-index.ts';

export interface CommandBase {
  owner: Owner;
  /** Sandbox-clock time of the request: the only clock the shard ever reads. */
  nowMs: number;
  partition: number;
  /**
   * Set for idempotent POSTs: scope = env:account:key, fingerprint = hash of method, path and body;
   * `seq`, on `idem.replay` only: the record's row in the shard file, from the front end's index;
   * `h`: the scope's hash, which the front end's index computed already (stored with the record).
   */
  idem?: { scope: string; fingerprint: string; seq?: number; h?: number };
  /** A customer-scoped key may reach only this customer's resources. */
  customerScope?: string | null;
}

export interface CustomerCreateBody {
  name: string;
  email: string;
  phone: string;
  countryCode: string;
  /** Set by the front end when another customer of the account holds this email or phone. */
  duplicate: 'email' | 'phone' | null;
}

export interface CustomerPatchBody {
  name?: string;
  email?: string;
  phone?: string;
  pinHash?: string | null;
  tier?: Tier;
  kycLevel?: number;
}

/** What a service quote or order names: the service, where, how much, for whom. */
export interface ServiceRequest {
  customerId: string;
  countryCode: string;
  serviceCode: string;
  providerCostMinor: number;
  currency: string;
  paymentMethod: string | null;
  operatorCode: string | null;
  meterType: string | null;
  accountRef: string | null;
  phone: string | null;
  promotionCode: string | null;
  /** The plan chosen for a fixed-price service (GET …/plans `code`); a quote that names one binds it. */
  productCode: string | null;
  /**
   * Live cross-currency quotes: the FX connector's mid rate (units of `toCurrency` per `fromCurrency`),
   * asked by the front end, or why there is none (answered after the shard's own checks).
   */
  fx?: { fromCurrency: string; toCurrency: string; midRate: string } | { fromCurrency: string; toCurrency: string; refusal: { code: 'VALIDATION' | 'FX_QUOTE_UNAVAILABLE'; message: string } };
}

export type CommandBody =
  | { k: 'customer.create'; body: CustomerCreateBody }
  | { k: 'customer.get'; id: string }
  | { k: 'customer.update'; id: string; patch: CustomerPatchBody }
  | { k: 'wallet.get'; id: string }
  | { k: 'txn.create'; body: { type: 'payment' | 'transfer' | 'exchange' | 'funding'; customerId: string; amountMinor: number; currency: string; reference: string | null } }
  | { k: 'txn.get'; id: string }
  | { k: 'txn.cancel'; id: string }
  | { k: 'txn.retry'; id: string }
  | { k: 'payment.methods'; customerId: string }
  | { k: 'payment.create'; body: { customerId: string; amountMinor: number; currency: string; method: string; reference: string | null } }
  | { k: 'payment.get'; id: string }
  | { k: 'payment.settle'; id: string; source: 'test_helper' | 'rail'; /** the attempt a rail answers for */ attempt?: number }
  | { k: 'payment.fail'; id: string; code: string; source: 'test_helper' | 'rail' }
  | { k: 'payment.submit'; id: string }
  | { k: 'payment.checkout'; id: string; token: string; action: 'view' | 'complete' | 'decline' }
  | { k: 'fx.quote'; body: { customerId: string; fromCurrency: string; toCurrency: string; fromAmountMinor: number; /** live: the FX connector's mid rate (units of `to` per `from`), asked by the front end */ midRate?: string } }
  | { k: 'fx.execute'; quoteId: string; /** the customer named in the request, if any: must be the quote's */ customerId?: string | null }
  | { k: 'customer.secret'; id: string }
  | { k: 'customer.pin_failed'; id: string }
  | { k: 'beneficiary.create'; body: { customerId: string; type: 'bank_account' | 'mobile_money' | 'wallet'; bankCode: string | null; accountNumber: string; currency: string; country: string | null; /** the account's name as resolved by the front end (a wallet's holder, or the resolve rail's answer); null: not resolved */ resolvedName: string | null; /** why the rail could not resolve it */ resolveProblem?: string } }
  | { k: 'wallet.resolve'; id: string }
  | { k: 'transfer.credit'; transferId: string; walletId: string; amountMinor: number; currency: string }
  | { k: 'transfer.credited'; id: string; outcome: 'credited' | 'rejected' }
  | { k: 'beneficiary.get'; id: string }
  | { k: 'transfer.create'; body: { customerId: string; beneficiaryId: string; amountMinor: number; currency: string; narration: string | null; quoteId: string | null } }
  | { k: 'transfer.get'; id: string }
  | { k: 'transfer.submit'; id: string }
  | { k: 'outbox.ack'; ids: string[] }
  | { k: 'squote.create'; body: ServiceRequest }
  | { k: 'order.create'; body: ServiceRequest & { paymentMethod: string; quoteId: string | null; idempotencyKey: string; metadata: Record<string, unknown> | null; /** the fields of the client's validation_snapshot an order reads */ validationSnapshot?: ValidationSnapshot | null } }
  | { k: 'order.get'; id: string; projection: 'full' | 'status'; /** the customer the read acts for (query customer_id) */ customerId?: string | null }
  | { k: 'order.open'; id: string }
  | { k: 'order.paid'; id: string }
  | { k: 'order.retry'; id: string }
  | { k: 'order.refund'; id: string }
  | { k: 'order.resolve'; id: string; outcome: 'delivered' | 'failed' }
  /** An operator's decision on a transaction a rail contradicted (kobo reconcile resolve). */
  | { k: 'txn.reconcile'; id: string; outcome: 'recorded' | 'reported'; note: string | null }
  /** Forget idempotency records older than each owner's cutoff (sandbox clocks differ per owner). */
  | { k: 'idem.expire'; cutoffMs: Record<string, number>; defaultCutoffMs: number }
  /** Take unused quotes past expiry out of the heap; the cutoff is each owner's sandbox-clock now. */
  | { k: 'quotes.expire'; cutoffMs: Record<string, number>; defaultCutoffMs: number }
  /** Sandbox collections still unpaid when their instructions expire fail with EXPIRED (owner clocks). */
  | {
      k: 'payments.expire';
      cutoffMs: Record<string, number>;
      defaultCutoffMs: number;
      /** Rows of the shard file's `due` table the sweep found due in this partition; absent: the heap index's. */
      candidates?: DueEntry[];
    }
  | { k: 'idem.replay' }
  /** A rail's answer about one entity and attempt (see src/rails/rail.ts): a connector's response or callback; null: the sandbox rail's, taken when applied. */
  | { k: 'rail.answer'; kind: RailKind; id: string; attempt: number; phase: RailOp | 'callback'; answer: RailAnswer | null; /** callbacks: the connector that sent it */ connector?: string };

export type Command = CommandBase & CommandBody;

/** The commands for one shard gathered in one event-loop turn of the front end: one hop per batch. */
export interface CommandMessage {
  type: 'commands';
  items: Array<{ n: number; cmd: Command }>;
}

/** Every reply of one group commit, in one message: one thread hop per batch, not per request. */
export interface ReplyMessage {
  type: 'replies';
  items: Array<{ n: number; reply: StoredReply }>;
  /** The views of wallets the commit changed, taken by the front end before it hands out any reply. */
  wallets: WalletUpdate[];
}

/** A wallet as GET /v1/wallets/{id} shows it after a durable change, with who may see it. */
export interface WalletUpdate {
  id: string;
  owner: string;
  customerId: string;
  /** The 200 body, byte for byte what the shard would answer. */
  json: string;
}

/** What a shard reports after recovery, so the front end can rebuild its routing indexes. */
export interface IndexMessage {
  type: 'ready';
  shard: number;
  customers: Array<[owner: Owner, email: string, phone: string, id: string]>;
  /** Every stored idempotency key as flat pairs [hash of its scope, packed location (packIdemAt), …]. */
  idempotencyScopes: Float64Array;
  recovered: { replayed: number; cut: number; lastLsn: number };
}


/**
 * A command for another partition (possibly on another shard), sent through the front end. When
 * `replyTo` is set, the target's answer goes back to the origin as that command, with `outcome` set,
 * after `delayMs` (the simulated time a provider takes to confirm).
 */
export interface ForwardMessage {
  type: 'forward';
  cmd: Command;
  replyTo?: { cmd: CommandBase & { k: 'transfer.credited'; id: string }; delayMs: number };
}

/** Outbox events now durable in a shard's WAL, for the webhook dispatcher to store and acknowledge. */
export interface OutboxMessage {
  type: 'outbox';
  events: OutboxEvent[];
}

/** Readiness: a shard answers a ping from its event loop (it is not stuck in a batch or a replay). */
export type PingMessage = { type: 'ping'; n: number };
export type PongMessage = { type: 'pong'; n: number };

/** What a list asks one shard: a page of rows, a page of a wallet's entries, or one event by id. */
export type ShardListQuery = { nowMs: number; customerScope: string | null } & (
  | { what: 'rows'; q: ListQuery }
  | { what: 'entries'; owner: string; q: EntryQuery }
  | { what: 'event'; owner: string; id: string }
);

/** A shard's part of a list: rows in the query's order, each with its sort key and its JSON. */
export interface ListAnswer {
  rows: Array<{ key: string; json: string }>;
  error?: { status: number; code: string; message: string };
}

export type ListMessage = { type: 'list'; n: number; query: ShardListQuery };
export type ListPageMessage = { type: 'list.page'; n: number } & ListAnswer;

export type ShardToMain = ListPageMessage | ShardMetricsMessage | PongMessage | ReplyMessage | IndexMessage | ForwardMessage | OutboxMessage | { type: 'idem.expired'; pairs: Array<[hash: number, packedAt: number]> } | { type: 'snapshot.done'; n: number; partitions: number; lsn: number };
/** `index`: a front that (re)connects to a shard on another process asks for a fresh `ready` report and the unacknowledged outbox. */
export type MainToShard = PingMessage | CommandMessage | ListMessage | { type: 'snapshot'; n: number } | { type: 'stop' } | { type: 'index' };
