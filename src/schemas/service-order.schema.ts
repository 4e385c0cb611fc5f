// Request and response schemas of service quotes and service orders (spec: Service quote, Service order,
// Order status projection). Any thread.
// Invariant: provider_cost_minor is a positive integer in the service country's currency.
import Type, { type Static } from 'typebox';
import { AmountMinor, CountryCode, CurrencyCode, Nullable, Timestamp, Ulid, SafeText } from './common.schema.ts';

const Code = SafeText({ minLength: 1, maxLength: 64 });
/** Free-form objects the caller stores with an order: their keys are text a person will read. */
const MetadataKey = SafeText({ minLength: 1, maxLength: 64 });

export const ServiceQuoteCreate = Type.Object(
  {
    provider_cost_minor: AmountMinor,
    currency: CurrencyCode,
    country_code: CountryCode,
    service_code: Code,
    payment_method: Type.Optional(Code),
    phone: Type.Optional(SafeText({ minLength: 4, maxLength: 20 })),
    account_ref: Type.Optional(SafeText({ minLength: 1, maxLength: 64 })),
    operator_code: Type.Optional(Code),
    product_code: Type.Optional(Code),
    meter_type: Type.Optional(Code),
    promotion_code: Type.Optional(Code),
    customer_id: Type.Optional(Ulid),
  },
  { additionalProperties: false },
);
export type ServiceQuoteCreate = Static<typeof ServiceQuoteCreate>;

export const ServiceOrderCreate = Type.Object(
  {
    country_code: CountryCode,
    service_code: Code,
    provider_cost_minor: AmountMinor,
    currency: CurrencyCode,
    payment_method: Code,
    idempotency_key: Type.Optional(SafeText({ minLength: 1, maxLength: 255 })),
    quote_id: Type.Optional(Ulid),
    product_code: Type.Optional(Code),
    operator_code: Type.Optional(Code),
    meter_type: Type.Optional(Code),
    account_ref: Type.Optional(SafeText({ minLength: 1, maxLength: 64 })),
    phone: Type.Optional(SafeText({ minLength: 4, maxLength: 20 })),
    validation_snapshot: Type.Optional(Type.Object({}, { additionalProperties: true, propertyNames: MetadataKey })),
    metadata: Type.Optional(Type.Object({}, { additionalProperties: true, maxProperties: 50, propertyNames: MetadataKey })),
    promotion_code: Type.Optional(Code),
    customer_id: Type.Optional(Ulid),
  },
  { additionalProperties: false },
);
export type ServiceOrderCreate = Static<typeof ServiceOrderCreate>;

export const ServiceQuote = Type.Object({
  quote_id: Ulid,
  source_currency: CurrencyCode,
  destination_currency: CurrencyCode,
  destination_amount_minor: Type.Integer(),
  converted_amount_minor: Type.Integer(),
  fee_minor: Type.Integer(),
  customer_amount_minor: Type.Integer(),
  currency: CurrencyCode,
  provider_cost_minor: Type.Integer(),
  fx_rate: Nullable(Type.String()),
  cross_currency: Type.Boolean(),
  promotion_discount_minor: Type.Integer(),
  promotion_code: Nullable(Type.String()),
  expires_at: Timestamp,
}, { additionalProperties: true });

/** Money collected for the order and returned to the payer because the purchase failed (one per collection). */
const OrderRefund = Type.Object({
  payment_id: Ulid,
  payment_transaction_id: Ulid,
  amount_minor: Type.Integer(),
  currency: CurrencyCode,
  status: Type.Union([Type.Literal('pending'), Type.Literal('completed')]),
  created_at: Timestamp,
  completed_at: Nullable(Timestamp),
});

export const ServiceOrder = Type.Object({
  id: Ulid,
  transaction_id: Ulid,
  payment_transaction_id: Nullable(Ulid),
  country_code: CountryCode,
  service_code: Type.String(),
  status: Type.String(),
  customer_amount_minor: Type.Integer(),
  fee_minor: Type.Integer(),
  provider_cost_minor: Type.Integer(),
  currency: CurrencyCode,
  operator_code: Nullable(Type.String()),
  meter_type: Nullable(Type.String()),
  account_ref: Nullable(Type.String()),
  provider_reference: Nullable(Type.String()),
  idempotency_key: Type.String(),
  quote_id: Nullable(Ulid),
  fulfillment_snapshot: Nullable(Type.Object({}, { additionalProperties: true })),
  pricing_snapshot: Type.Object({}, { additionalProperties: true }),
  refunds: Type.Array(OrderRefund, { description: 'refunds of collected money; the status stays failed while and after they run' }),
  created_at: Timestamp,
  updated_at: Timestamp,
}, { additionalProperties: true });

export const ServiceOrderCreated = Type.Object({
  order: ServiceOrder,
  payment: Type.Object({ id: Ulid, transaction_id: Ulid, method: Type.String(), status: Type.String() }),
  checkout_url: Nullable(Type.String()),
  instructions: Nullable(Type.Object({}, { additionalProperties: true })),
});

export const OrderStatusProjection = Type.Object({
  id: Ulid,
  status: Type.String(),
  transaction_id: Ulid,
  payment_transaction_id: Nullable(Ulid),
  provider_reference: Nullable(Type.String()),
  fulfillment_snapshot: Nullable(Type.Object({}, { additionalProperties: true })),
  updated_at: Timestamp,
});

/** Order reads name the customer they act for; another customer's order is then 404. */
export const OrderReadQuery = Type.Object({ customer_id: Type.Optional(Ulid) }, { additionalProperties: false });
