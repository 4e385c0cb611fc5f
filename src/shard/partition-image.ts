// A partition's snapshot image: its heap state as JSON (v2: hot state only) and back.
// Runs in shard workers and the CLI; src/store/snapshot.ts compresses and checksums the result.
// Invariant: decode(encode(state)) is deep-equal to state.
import type { Hold, LedgerAccount } from '../ledger/ledger.ts';
import { emptyPartition, type Beneficiary, type InboundCredit, type OutboxEvent, type ServiceOrder, type ServiceQuote, type Customer, type Exchange, type Transfer, type ExchangeQuote, type IdempotencyRecord, type PartitionState, type PartitionTiers, type Payment, type Transaction } from './state.ts';
import { collectionDue, expiresUnpaid } from './collections.ts';

/**
 * v2 holds the heap only: finished entities are in the cold table and idempotency records in their
 * own table, so an image grows with the working set, not with history. v1 (everything) still decodes.
 */
interface PartitionImage {
  v: 1 | 2;
  partition: number;
  customers: Customer[];
  accounts: LedgerAccount[];
  holds: Hold[];
  transactions: Transaction[];
  payments: Payment[];
  quotes?: ExchangeQuote[];
  exchanges?: Exchange[];
  beneficiaries?: Beneficiary[];
  transfers?: Transfer[];
  inboundCredits?: InboundCredit[];
  outbox?: OutboxEvent[];
  serviceQuotes?: ServiceQuote[];
  orders?: ServiceOrder[];
  /** v1 only; v2 images leave idempotency records to their table. */
  idempotency?: IdempotencyRecord[];
  /** Images of 2026-11-23 only: waiting collections' expiries (now in the shard file's `due` table). */
  collectionsDue?: Array<[id: string, expiresAtMs: number, owner: string]>;
}

export function encodePartition(state: PartitionState): string {
  const image: PartitionImage = {
    v: 2,
    partition: state.partition,
    customers: [...state.customers.values()],
    accounts: [...state.ledger.accounts.values()],
    holds: [...state.ledger.holds.values()],
    transactions: [...state.transactions.values()],
    payments: [...state.payments.values()],
    quotes: [...state.quotes.values()],
    exchanges: [...state.exchanges.values()],
    beneficiaries: [...state.beneficiaries.values()],
    transfers: [...state.transfers.values()],
    inboundCredits: [...state.inboundCredits.values()],
    outbox: [...state.outbox.values()],
    serviceQuotes: [...state.serviceQuotes.values()],
    orders: [...state.orders.values()],
  };
  return JSON.stringify(image);
}

function fill<T>(table: { set(id: string, entity: T): void }, items: readonly T[] | undefined, key: (item: T) => string): void {
  for (const item of items ?? []) table.set(key(item), item);
}

export function decodePartition(json: string, tiers: PartitionTiers | null = null): PartitionState {
  const image = JSON.parse(json) as PartitionImage;
  if (image.v !== 1 && image.v !== 2) throw new Error(`snapshot: unknown image version ${String(image.v)}`);
  const state = emptyPartition(image.partition, tiers);
  for (const c of image.customers) state.customers.set(c.id, c);
  // Images written before transfers existed carry no transferId.
  fill(state.transactions, image.transactions.map((t) => Object.assign({}, t, { transferId: t.transferId ?? null })), (t) => t.id);
  fill(state.payments, image.payments, (p) => p.id);
  fill(state.quotes, image.quotes, (q) => q.id);
  fill(state.exchanges, image.exchanges, (e) => e.id);
  for (const b of image.beneficiaries ?? []) state.beneficiaries.set(b.id, b);
  fill(state.transfers, image.transfers, (t) => t.id);
  fill(state.inboundCredits, image.inboundCredits, (c) => c.transferId);
  for (const e of image.outbox ?? []) state.outbox.set(e.id, e);
  fill(state.serviceQuotes, image.serviceQuotes, (q) => q.id);
  fill(state.orders, image.orders, (o) => o.id);
  for (const r of image.idempotency ?? []) state.idempotency.set(r);
  for (const a of image.accounts) state.ledger.accounts.set(a.id, a);
  for (const h of image.holds) state.ledger.holds.set(h.id, h);
  // Written to the `due` table at start-up (recovery drains them with the image's LSN).
  for (const [id, expiresAtMs, owner] of image.collectionsDue ?? []) state.due.set({ id, expiresAtMs, owner });
  // Images from before waiting collections went cold hold them hot: index them (they leave the heap
  // with the other finished entities at start-up).
  for (const p of image.payments) if (expiresUnpaid(p)) state.due.set(collectionDue(p));
  return state;
}
