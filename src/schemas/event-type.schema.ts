// The webhook event types of the spec: one list for the outbox (shard), subscriptions (front end) and
// OpenAPI. Any thread; pure.
// Invariant: an event is only ever emitted, subscribed to or documented under one of these names.
import Type from 'typebox';

export const EVENT_TYPES = ['payment.completed', 'transfer.completed', 'transfer.failed', 'service_order.completed', 'service_order.failed'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export const EventTypeSchema = Type.Union(EVENT_TYPES.map((t) => Type.Literal(t)));
