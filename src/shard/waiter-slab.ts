// Values waiting for an answer, each under a number handed out when it was added (the commands a shard
// answers). Main thread.
// Why not a Map keyed by an ever-growing number: with one insert and one delete a command, a Map's table
// fills with deleted entries and is rehashed every few hundred commands. V8 leaves the old table in the old
// generation with the entries it held, and the scavenger treats their pointers as roots until a full
// collection, so every waiting request's callback (and all it reaches) was promoted (docs/decisions.md).
// Here a slot is emptied in place and reused.
// Invariant: a number names one slot and one use of it (its generation), so a late answer for a number
// whose waiter was already settled (a link that failed) finds nothing, even after the slot is reused.

/** Slots the numbering can name; generations go above it, within Number.MAX_SAFE_INTEGER. */
const SLOTS_MAX = 2 ** 24;

export class WaiterSlab<T> {
  private readonly slots: Array<T | undefined> = [];
  private readonly generations: number[] = [];
  private readonly free: number[] = [];

  /** Stores `value`; returns its number (a non-negative safe integer). */
  add(value: T): number {
    let index = this.free.pop();
    if (index === undefined) {
      index = this.slots.length;
      if (index >= SLOTS_MAX) throw new Error(`WaiterSlab: more than ${SLOTS_MAX} values waiting`);
      this.slots.push(undefined);
      this.generations.push(0);
    }
    this.slots[index] = value;
    return this.generations[index]! * SLOTS_MAX + index;
  }

  get(n: number): T | undefined {
    const index = n % SLOTS_MAX;
    return this.generations[index] === Math.floor(n / SLOTS_MAX) ? this.slots[index] : undefined;
  }

  /** Removes and returns the value under `n` (undefined: none, or it was taken already). */
  take(n: number): T | undefined {
    const value = this.get(n);
    if (value === undefined) return undefined;
    const index = n % SLOTS_MAX;
    this.slots[index] = undefined;
    this.generations[index]! += 1;
    this.free.push(index);
    return value;
  }

  /** [number, value] of every value waiting, in slot order. */
  *entries(): IterableIterator<[number, T]> {
    for (let index = 0; index < this.slots.length; index += 1) {
      const value = this.slots[index];
      if (value !== undefined) yield [this.generations[index]! * SLOTS_MAX + index, value];
    }
  }

  /** Every slot not on the free list holds a value. */
  get size(): number {
    return this.slots.length - this.free.length;
  }
}
