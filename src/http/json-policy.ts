// The JSON shape policy every request body meets before it is parsed into objects and validated:
// nesting depth and member count are bounded, and a top-level number is written as an integer.
// Main thread (front end), called once per body.
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
const MINUS = 0x2d;
const DOT = 0x2e;
const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;
const PLUS = 0x2b;
const LOWER_E = 0x65;
const UPPER_E = 0x45;
/** How much of a key an error message repeats. */
const KEY_SHOWN_BYTES_MAX = 64;

function isNumberByte(byte: number): boolean {
  return (byte >= DIGIT_0 && byte <= DIGIT_9) || byte === MINUS || byte === DOT || byte === PLUS || byte === LOWER_E || byte === UPPER_E;
}

/**
 * Scans the raw bytes (no recursion, no allocation) and refuses a body nested deeper than
 * `depthMax` or holding more than `membersMax` keys and items. Malformed JSON is left to JSON.parse;
 * the scan only has to be exact for well-formed input, and over-counts nothing there.
 *
 * Every numeric field of the API is an integer (amounts in minor units, seconds, levels), and JSON.parse
 * turns `20000.0` or `2e4` into the integer 20000, so the schema alone would take a float literal for an
 * amount. A top-level number written with a fraction or an exponent is refused here; nested values
 * (metadata, a validation snapshot) are the caller's own and keep any number.
 */
export function jsonShapeRejection(raw: Uint8Array, policy: JsonPolicy): Rejection | null {
  let depth = 0;
  let members = 0;
  let inString = false;
  let escaped = false;
  let justOpened = false;
  /** The bytes of the last string at the top level: a top-level number's key. */
  let keyStart = 0;
  let keyEnd = 0;
  for (let i = 0; i < raw.length; i += 1) {
    const byte = raw[i]!;
    if (inString) {
      if (escaped) escaped = false;
      else if (byte === BACKSLASH) escaped = true;
      else if (byte === QUOTE) {
        inString = false;
        if (depth === 1) keyEnd = i;
      }
      continue;
    }
    if (byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09) continue;
    if (justOpened) {
      justOpened = false;
      // The first member of a non-empty container (later ones follow a comma).
      if (byte !== CLOSE_OBJECT && byte !== CLOSE_ARRAY) members += 1;
    }
    if (byte === QUOTE) {
      inString = true;
      if (depth === 1) keyStart = i + 1;
    } else if (depth === 1 && (byte === MINUS || (byte >= DIGIT_0 && byte <= DIGIT_9))) {
      // A number starts with a minus or a digit (the `e` of `true` or `false` does not start one).
      let j = i;
      let integral = true;
      for (; j < raw.length && isNumberByte(raw[j]!); j += 1) if (raw[j]! === DOT || raw[j]! === LOWER_E || raw[j]! === UPPER_E) integral = false;
      if (!integral) {
        const key = new TextDecoder().decode(raw.subarray(keyStart, Math.min(Math.max(keyStart, keyEnd), keyStart + KEY_SHOWN_BYTES_MAX)));
        return reject('VALIDATION', `${key} must be an integer written without a fraction or an exponent (20000, not 20000.0 or 2e4).`);
      }
      i = j - 1;
    } else if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) {
      depth += 1;
      if (depth > policy.depthMax) return reject('VALIDATION', `The body nests objects and arrays deeper than ${policy.depthMax} levels.`);
      justOpened = true;
    } else if (byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) depth -= 1;
    else if (byte === COMMA) members += 1;
    if (members > policy.membersMax) return reject('VALIDATION', `The body holds more than ${policy.membersMax} keys and array items.`);
  }
  return null;
}
