// Building blocks shared by every resource schema: ids, money, codes, the response envelopes.
// Any thread. These TypeBox schemas are the single source for validation, TS types and OpenAPI.
// Invariant: amount_minor is a positive safe integer: never a float, never a string.
import Type, { type TSchema } from 'typebox';

export const ULID_PATTERN = '^[0-7][0-9A-HJKMNP-TV-Z]{25}$';
export const Ulid = Type.String({ pattern: ULID_PATTERN, description: 'ULID' });
export const AmountMinor = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'Positive integer in minor units' });
export const CurrencyCode = Type.String({ pattern: '^[A-Z]{3}$', description: 'ISO 4217 code' });
export const CountryCode = Type.String({ pattern: '^[A-Z]{2}$', description: 'ISO 3166-1 alpha-2 code' });
export const Timestamp = Type.String({ format: 'date-time' });
export const Reference = Type.String({ minLength: 1, maxLength: 128 });

export function Nullable<T extends TSchema>(schema: T) {
  return Type.Union([schema, Type.Null()]);
}

export const ErrorEnvelope = Type.Object({
  error: Type.Object({ code: Type.String(), message: Type.String(), request_id: Type.String() }),
});

export function DataEnvelope<T extends TSchema>(schema: T) {
  return Type.Object({ data: schema });
}
