// A multimap from 48-bit hashes to numbers in two typed arrays (open addressing, linear probing):
// the front end's idempotency index, one entry per remembered key. Main thread.
// Invariant: no entry is ever lost by growth or removal; a hash may hold several values (collisions).
// Not a Map: V8 caps one at 2^24 entries (RangeError: ~100 keyed POSTs a second over a 48 h retention)
// and boxes each 48-bit key; here a slot is 16 B (33.6 B a key at 1M keys, measured), bounded by memory.
// Split into parts so that no growth moves more than a part's entries at once (see PARTS).

/** Fraction of slots in use before a part doubles. */
const LOAD_MAX = 0.7;
/**
 * Tables the index is split into, by the hash's low bits (scope hashes are SHA-1 bits: even). A table
 * doubles by moving every entry it holds in one go, so one table of a million keys held the event loop
 * ~60 ms at each doubling and twice that at the next (the stall bench's slowest request); a part holds
 * 1/256 of the keys and doubles in a 256th of that time.
 */
const PARTS = 256;
const PART_SLOTS_MIN = 64;
/** 2^28 slots in all (4 GiB of arrays): past it the process is out of memory anyway. */
const PART_SLOTS_MAX = 2 ** 28 / PARTS;

/** One open-addressing table: entries keyed by hash + 1, probed from floor(hash / PARTS). */
class Part {
  /** hash + 1 per slot; 0 marks an empty slot (a hash can be 0). */
  keys: Float64Array;
  values: Float64Array;
  used = 0;

  constructor(slots: number) {
    this.keys = new Float64Array(slots);
    this.values = new Float64Array(slots);
  }

  private home(hash: number): number {
    return Math.floor(hash / PARTS) % this.keys.length;
  }

  /** Adds the pair unless present; returns whether it was added. */
  add(hash: number, value: number): boolean {
    if (this.used + 1 > this.keys.length * LOAD_MAX) this.grow();
    const mask = this.keys.length - 1;
    const key = hash + 1;
    let slot = this.home(hash);
    for (; this.keys[slot] !== 0; slot = (slot + 1) & mask) {
      if (this.keys[slot] === key && this.values[slot] === value) return false;
    }
    this.keys[slot] = key;
    this.values[slot] = value;
    this.used += 1;
    return true;
  }

  get(hash: number, found: number[]): void {
    const mask = this.keys.length - 1;
    const key = hash + 1;
    for (let slot = this.home(hash); this.keys[slot] !== 0; slot = (slot + 1) & mask) {
      if (this.keys[slot] === key) found.push(this.values[slot]!);
    }
  }

  /** Removes the pair if present; later entries of its probe run shift back into place. */
  remove(hash: number, value: number): boolean {
    const mask = this.keys.length - 1;
    const key = hash + 1;
    let at = -1;
    for (let slot = this.home(hash); this.keys[slot] !== 0; slot = (slot + 1) & mask) {
      if (this.keys[slot] === key && this.values[slot] === value) {
        at = slot;
        break;
      }
    }
    if (at < 0) return false;
    let hole = at;
    for (let slot = (at + 1) & mask; this.keys[slot] !== 0; slot = (slot + 1) & mask) {
      // An entry may move into the hole only if its home slot is not between the hole and itself.
      const home = this.home(this.keys[slot]! - 1);
      const between = hole <= slot ? home > hole && home <= slot : home > hole || home <= slot;
      if (between) continue;
      this.keys[hole] = this.keys[slot]!;
      this.values[hole] = this.values[slot]!;
      hole = slot;
    }
    this.keys[hole] = 0;
    this.values[hole] = 0;
    this.used -= 1;
    return true;
  }

  private grow(): void {
    const keys = this.keys;
    const values = this.values;
    if (keys.length >= PART_SLOTS_MAX) throw new Error(`HashIndex: more than ${PART_SLOTS_MAX * PARTS * LOAD_MAX} entries`);
    this.keys = new Float64Array(keys.length * 2);
    this.values = new Float64Array(keys.length * 2);
    const mask = this.keys.length - 1;
    for (let i = 0; i < keys.length; i += 1) {
      const key = keys[i]!;
      if (key === 0) continue;
      let slot = this.home(key - 1);
      while (this.keys[slot] !== 0) slot = (slot + 1) & mask;
      this.keys[slot] = key;
      this.values[slot] = values[i]!;
    }
  }
}

export class HashIndex {
  private readonly parts: Part[];
  private used = 0;

  /** `capacity`: slots in all to start with (rounded up to a power of two a part). */
  constructor(capacity = 0) {
    const slots = 2 ** Math.ceil(Math.log2(Math.max(PART_SLOTS_MIN, capacity / PARTS)));
    this.parts = Array.from({ length: PARTS }, () => new Part(slots));
  }

  get size(): number {
    return this.used;
  }

  /** Adds (hash, value) unless that exact pair is present (one probe run: find it or its empty slot). */
  add(hash: number, value: number): void {
    if (this.parts[hash % PARTS]!.add(hash, value)) this.used += 1;
  }

  /** Every value stored under `hash` (usually none or one). */
  get(hash: number): number[] {
    const found: number[] = [];
    this.parts[hash % PARTS]!.get(hash, found);
    return found;
  }

  /** Removes the pair (hash, value) if present. */
  remove(hash: number, value: number): boolean {
    const removed = this.parts[hash % PARTS]!.remove(hash, value);
    if (removed) this.used -= 1;
    return removed;
  }

  /** The entries each part holds (tests: growth moves one part's entries, so their spread bounds a stall). */
  partSizes(): number[] {
    return this.parts.map((part) => part.used);
  }
}
