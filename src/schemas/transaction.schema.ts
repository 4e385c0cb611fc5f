// Request and response schemas of transactions, payments and the sandbox test helpers.
// Any thread. Transactions record every money-moving attempt; payments are collections into a wallet
// (bank_transfer) or inline wallet debits (wallet).
// Invariant: types and statuses here are exactly the spec's.
import Type, { type Static } from 'typebox';
import { AmountMinor, CurrencyCode, Nullable, Reference, Timestamp, Ulid, SafeText } from './common.schema.ts';

export const TransactionCreate = Type.Object(
  {
    type: Type.Union([Type.Literal('payment'), Type.Literal('transfer'), Type.Literal('exchange'), Type.Literal('funding')]),
    customer_id: Ulid,
    amount_minor: AmountMinor,
    currency: CurrencyCode,
    reference: Type.Optional(Reference),
  },
  { additionalProperties: false },
);
export type TransactionCreate = Static<typeof TransactionCreate>;

export const Transaction = Type.Object({
  id: Ulid,
  object: Type.Literal('transaction'),
  type: Type.String(),
  status: Type.Union(['pending', 'processing', 'completed', 'failed', 'unknown'].map((s) => Type.Literal(s))),
  customer_id: Ulid,
  amount_minor: Type.Integer(),
  fee_minor: Type.Integer(),
  currency: CurrencyCode,
  reference: Nullable(Type.String()),
  failure: Nullable(Type.Object({ code: Type.String(), stage: Type.String(), message: Type.String() })),
  hold: Type.Object({ status: Type.String(), amount_minor: Type.Integer() }),
  attempt: Type.Integer(),
  status_history: Type.Array(Type.Object({ status: Type.String(), at: Timestamp, attempt: Type.Integer(), failure_code: Nullable(Type.String()) })),
  payment_id: Nullable(Ulid),
  transfer_id: Nullable(Ulid),
  refund: Type.Optional(Type.Object({
    status: Type.Union([Type.Literal('pending'), Type.Literal('completed')]),
    amount_minor: Type.Integer(),
    currency: CurrencyCode,
    created_at: Timestamp,
    completed_at: Nullable(Timestamp),
  }, { description: 'a service order\'s collection whose money went back to the payer (the purchase failed)' })),
  reconciliation: Type.Optional(
    Type.Object(
      {
        status: Type.Union([Type.Literal('required'), Type.Literal('resolved')]),
        recorded_outcome: Type.Union([Type.Literal('completed'), Type.Literal('failed')]),
        reported_outcome: Type.Union([Type.Literal('completed'), Type.Literal('failed')]),
        object: Type.Union([Type.Literal('transfer'), Type.Literal('payment'), Type.Literal('service_order')]),
        object_id: Ulid,
        attempt: Type.Integer(),
        reported_by: Type.String(),
        provider_reference: Nullable(Type.String()),
        reported_at: Timestamp,
        resolution: Nullable(Type.Union([Type.Literal('recorded'), Type.Literal('reported')])),
        resolved_at: Nullable(Timestamp),
      },
      { description: 'Present only when a rail reported an outcome that contradicts the final status recorded here. While status is required, retry answers 409 CONFLICT until an operator resolves it.' },
    ),
  ),
  exchange_id: Type.Optional(Ulid),
  from_amount_minor: Type.Optional(Type.Integer({ description: 'exchange: the source leg (same as amount_minor)' })),
  from_currency: Type.Optional(CurrencyCode),
  to_amount_minor: Type.Optional(Type.Integer({ description: 'exchange: the target leg' })),
  to_currency: Type.Optional(CurrencyCode),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export const PaymentCreate = Type.Object(
  {
    customer_id: Ulid,
    amount_minor: AmountMinor,
    currency: CurrencyCode,
    method: SafeText({ minLength: 1, maxLength: 32 }),
    reference: Type.Optional(Reference),
  },
  { additionalProperties: false },
);
export type PaymentCreate = Static<typeof PaymentCreate>;

export const Payment = Type.Object({
  id: Ulid,
  object: Type.Literal('payment'),
  transaction_id: Ulid,
  customer_id: Ulid,
  method: Type.String(),
  status: Type.Union(['pending', 'processing', 'completed', 'failed'].map((s) => Type.Literal(s))),
  amount_minor: Type.Integer(),
  fee_minor: Type.Integer(),
  net_amount_minor: Type.Integer(),
  currency: CurrencyCode,
  reference: Nullable(Type.String()),
  wallet_id: Ulid,
  provider: Type.Object({ type: Type.String() }, { additionalProperties: true }),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export const PaymentMethodsQuery = Type.Object({ customer_id: Type.Optional(Ulid) }, { additionalProperties: false });

export const PaymentMethods = Type.Object({
  customer_id: Ulid,
  country_code: Type.String(),
  items: Type.Array(
    Type.Object({
      method: Type.String(),
      selectable: Type.Boolean(),
      enabled: Type.Boolean(),
      reason: Nullable(Type.String()),
      min_amount_minor: Nullable(Type.Integer()),
      max_amount_minor: Nullable(Type.Integer()),
      kyc_level_min: Type.Integer(),
    }),
  ),
});

export const PaymentFail = Type.Object(
  { failure_code: Type.Optional(Type.String({ minLength: 1, maxLength: 40 })) },
  { additionalProperties: false },
);

export const ClockAdvance = Type.Object(
  { seconds: Type.Integer({ minimum: 1, maximum: 366 * 86_400, description: 'How far to move this account’s sandbox clock' }) },
  { additionalProperties: false },
);
