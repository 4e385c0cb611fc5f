// A string-keyed map spread over many V8 Maps, for front-end indexes that grow with the data (one
// entry per customer email and phone). Main thread.
// Invariant: behaves as one Map; each part stays far below V8's 2^24-entry cap (a RangeError that
// would stop the server at start-up, while it rebuilds the index, past ~8M customers in one Map).

/** Parts: 256 × 2^24 entries is beyond any memory this server will have. */
const PARTS = 256;

export class SplitMap<V> {
  private readonly parts: Array<Map<string, V>> = Array.from({ length: PARTS }, () => new Map<string, V>());

  /** FNV-1a over the key's UTF-16 units, folded to a part. */
  private partOf(key: string): Map<string, V> {
    let h = 0x811c9dc5;
    for (let i = 0; i < key.length; i += 1) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
    return this.parts[(h >>> 0) % PARTS]!;
  }

  get(key: string): V | undefined {
    return this.partOf(key).get(key);
  }

  set(key: string, value: V): void {
    this.partOf(key).set(key, value);
  }

  delete(key: string): boolean {
    return this.partOf(key).delete(key);
  }

  /** Entries in each part (how evenly the keys spread). */
  partSizes(): number[] {
    return this.parts.map((part) => part.size);
  }

  get size(): number {
    return this.parts.reduce((n, part) => n + part.size, 0);
  }
}
