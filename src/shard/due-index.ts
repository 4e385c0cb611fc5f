// A partition's view of its waiting sandbox collections' expiries: changes are buffered for the group
// commit (the `due` table of the shard file); without a file (tests, tools) they live in a heap map.
// Runs in the shard worker that owns the partition. Reads never see the current batch's changes,
// which only ever add collections that just started waiting (not yet due).
import type { DueEntry, DueOp, DueReader } from '../store/due-log.ts';

export class DueIndex {
  private ops: DueOp[] = [];
  private readonly heap: Map<string, DueEntry> | null;

  constructor(
    private readonly partition: number,
    private readonly store: DueReader | null,
  ) {
    this.heap = store === null ? new Map() : null;
  }

  /** A collection started waiting (or waits again, with a new expiry). */
  set(entry: DueEntry): void {
    if (this.heap !== null) this.heap.set(entry.id, entry);
    else this.ops.push({ op: 'set', entry });
  }

  /** A row whose collection waits no more, or waits with a newer expiry (the sweep found it so). */
  drop(entry: DueEntry): void {
    if (this.heap !== null) {
      if (this.heap.get(entry.id)?.expiresAtMs === entry.expiresAtMs) this.heap.delete(entry.id);
    } else {
      this.ops.push({ op: 'drop', entry });
    }
  }

  /** Entries due by their owner's cutoff, oldest first per owner, at most `limit` in all. */
  dueBy(cutoffOf: (owner: string) => number, limit: number): DueEntry[] {
    if (this.heap !== null) {
      const due = [...this.heap.values()].filter((e) => e.expiresAtMs < cutoffOf(e.owner)).sort((a, b) => a.expiresAtMs - b.expiresAtMs);
      return due.slice(0, limit);
    }
    const found: DueEntry[] = [];
    for (const owner of this.store!.ownersOf(this.partition)) {
      if (found.length >= limit) break;
      found.push(...this.store!.dueOf(this.partition, owner, cutoffOf(owner), limit - found.length));
    }
    return found;
  }

  /** True when no collection waits (a sweep of this partition would find nothing). */
  isEmpty(): boolean {
    return this.heap !== null ? this.heap.size === 0 : this.ops.length === 0 && this.store!.ownersOf(this.partition).length === 0;
  }

  /** Changes wait for the group commit. */
  get pending(): boolean {
    return this.ops.length > 0;
  }

  /** The changes since the last call, for the group commit. */
  drain(): DueOp[] {
    if (this.ops.length === 0) return [];
    const ops = this.ops;
    this.ops = [];
    return ops;
  }
}
