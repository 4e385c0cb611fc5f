// Request and response schemas of webhook subscriptions and deliveries.
// Any thread. The signing secret appears only in the create response.
// Invariant: a subscription names only the spec's event types.
import Type, { type Static } from 'typebox';
import { Nullable, Timestamp, Ulid, SafeText } from './common.schema.ts';
import { EVENT_TYPES, EventTypeSchema } from './event-type.schema.ts';

export const SubscriptionCreate = Type.Object(
  {
    url: SafeText({ minLength: 8, maxLength: 2048 }),
    events: Type.Array(EventTypeSchema, { minItems: 1, maxItems: EVENT_TYPES.length, uniqueItems: true }),
  },
  { additionalProperties: false },
);
export type SubscriptionCreate = Static<typeof SubscriptionCreate>;

export const Subscription = Type.Object({
  id: Ulid,
  object: Type.Literal('webhook_subscription'),
  url: Type.String(),
  events: Type.Array(Type.String()),
  status: Type.Union([Type.Literal('active'), Type.Literal('disabled')]),
  consecutive_failures: Type.Integer(),
  created_at: Timestamp,
  secret: Type.Optional(Type.String({ description: 'whsec_…, in the create response only' })),
});

export const DeliveriesQuery = Type.Object(
  {
    subscription_id: Type.Optional(Ulid),
    event_type: Type.Optional(EventTypeSchema),
    status: Type.Optional(Type.Union([Type.Literal('pending'), Type.Literal('succeeded'), Type.Literal('failed')])),
    limit: Type.Optional(Type.String({ pattern: '^(100|[1-9][0-9]?)$', description: '1-100, default 50' })),
  },
  { additionalProperties: false },
);

export const Delivery = Type.Object({
  id: Ulid,
  object: Type.Literal('webhook_delivery'),
  event_id: Type.String(),
  event_type: Type.String(),
  event_key: Type.String(),
  subscription_id: Ulid,
  status: Type.String(),
  attempts: Type.Integer(),
  next_attempt_at: Nullable(Timestamp),
  last_response_code: Nullable(Type.Integer()),
  last_duration_ms: Nullable(Type.Integer()),
  last_error: Nullable(Type.String()),
  attempt_log: Type.Array(Type.Object({ attempt: Type.Integer(), at: Timestamp, response_code: Nullable(Type.Integer()), duration_ms: Type.Integer(), error: Nullable(Type.String()), ok: Type.Boolean() })),
  created_at: Timestamp,
  updated_at: Timestamp,
});
