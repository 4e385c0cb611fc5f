// A multimap from 48-bit hashes to numbers in two typed arrays (open addressing, linear probing):
// the front end's idempotency index, one entry per remembered key. Main thread.
// Invariant: no entry is ever lost by growth or removal; a hash may hold several values (collisions).
// Not a Map: V8 caps one at 2^24 entries (RangeError: ~100 keyed POSTs a second over a 48 h retention)
// and boxes each 48-bit key; here a slot is 16 B (33.6 B a key at 1M keys, measured), bounded by memory.

/** Fraction of slots in use before the table doubles. */
const LOAD_MAX = 0.7;
const CAPACITY_MIN = 1024;
/** 2^28 slots (4 GiB of arrays): past it the process is out of memory anyway. */
const CAPACITY_MAX = 2 ** 28;

export class HashIndex {
  /** hash + 1 per slot; 0 marks an empty slot (a hash can be 0). */
  private keys: Float64Array;
  private values: Float64Array;
  private used = 0;

  constructor(capacity = CAPACITY_MIN) {
    const slots = 2 ** Math.ceil(Math.log2(Math.max(CAPACITY_MIN, capacity)));
    this.keys = new Float64Array(slots);
    this.values = new Float64Array(slots);
  }

  get size(): number {
    return this.used;
  }

  /** Adds (hash, value) unless that exact pair is present (one probe run: find it or its empty slot). */
  add(hash: number, value: number): void {
    if (this.used + 1 > this.keys.length * LOAD_MAX) this.grow();
    const mask = this.keys.length - 1;
    const key = hash + 1;
    let slot = hash % this.keys.length;
    for (; this.keys[slot] !== 0; slot = (slot + 1) & mask) {
      if (this.keys[slot] === key && this.values[slot] === value) return;
    }
    this.keys[slot] = key;
    this.values[slot] = value;
    this.used += 1;
  }

  /** Every value stored under `hash` (usually none or one). */
  get(hash: number): number[] {
    const found: number[] = [];
    const mask = this.keys.length - 1;
    const key = hash + 1;
    for (let slot = hash % this.keys.length; this.keys[slot] !== 0; slot = (slot + 1) & mask) {
      if (this.keys[slot] === key) found.push(this.values[slot]!);
    }
    return found;
  }

  /** Removes the pair (hash, value) if present; later entries of its probe run shift back into place. */
  remove(hash: number, value: number): boolean {
    const at = this.indexOf(hash, value);
    if (at < 0) return false;
    const mask = this.keys.length - 1;
    let hole = at;
    for (let slot = (at + 1) & mask; this.keys[slot] !== 0; slot = (slot + 1) & mask) {
      // An entry may move into the hole only if its home slot is not between the hole and itself.
      const home = (this.keys[slot]! - 1) % this.keys.length;
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

  private indexOf(hash: number, value: number): number {
    const mask = this.keys.length - 1;
    const key = hash + 1;
    for (let slot = hash % this.keys.length; this.keys[slot] !== 0; slot = (slot + 1) & mask) {
      if (this.keys[slot] === key && this.values[slot] === value) return slot;
    }
    return -1;
  }

  private place(key: number, value: number): void {
    const mask = this.keys.length - 1;
    let slot = (key - 1) % this.keys.length;
    while (this.keys[slot] !== 0) slot = (slot + 1) & mask;
    this.keys[slot] = key;
    this.values[slot] = value;
  }

  private grow(): void {
    const keys = this.keys;
    const values = this.values;
    if (keys.length >= CAPACITY_MAX) throw new Error(`HashIndex: more than ${CAPACITY_MAX * LOAD_MAX} entries`);
    this.keys = new Float64Array(keys.length * 2);
    this.values = new Float64Array(keys.length * 2);
    for (let i = 0; i < keys.length; i += 1) if (keys[i] !== 0) this.place(keys[i]!, values[i]!);
  }
}
