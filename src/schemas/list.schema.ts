// Schemas of the lists and the event log (beyond the contract, see docs/lists-and-events.md): the query
// each list accepts, a wallet's ledger entry, and an event as GET /v1/events shows it. Any thread.
// Invariant: an event here is byte for byte the payload a webhook delivers.
import Type from 'typebox';
import { Nullable, Timestamp, Ulid } from './common.schema.ts';
import { EventTypeSchema } from './event-type.schema.ts';

/** Page sizes a list accepts (`limit`). */
export const LIST_LIMIT_MAX = 100;
export const LIST_LIMIT_DEFAULT = 20;

const Limit = Type.String({ pattern: '^[0-9]{1,3}$', description: `Rows per page, 1 to ${LIST_LIMIT_MAX} (default ${LIST_LIMIT_DEFAULT})` });
const Cursor = Type.String({ minLength: 1, maxLength: 64, description: 'The id of a row of the previous page' });
const Created = Type.String({ maxLength: 40, description: 'ISO 8601 date-time (UTC or with an offset)' });

const paging = {
  limit: Type.Optional(Limit),
  starting_after: Type.Optional({ ...Cursor, description: 'Rows after this id in the list order (older): the next page' }),
  ending_before: Type.Optional({ ...Cursor, description: 'Rows before this id in the list order (newer): the previous page' }),
};
const created = {
  'created[gte]': Type.Optional({ ...Created, description: 'Created at or after this instant' }),
  'created[lt]': Type.Optional({ ...Created, description: 'Created before this instant' }),
};

export function statusFilter(statuses: readonly string[]) {
  return Type.Union(statuses.map((s) => Type.Literal(s)), { description: 'Only rows in this status' });
}

/** The query of a resource list: paging, created range, customer, and a status when the resource has one. */
export function ListQuerySchema(statuses: readonly string[] | null) {
  return Type.Object(
    {
      ...paging,
      ...created,
      customer_id: Type.Optional({ ...Ulid, description: "Only this customer's rows" }),
      ...(statuses === null ? {} : { status: Type.Optional(statusFilter(statuses)) }),
    },
    { additionalProperties: false },
  );
}

export const EventListQuery = Type.Object(
  { ...paging, ...created, customer_id: Type.Optional({ ...Ulid, description: 'Only events about this customer' }), type: Type.Optional(EventTypeSchema) },
  { additionalProperties: false },
);

export const EntryListQuery = Type.Object(paging, { additionalProperties: false });

export const LedgerEntry = Type.Object({
  id: Type.String({ description: 'le_ and the entry number (orders the wallet history)' }),
  object: Type.Literal('ledger_entry'),
  wallet_id: Ulid,
  transaction_id: Ulid,
  amount_minor: Type.Integer({ description: 'Signed: credits positive, debits negative' }),
  balance_after_minor: Type.Integer({ description: "The wallet's balance after this entry" }),
  currency: Type.String(),
  created_at: Timestamp,
});

export const Event = Type.Object({
  id: Ulid,
  event_type: EventTypeSchema,
  event_key: Type.String({ description: 'event_type:transaction_id (receivers dedupe on it)' }),
  occurred_at: Timestamp,
  data: Type.Object({ transaction_id: Ulid, customer_id: Nullable(Ulid) }, { additionalProperties: true }),
});
