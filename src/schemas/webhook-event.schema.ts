// The bodies kobo POSTs to a webhook subscription, one schema per event type: the envelope (id,
// event_type, event_key, occurred_at) around the transaction's canonical payload at event time.
// Any thread. Invariant: these are the fields src/shard/lifecycle/context.ts outboxEvent() and the
// handlers that call it put in `data` (test/webhooks covers real deliveries against them).
import Type, { type TSchema } from 'typebox';
import { CurrencyCode, Nullable, Timestamp, Ulid } from './common.schema.ts';
import type { EventType } from './event-type.schema.ts';

const Failure = Type.Object({ code: Type.String({ description: 'an error code, e.g. PROVIDER_ERROR' }), stage: Type.String({ description: 'where it failed, e.g. provider or collection' }) });

/** What every event's data carries: the transaction the event is about. */
const base = {
  transaction_id: Ulid,
  amount_minor: Type.Integer({ description: 'the transaction amount in minor units' }),
  currency: CurrencyCode,
  customer_id: Ulid,
};

function envelope<T extends TSchema>(type: EventType, data: T, description: string) {
  return Type.Object({
    id: Type.String({ description: 'the event id (the same on every delivery of the event)' }),
    event_type: Type.Literal(type),
    event_key: Type.String({ description: 'event_type:transaction_id (:attempt from the second attempt on); dedupe on this' }),
    occurred_at: Timestamp,
    data,
  }, { description });
}

export const PaymentCompletedEvent = envelope('payment.completed', Type.Object({
  ...base, status: Type.Literal('completed'), payment_id: Ulid, method: Type.String(),
}), 'A payment settled: the money is in the wallet.');

export const TransferCompletedEvent = envelope('transfer.completed', Type.Object({
  ...base, status: Type.Literal('completed'), transfer_id: Ulid,
}), 'A payout reached the beneficiary; the held amount and fee are debited.');

export const TransferFailedEvent = envelope('transfer.failed', Type.Object({
  ...base, status: Type.Literal('failed'), transfer_id: Ulid, failure: Failure,
}), 'A payout failed; the hold is released. A retryable failure can be retried (a new attempt, a new event_key).');

export const ServiceOrderCompletedEvent = envelope('service_order.completed', Type.Object({
  ...base, status: Type.Literal('completed'), order_id: Ulid, service_code: Type.String(), provider_reference: Nullable(Type.String()),
}), 'A service order was fulfilled: the airtime, token or bill payment was delivered.');

export const ServiceOrderFailedEvent = envelope('service_order.failed', Type.Object({
  ...base, status: Type.Literal('failed'), order_id: Ulid, service_code: Type.String(), failure: Failure,
}), 'A service order failed; collected money goes back to the payer.');

export const WEBHOOK_EVENT_SCHEMAS: Readonly<Record<EventType, TSchema>> = {
  'payment.completed': PaymentCompletedEvent,
  'transfer.completed': TransferCompletedEvent,
  'transfer.failed': TransferFailedEvent,
  'service_order.completed': ServiceOrderCompletedEvent,
  'service_order.failed': ServiceOrderFailedEvent,
};
