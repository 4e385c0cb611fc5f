// ULID identifiers that carry their partition, so any id routes to its shard without a lookup.
// Any thread. The partition sits in characters 10-11 (the first two of the random part), base32.
// Invariant: partitionOfId(mintId(p, t, rand)) === p for every p < 1024.
import { randomFillSync } from 'node:crypto';
import { encodeTime } from 'ulid';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const CROCKFORD_CODES = Uint8Array.from(CROCKFORD, (c) => c.charCodeAt(0));
const ULID_PATTERN = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/;

export function isUlid(value: string): boolean {
  return ULID_PATTERN.test(value);
}

const POOL_BYTES = 4096;
/** Random bytes for ids, refilled from the OS a pool at a time (ulid() asked for one byte per character). */
const pool = Buffer.alloc(POOL_BYTES);
let poolAt = POOL_BYTES;

const ID_CHARS = 26;
/** The id being minted, as Latin-1 bytes: one string is made from it (ulid() concatenated 26 characters, then sliced). */
const idBytes = Buffer.alloc(ID_CHARS);
/** The time part of the last millisecond minted (many ids share one). */
let timeAtMs = -1;

/** Mints a ULID at `timeMs` whose random part starts with the partition. */
export function mintId(partition: number, timeMs: number): string {
  if (timeMs !== timeAtMs) {
    idBytes.write(encodeTime(timeMs, 10), 0, 'latin1');
    timeAtMs = timeMs;
  }
  idBytes[10] = CROCKFORD_CODES[(partition >> 5) & 31]!;
  idBytes[11] = CROCKFORD_CODES[partition & 31]!;
  if (poolAt + ID_CHARS - 12 > POOL_BYTES) {
    randomFillSync(pool);
    poolAt = 0;
  }
  // A random byte's top five bits pick the character: uniform, as ulid's floor(byte / 256 * 32).
  for (let i = 12; i < ID_CHARS; i += 1) idBytes[i] = CROCKFORD_CODES[pool[poolAt++]! >> 3]!;
  return idBytes.toString('latin1', 0, ID_CHARS);
}

/** The partition an id was minted in; -1 when the id is not a ULID. */
export function partitionOfId(id: string): number {
  if (!isUlid(id)) return -1;
  const hi = CROCKFORD.indexOf(id[10]!);
  const lo = CROCKFORD.indexOf(id[11]!);
  return (hi << 5) | lo;
}

/**
 * The last six characters of an id read as 30 bits (the random tail of a ULID, so uniform): a stable
 * number derived from an id without hashing it. A character outside the alphabet counts by its low bits.
 */
export function tailBitsOfId(id: string): number {
  let bits = 0;
  for (let i = Math.max(0, id.length - 6); i < id.length; i += 1) {
    const digit = CROCKFORD.indexOf(id[i]!);
    bits = bits * 32 + (digit >= 0 ? digit : id.charCodeAt(i) & 31);
  }
  return bits;
}
