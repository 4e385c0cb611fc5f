// Checks a data/reference file against its TypeBox schema at module load, naming what is wrong.
// Any thread. Bad reference data stops the process at start, never at the first request that reads it.
import type { Static, TSchema } from 'typebox';
import Value from 'typebox/value';

export function parseReference<const S extends TSchema>(file: string, schema: S, value: unknown): Static<S> {
  if (Value.Check(schema, value)) return value;
  const detail = Value.Errors(schema, value)
    .slice(0, 5)
    .map((error) => `${error.instancePath || '/'} ${error.message}`)
    .join('; ');
  throw new Error(`data/reference/${file} is invalid: ${detail}`);
}
