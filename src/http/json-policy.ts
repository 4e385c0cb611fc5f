// The JSON shape policy every request body meets before it is parsed into objects and validated:
// nesting depth and member count are bounded. Main thread (front end), called once per body.
// Invariant: no body that passes can make any later step (schema check, postMessage's structured
// clone, the WAL encoder) recurse deeper than `depthMax` or walk more than `membersMax` values.
import { reject, type Rejection } from '../errors.ts';

export interface JsonPolicy {
  /** Objects and arrays nested inside each other, the outermost counting 1. */
  depthMax: number;
  /** Object keys plus array items over the whole body. */
  membersMax: number;
}

const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Scans the raw bytes (no recursion, no allocation) and refuses a body nested deeper than
 * `depthMax` or holding more than `membersMax` keys and items. Malformed JSON is left to JSON.parse;
 * the scan only has to be exact for well-formed input, and over-counts nothing there.
 */
export function jsonShapeRejection(raw: Uint8Array, policy: JsonPolicy): Rejection | null {
  let depth = 0;
  let members = 0;
  let inString = false;
  let escaped = false;
  let justOpened = false;
  for (let i = 0; i < raw.length; i += 1) {
    const byte = raw[i]!;
    if (inString) {
      if (escaped) escaped = false;
      else if (byte === BACKSLASH) escaped = true;
      else if (byte === QUOTE) inString = false;
      continue;
    }
    if (byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09) continue;
    if (justOpened) {
      justOpened = false;
      // The first member of a non-empty container (later ones follow a comma).
      if (byte !== CLOSE_OBJECT && byte !== CLOSE_ARRAY) members += 1;
    }
    if (byte === QUOTE) inString = true;
    else if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) {
      depth += 1;
      if (depth > policy.depthMax) return reject('VALIDATION', `The body nests objects and arrays deeper than ${policy.depthMax} levels.`);
      justOpened = true;
    } else if (byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) depth -= 1;
    else if (byte === COMMA) members += 1;
    if (members > policy.membersMax) return reject('VALIDATION', `The body holds more than ${policy.membersMax} keys and array items.`);
  }
  return null;
}
