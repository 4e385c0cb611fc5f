// Request and response schemas of beneficiaries and transfers.
// Any thread. A mobile_money beneficiary's account_number is the E.164 phone and bank_code its operator.
// Invariant: amount_minor is a positive integer; the fee is charged on top and held with it.
import Type, { type Static } from 'typebox';
import { AmountMinor, CountryCode, CurrencyCode, Nullable, Timestamp, Ulid, SafeText } from './common.schema.ts';

export const BeneficiaryCreate = Type.Object(
  {
    customer_id: Type.Optional(Ulid),
    type: Type.Union([Type.Literal('bank_account'), Type.Literal('mobile_money'), Type.Literal('wallet')]),
    bank_code: Type.Optional(SafeText({ minLength: 1, maxLength: 16, description: 'national bank code, or mobile-money operator code' })),
    account_number: Type.Optional(SafeText({ minLength: 1, maxLength: 34 })),
    currency: CurrencyCode,
    country: Type.Optional(CountryCode),
  },
  { additionalProperties: false },
);
export type BeneficiaryCreate = Static<typeof BeneficiaryCreate>;

export const Beneficiary = Type.Object({
  id: Ulid,
  object: Type.Literal('beneficiary'),
  customer_id: Ulid,
  type: Type.String(),
  currency: CurrencyCode,
  country: CountryCode,
  bank_code: Nullable(Type.String()),
  bank_name: Nullable(Type.String()),
  account_number: Type.String(),
  account_name: Type.String(),
  verified: Type.Boolean(),
  created_at: Timestamp,
});

export const TransferCreate = Type.Object(
  {
    customer_id: Type.Optional(Ulid),
    beneficiary_id: Ulid,
    amount_minor: AmountMinor,
    currency: CurrencyCode,
    narration: Type.Optional(SafeText({ minLength: 1, maxLength: 140 })),
    quote_id: Type.Optional(Ulid),
  },
  { additionalProperties: false },
);
export type TransferCreate = Static<typeof TransferCreate>;

export const Transfer = Type.Object({
  id: Ulid,
  object: Type.Literal('transfer'),
  transaction_id: Ulid,
  status: Type.Union(['pending', 'processing', 'completed', 'failed', 'unknown'].map((s) => Type.Literal(s))),
  customer_id: Ulid,
  beneficiary_id: Ulid,
  amount_minor: Type.Integer(),
  fee_minor: Type.Integer(),
  currency: CurrencyCode,
  destination_amount_minor: Type.Integer(),
  destination_currency: CurrencyCode,
  quote_id: Nullable(Ulid),
  narration: Nullable(Type.String()),
  provider_reference: Nullable(Type.String()),
  created_at: Timestamp,
  updated_at: Timestamp,
});
