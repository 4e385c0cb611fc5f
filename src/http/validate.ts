// Turns TypeBox validation errors into one clear VALIDATION message naming the field.
// Main thread. TypeBox schemas are the single source for validation, TS types and OpenAPI.
// Invariant: a request that fails its schema never reaches a shard.
import type { Validator } from 'typebox/compile';
import { reject, type Rejection } from '../errors.ts';
import { SAFE_TEXT_PATTERN, SAFE_TEXT_RULE } from '../schemas/common.schema.ts';

interface SchemaError {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  message: string;
}

function fieldOf(instancePath: string): string {
  return instancePath.replace(/^\//, '').replace(/\//g, '.');
}

function describe(error: SchemaError, where: string): string {
  const field = fieldOf(error.instancePath);
  switch (error.keyword) {
    case 'required': {
      const missing = (error.params.requiredProperties as string[] | undefined) ?? [];
      const prefix = field === '' ? '' : `${field}.`;
      return `${missing.map((m) => prefix + m).join(', ')} ${missing.length > 1 ? 'are' : 'is'} required`;
    }
    case 'additionalProperties': {
      const extra = (error.params.additionalProperties as string[] | undefined) ?? [];
      return `unknown field${extra.length > 1 ? 's' : ''} ${extra.join(', ')} in ${where}`;
    }
    case 'type': {
      const type = String(error.params.type);
      return `${field || where} must be ${/^[aeiou]/.test(type) ? 'an' : 'a'} ${type}`;
    }
    case 'pattern':
      if (error.params.pattern === SAFE_TEXT_PATTERN) return `${field || where} ${SAFE_TEXT_RULE}`;
      return `${field || where} ${error.message}`;
    case 'propertyNames':
      return `${field || where} has a key that is not allowed (keys ${SAFE_TEXT_RULE}, 1 to 64 characters)`;
    case 'minimum':
      return `${field} must be at least ${String(error.params.limit ?? error.params.minimum ?? '')}`.trim();
    default:
      return `${field || where} ${error.message}`;
  }
}

/** Null when `value` passes; otherwise a VALIDATION rejection describing the most useful error. */
export function validate(validator: Validator, value: unknown, where: 'body' | 'query'): Rejection | null {
  if (validator.Check(value)) return null;
  const errors = [...validator.Errors(value)] as SchemaError[];
  // A boolean `false` sub-schema error duplicates the additionalProperties one; prefer the specific error.
  const useful = errors.filter((e) => e.keyword !== 'boolean');
  // A bad key is reported on its object (never echoing the key, which may hold control characters).
  const first = useful.find((e) => e.keyword === 'required') ?? useful.find((e) => e.keyword === 'propertyNames') ?? useful[0] ?? errors[0];
  return reject('VALIDATION', first === undefined ? `invalid ${where}` : describe(first, where));
}
