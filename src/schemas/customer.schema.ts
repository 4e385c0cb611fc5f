// Request and response schemas of customers and wallets.
// Any thread. PATCH fields are all optional; `pin` is write-only and stored as a slow salted hash.
// Invariant: a customer's phone is E.164 and its email is unique per account (checked beyond the schema).
import Type, { type Static } from 'typebox';
import { CountryCode, CurrencyCode, Timestamp, Ulid, SafeText } from './common.schema.ts';

// One schema per field that creation and PATCH share (the normalising rules are shared too:
// customerFields in src/api/customers.ts), so a value one of them refuses the other refuses as well.
const CustomerName = SafeText({ minLength: 1, maxLength: 200, description: 'full legal name; trimmed, never blank' });
const CustomerEmail = SafeText({ minLength: 3, maxLength: 254, description: 'trimmed and lower-cased' });
const CustomerPhone = SafeText({ minLength: 4, maxLength: 20, description: 'E.164, e.g. +2348031234567' });

export const CustomerCreate = Type.Object(
  {
    name: CustomerName,
    email: CustomerEmail,
    phone: CustomerPhone,
    country_code: CountryCode,
  },
  { additionalProperties: false },
);
export type CustomerCreate = Static<typeof CustomerCreate>;

export const CustomerPatch = Type.Object(
  {
    name: Type.Optional(CustomerName),
    email: Type.Optional(CustomerEmail),
    phone: Type.Optional(CustomerPhone),
    pin: Type.Optional(Type.Union([Type.String({ pattern: '^[0-9]{4,6}$' }), Type.Null()], { description: '4-6 digit transaction PIN; null removes it' })),
    tier: Type.Optional(Type.Union([Type.Literal('tier_1'), Type.Literal('tier_2'), Type.Literal('tier_3')])),
    kyc_level: Type.Optional(Type.Integer({ minimum: 0, maximum: 3 })),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type CustomerPatch = Static<typeof CustomerPatch>;

export const Customer = Type.Object({
  id: Ulid,
  object: Type.Literal('customer'),
  name: Type.String(),
  email: Type.String(),
  phone: Type.String(),
  country_code: CountryCode,
  tier: Type.String(),
  kyc_level: Type.Integer(),
  pin_set: Type.Boolean(),
  wallets: Type.Array(Type.Object({ id: Ulid, currency: CurrencyCode })),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export const Wallet = Type.Object({
  id: Ulid,
  object: Type.Literal('wallet'),
  customer_id: Ulid,
  currency: CurrencyCode,
  balance_minor: Type.Integer(),
  available_minor: Type.Integer(),
  held_minor: Type.Integer(),
  incoming_minor: Type.Integer(),
  created_at: Timestamp,
  updated_at: Timestamp,
});
