// When a sandbox collection expires and which ones wait cold for their payer: rules on a payment
// alone, shared by the handlers, replay (events.ts), views and partition images. Shard worker; pure.
import type { DueEntry } from '../store/due-log.ts';

/** What the rules read of a payment (state.ts's Payment has it; declared here so state.ts can use them). */
interface Payment {
  id: string;
  owner: string;
  status: string;
  method: string;
  orderId?: string;
  instructions: { expiresAtMs: number } | null;
  createdAtMs: number;
}

/**
 * A sandbox collection its payer can still pay, a service order's included: unpaid at its expiry, the
 * sweep fails it with EXPIRED (and its order with it). Live ones end by their connector's word.
 */
export function expiresUnpaid(payment: Payment): boolean {
  return payment.status === 'pending' && payment.method !== 'wallet' && payment.owner.startsWith('test:');
}

/**
 * A sandbox collection waiting for its payer, outside any order: nothing moves it but the payer
 * (settle), a failure, a cancel or expiry, all of which read it by id, so it waits cold. (Live ones and
 * order payments stay hot: a connector is requeried, an order reads its payment.)
 */
export function awaitsPayer(payment: Payment): boolean {
  return expiresUnpaid(payment) && payment.orderId === undefined;
}

/** When a collection stops accepting the payer's money: its instructions' expiry, else a day after creation. */
export function collectionExpiresAtMs(payment: Payment): number {
  return payment.instructions?.expiresAtMs ?? payment.createdAtMs + COLLECTION_TTL_MS;
}

/** How long a collection's instructions (and hosted page) stay payable: one day. */
export const COLLECTION_TTL_MS = 86_400_000;

export function collectionDue(payment: Payment): DueEntry {
  return { id: payment.id, expiresAtMs: collectionExpiresAtMs(payment), owner: payment.owner };
}
