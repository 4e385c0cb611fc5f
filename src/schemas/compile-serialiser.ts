// Reply views compiled from their response schema, Fastify's way: one table says where each property of
// the schema comes from in the entity, and from it come both the view object (for callers that need
// one) and a serialiser that writes the JSON straight from the entity's fields, with no view object
// built and then stringified. Any thread; imports nothing from the shard.
// Invariant: serialise(e) === JSON.stringify(view(e)) for every entity (test/schemas checks it).
import type { TSchema } from 'typebox';
import assert from 'node:assert/strict';
import { isoTime } from '../iso-time.ts';

/** Where one property's value comes from. A literal property of the schema needs no source. */
export type Source<E> =
  /** A value the schema's type encodes (string, integer, boolean, null, or a union of them). */
  | ((entity: E) => unknown)
  /** A `date-time` property from epoch milliseconds (null: JSON null, for a nullable one). */
  | { readonly ms: (entity: E) => number | null }
  /** An object property with sources of its own (null: JSON null, for a nullable one). */
  | { readonly of: (entity: E) => unknown; readonly fields: Sources<never> }
  /** An array of objects, each with these sources. */
  | { readonly each: (entity: E) => readonly unknown[]; readonly fields: Sources<never> }
  /** A shape the schema leaves open (additional properties): JSON.stringify of this value. */
  | { readonly json: (entity: E) => unknown };

export type Sources<E> = Readonly<Record<string, Source<E>>>;

export interface CompiledView<E> {
  /** The view as an object (what JSON.stringify of it prints is exactly `json`). */
  view: (entity: E) => Record<string, unknown>;
  /** The view's JSON, written from the entity's fields. */
  json: (entity: E) => string;
}

interface ObjectSchema {
  properties: Record<string, TSchema & { const?: unknown; format?: string; anyOf?: Array<{ type?: string }>; type?: string }>;
  required?: string[];
}

/** True for a nullable property (a union with null): its object branch is what a nested view compiles. */
function isNullable(schema: { anyOf?: Array<{ type?: string }> }): boolean {
  return schema.anyOf !== undefined && schema.anyOf.some((s) => s.type === 'null');
}

/** `[a,b,…]` of each item's JSON. */
function jsonArray(items: readonly unknown[], json: (item: never) => string): string {
  let out = '[';
  for (let i = 0; i < items.length; i += 1) out += (i === 0 ? '' : ',') + json(items[i] as never);
  return out + ']';
}

/** Compiles the view and serialiser of `schema` (an object schema) from `sources`, one per non-literal property. */
export function compileView<E>(name: string, schema: TSchema, sources: Sources<E>): CompiledView<E> {
  const object = schema as unknown as ObjectSchema;
  assert(object.properties !== undefined, `compileView ${name}: not an object schema`);
  const keys = Object.keys(object.properties);
  const required = new Set(object.required ?? []);
  for (const key of Object.keys(sources)) assert(key in object.properties, `compileView ${name}: ${key} is not a property of the schema`);
  assert(required.has(keys[0]!), `compileView ${name}: the first property must be required (optional ones are written after a comma)`);

  // What the generated code calls: the sources' functions and the nested views, by index.
  const calls: Array<(entity: never) => unknown> = [];
  const nested: Array<CompiledView<never>> = [];
  const call = (fn: (entity: never) => unknown): string => `c[${calls.push(fn) - 1}](e)`;
  const parts: string[] = [];
  const viewers: Array<(entity: E, into: Record<string, unknown>) => void> = [];
  for (const [i, key] of keys.entries()) {
    const property = object.properties[key]!;
    const source = sources[key];
    // The JSON before the value (`{"id":` or `,"status":`), and the same as a JS string literal.
    const head = `${i === 0 ? '{' : ','}${JSON.stringify(key)}:`;
    const prefix = JSON.stringify(head);
    if (property.const !== undefined && source === undefined) {
      parts.push(JSON.stringify(head + JSON.stringify(property.const)));
      viewers.push((_e, into) => {
        into[key] = property.const;
      });
      continue;
    }
    assert(source !== undefined, `compileView ${name}: no source for ${key}`);
    const optional = !required.has(key);
    // `v` is the source's value; `encoded` writes a non-null one.
    let read: string;
    let encoded: string;
    let viewOf: (entity: E) => unknown;
    if (typeof source === 'function') {
      const encode = property.type === 'integer' || property.type === 'number' ? "'' + v" : property.type === 'boolean' ? "(v ? 'true' : 'false')" : 'S(v)';
      read = call(source as (entity: never) => unknown);
      encoded = encode;
      viewOf = source;
    } else if ('ms' in source) {
      read = call(source.ms as (entity: never) => unknown);
      encoded = `'"' + T(v) + '"'`;
      viewOf = (e) => {
        const ms = source.ms(e);
        return ms === null ? null : isoTime(ms);
      };
    } else if ('of' in source) {
      const inner = compileView(`${name}.${key}`, (isNullable(property) ? property.anyOf!.find((s) => s.type !== 'null') : property) as TSchema, source.fields);
      nested.push(inner);
      read = call(source.of as (entity: never) => unknown);
      encoded = `n[${nested.length - 1}].json(v)`;
      viewOf = (e) => {
        const v = source.of(e);
        return v === null || v === undefined ? v : inner.view(v as never);
      };
    } else if ('each' in source) {
      const items = property as unknown as { items?: TSchema };
      assert(items.items !== undefined, `compileView ${name}: ${key} takes items and is not an array`);
      const inner = compileView(`${name}.${key}`, items.items, source.fields);
      nested.push(inner);
      read = call(source.each as (entity: never) => unknown);
      encoded = `A(v, n[${nested.length - 1}].json)`;
      viewOf = (e) => source.each(e).map((item) => inner.view(item as never));
    } else {
      read = call(source.json as (entity: never) => unknown);
      encoded = 'S(v)';
      viewOf = source.json;
    }
    parts.push(optional
      ? `((v = ${read}) === undefined ? '' : ${prefix} + (v === null ? 'null' : ${encoded}))`
      : `${prefix} + ((v = ${read}) === null ? 'null' : ${encoded})`);
    viewers.push(optional ? (e, into) => {
      const v = viewOf(e);
      if (v !== undefined) into[key] = v;
    } : (e, into) => {
      into[key] = viewOf(e);
    });
  }
  // Generated once per view when the module loads, from the schema's own keys (each written with
  // JSON.stringify) and calls by index: no text from a request ever reaches it.
  const json = new Function('c', 'n', 'S', 'T', 'A', `return function ${name.replace(/\W/g, '_')}Json(e) { let v; return ${parts.join(' + ')} + '}'; };`)(calls, nested, JSON.stringify, isoTime, jsonArray) as (entity: E) => string;
  const view = (entity: E): Record<string, unknown> => {
    const into: Record<string, unknown> = {};
    for (const add of viewers) add(entity, into);
    return into;
  };
  return { view, json };
}
