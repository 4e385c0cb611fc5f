// Request and response schemas of the account's API keys (GET/POST /v1/keys, revoke, rotate).
// Any thread. A secret appears only in the answer that created it (create, rotate).
// Invariant: a key's view never carries its hash or its secret.
import Type, { type Static } from 'typebox';
import { Nullable, SafeText, Timestamp } from './common.schema.ts';

/** Scopes and allow-list entries a new key may carry (each checked further by scopeProblem / ipAllowProblem). */
export const KEY_SCOPES_MAX = 16;
export const KEY_IP_ALLOW_MAX = 32;
/** How long a rotated key may keep working, at most (a week). */
export const KEY_GRACE_HOURS_MAX = 168;

export const KeyCreate = Type.Object(
  {
    scopes: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 40 }), { minItems: 1, maxItems: KEY_SCOPES_MAX, uniqueItems: true })),
    ip_allow: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: KEY_IP_ALLOW_MAX, uniqueItems: true })),
    customer_id: Type.Optional(Type.String({ minLength: 1, maxLength: 40 })),
    label: Type.Optional(SafeText({ minLength: 1, maxLength: 100 })),
  },
  { additionalProperties: false },
);
export type KeyCreate = Static<typeof KeyCreate>;

export const KeyRotate = Type.Object(
  { grace_hours: Type.Optional(Type.Integer({ minimum: 0, maximum: KEY_GRACE_HOURS_MAX })) },
  { additionalProperties: false },
);

export const ApiKey = Type.Object({
  id: Type.String(),
  object: Type.Literal('api_key'),
  prefix: Type.String({ description: 'the first characters of the secret, to tell keys apart' }),
  account: Type.String(),
  env: Type.Union([Type.Literal('test'), Type.Literal('live')]),
  scopes: Type.Array(Type.String()),
  ip_allow: Type.Array(Type.String()),
  customer_id: Nullable(Type.String()),
  status: Type.Union([Type.Literal('active'), Type.Literal('revoked'), Type.Literal('expired')]),
  label: Nullable(Type.String()),
  created_at: Timestamp,
  expires_at: Nullable(Timestamp),
  secret: Type.Optional(Type.String({ description: 'only in the answer of the create or rotate call' })),
});
