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
/**
 * Text a person or another system will read (names, references, narration, emails, metadata keys):
 * no C0/C1 control characters (NUL included), no lone surrogates, no bidi overrides, isolates or
 * marks, no zero-width characters, no line or paragraph separators. They spoof what a reader sees
 * (a customer name becomes a beneficiary's account_name) or break logs and exports downstream.
 */
export const SAFE_TEXT_PATTERN = '^[^\\p{Cc}\\p{Cs}\\u061C\\u200B-\\u200F\\u2028-\\u202E\\u2060\\u2066-\\u2069\\uFEFF]*$';
export const SAFE_TEXT_RULE = 'must not contain control characters, lone surrogates, bidi controls or zero-width characters';

export function SafeText(options: { minLength?: number; maxLength: number; description?: string }) {
  return Type.String({ ...options, pattern: SAFE_TEXT_PATTERN });
}

export const Reference = SafeText({ minLength: 1, maxLength: 128 });

export function Nullable<T extends TSchema>(schema: T) {
  return Type.Union([schema, Type.Null()]);
}

export const ErrorEnvelope = Type.Object({
  error: Type.Object({ code: Type.String(), message: Type.String(), request_id: Type.String() }),
});

export function DataEnvelope<T extends TSchema>(schema: T) {
  return Type.Object({ data: schema });
}
