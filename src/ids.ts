// ULID identifiers that carry their partition, so any id routes to its shard without a lookup.
// Any thread. The partition sits in characters 10-11 (the first two of the random part), base32.
// Invariant: partitionOfId(mintId(p, t, rand)) === p for every p < 1024.
import { ulid } from 'ulid';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const ULID_PATTERN = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/;

export function isUlid(value: string): boolean {
  return ULID_PATTERN.test(value);
}

function encodePartition(partition: number): string {
  return CROCKFORD[(partition >> 5) & 31]! + CROCKFORD[partition & 31]!;
}

/** Mints a ULID at `timeMs` whose random part starts with the partition. */
export function mintId(partition: number, timeMs: number): string {
  const raw = ulid(timeMs);
  return raw.slice(0, 10) + encodePartition(partition) + raw.slice(12);
}

/** The partition an id was minted in; -1 when the id is not a ULID. */
export function partitionOfId(id: string): number {
  if (!isUlid(id)) return -1;
  const hi = CROCKFORD.indexOf(id[10]!);
  const lo = CROCKFORD.indexOf(id[11]!);
  return (hi << 5) | lo;
}
