// ULID identifiers that carry their partition, so any id routes to its shard without a lookup.
// Any thread. The partition sits in characters 10-11 (the first two of the random part), base32.
// Invariant: partitionOfId(mintId(p, t, rand)) === p for every p < 1024.
import { randomFillSync } from 'node:crypto';
import { ulid } from 'ulid';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const ULID_PATTERN = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/;

export function isUlid(value: string): boolean {
  return ULID_PATTERN.test(value);
}

function encodePartition(partition: number): string {
  return CROCKFORD[(partition >> 5) & 31]! + CROCKFORD[partition & 31]!;
}

const POOL_BYTES = 4096;
const pool = Buffer.alloc(POOL_BYTES);
let poolAt = POOL_BYTES;

/**
 * ulid's random source, from a pooled cryptographic buffer: ulid() without one re-detects its generator
 * and asks the OS for one byte per character (31 µs an id, measured in bench/micro.bench.ts).
 */
function pooledRandom(): number {
  if (poolAt >= POOL_BYTES) {
    randomFillSync(pool);
    poolAt = 0;
  }
  return pool[poolAt++]! / 256;
}

/** Mints a ULID at `timeMs` whose random part starts with the partition. */
export function mintId(partition: number, timeMs: number): string {
  const raw = ulid(timeMs, pooledRandom);
  return raw.slice(0, 10) + encodePartition(partition) + raw.slice(12);
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
