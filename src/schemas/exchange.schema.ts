// Request and response schemas of exchange quotes and exchanges.
// Any thread. Rates are decimal strings; amounts are integer minor units in each currency's exponent.
// Invariant: both amounts of an exchange are recorded.
import Type, { type Static } from 'typebox';
import { AmountMinor, CurrencyCode, Nullable, Timestamp, Ulid } from './common.schema.ts';

export const ExchangeQuoteCreate = Type.Object(
  {
    from_currency: CurrencyCode,
    to_currency: CurrencyCode,
    from_amount_minor: AmountMinor,
    customer_id: Type.Optional(Ulid),
  },
  { additionalProperties: false },
);
export type ExchangeQuoteCreate = Static<typeof ExchangeQuoteCreate>;

/** customer_id is optional (the quote knows its customer); when sent it must be the quote's, else 404. */
export const ExchangeCreate = Type.Object({ quote_id: Ulid, customer_id: Type.Optional(Ulid) }, { additionalProperties: false });
export type ExchangeCreate = Static<typeof ExchangeCreate>;

export const ExchangeQuote = Type.Object({
  id: Ulid,
  object: Type.Literal('exchange_quote'),
  customer_id: Ulid,
  from_currency: CurrencyCode,
  to_currency: CurrencyCode,
  from_amount_minor: Type.Integer(),
  to_amount_minor: Type.Integer(),
  rate: Type.String({ description: 'to units per from unit, after spread' }),
  mid_rate: Type.String(),
  spread_bps: Type.Integer(),
  expires_at: Timestamp,
  used_by: Nullable(Ulid),
  created_at: Timestamp,
});

export const Exchange = Type.Object({
  id: Ulid,
  object: Type.Literal('exchange'),
  transaction_id: Ulid,
  status: Type.String(),
  customer_id: Ulid,
  quote_id: Ulid,
  from_currency: CurrencyCode,
  from_amount_minor: Type.Integer(),
  from_wallet_id: Ulid,
  to_currency: CurrencyCode,
  to_amount_minor: Type.Integer(),
  to_wallet_id: Ulid,
  rate: Type.String(),
  created_at: Timestamp,
});
