// Encoding of a partition's state into a snapshot image and back (JSON, gzip, checksummed).
// Runs in shard workers and the CLI. Encoding is synchronous and short per partition; compression
// runs on libuv's thread pool (zlib async) so the shard thread keeps serving commands meanwhile.
// Invariant: decode(encode(state)) is deep-equal to state.
import { gunzipSync, gzip, gzipSync } from 'node:zlib';
import { promisify } from 'node:util';
import type { Hold, LedgerAccount } from '../ledger/ledger.ts';
import type { Beneficiary, InboundCredit, OutboxEvent, ServiceOrder, ServiceQuote, Customer, Exchange, Transfer, ExchangeQuote, IdempotencyRecord, PartitionState, Payment, Transaction } from '../shard/state.ts';
import { snapshotChecksum, type SnapshotRow } from './shard-store.ts';

const gzipAsync = promisify(gzip);

interface PartitionImage {
  v: 1;
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
  idempotency: IdempotencyRecord[];
}

export function encodePartition(state: PartitionState): string {
  const image: PartitionImage = {
    v: 1,
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
    idempotency: [...state.idempotency.values()],
  };
  return JSON.stringify(image);
}

export function decodePartition(json: string): PartitionState {
  const image = JSON.parse(json) as PartitionImage;
  if (image.v !== 1) throw new Error(`snapshot: unknown image version ${String(image.v)}`);
  return {
    partition: image.partition,
    customers: new Map(image.customers.map((c) => [c.id, c])),
    // Images written before transfers existed carry no transferId.
    transactions: new Map(image.transactions.map((t) => [t.id, { ...t, transferId: t.transferId ?? null }])),
    payments: new Map(image.payments.map((p) => [p.id, p])),
    quotes: new Map((image.quotes ?? []).map((q) => [q.id, q])),
    exchanges: new Map((image.exchanges ?? []).map((e) => [e.id, e])),
    beneficiaries: new Map((image.beneficiaries ?? []).map((b) => [b.id, b])),
    transfers: new Map((image.transfers ?? []).map((t) => [t.id, t])),
    inboundCredits: new Map((image.inboundCredits ?? []).map((c) => [c.transferId, c])),
    outbox: new Map((image.outbox ?? []).map((e) => [e.id, e])),
    serviceQuotes: new Map((image.serviceQuotes ?? []).map((q) => [q.id, q])),
    orders: new Map((image.orders ?? []).map((o) => [o.id, o])),
    idempotency: new Map(image.idempotency.map((r) => [r.scope, r])),
    ledger: {
      accounts: new Map(image.accounts.map((a) => [a.id, a])),
      holds: new Map(image.holds.map((h) => [h.id, h])),
    },
  };
}

export function snapshotRow(options: { partition: number; lsn: number; takenAtMs: number; body: Buffer }): SnapshotRow {
  return { ...options, crc: snapshotChecksum(options.partition, options.lsn, options.body) };
}

export async function compressImage(json: string): Promise<Buffer> {
  return gzipAsync(json);
}

export function compressImageSync(json: string): Buffer {
  return gzipSync(json);
}

export function decompressImage(body: Buffer): string {
  return gunzipSync(body).toString('utf8');
}
