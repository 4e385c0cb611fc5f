// A map for keys that come and go within milliseconds (a request in flight per idempotency key), kept in
// young maps. Main thread.
// Why: a long-lived Map with one insert and one delete a request fills with deleted entries and rehashes
// every few hundred requests; V8 leaves the old table in the old generation with the entries it held, and
// the scavenger keeps those keys and values alive until a full collection (docs/decisions.md, eighth
// session). Here new keys go into a map that is replaced every SWAP_EVERY inserts, so no map lives long
// enough to be promoted while it churns.
// Invariant: behaves as one Map (has/get/set/delete/size); a key is in at most one of the two maps.

/** Inserts between swaps: ~10 ms of keyed POSTs at full load, well under the time between scavenges. */
const SWAP_EVERY = 128;

export class ChurnMap<K, V> {
  /** Where new keys go. */
  private current = new Map<K, V>();
  /** The map before it: its keys leave as their requests end; survivors move on at the next swap. */
  private previous = new Map<K, V>();
  private insertsSinceSwap = 0;

  has(key: K): boolean {
    return this.current.has(key) || this.previous.has(key);
  }

  get(key: K): V | undefined {
    return this.current.has(key) ? this.current.get(key) : this.previous.get(key);
  }

  set(key: K, value: V): this {
    if (this.previous.has(key)) {
      this.previous.set(key, value);
      return this;
    }
    if (!this.current.has(key)) {
      this.insertsSinceSwap += 1;
      if (this.insertsSinceSwap > SWAP_EVERY) this.swap();
    }
    this.current.set(key, value);
    return this;
  }

  delete(key: K): boolean {
    return this.current.delete(key) || this.previous.delete(key);
  }

  get size(): number {
    return this.current.size + this.previous.size;
  }

  /** The current map becomes the previous one; the keys still in the previous one (slow requests) join it. */
  private swap(): void {
    const survivors = this.previous;
    this.previous = this.current;
    for (const [key, value] of survivors) this.previous.set(key, value);
    this.current = new Map();
    this.insertsSinceSwap = 1;
  }
}
