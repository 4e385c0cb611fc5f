// A partition's view of its waiting sandbox collections' expiries: changes are buffered for the group
// commit (the `due` table of the shard file, which the shard's sweep reads for every partition at once);
// without a file (tests, tools) they live in a heap map that the partition's sweep reads itself.
// Runs in the shard worker that owns the partition.
import type { DueEntry, DueOp } from '../store/due-log.ts';

export class DueIndex {
  private ops: DueOp[] = [];
  private readonly heap: Map<string, DueEntry> | null;

  /** `fileBacked`: changes go to the shard file with the group commit; otherwise they stay in a heap map. */
  constructor(fileBacked: boolean) {
    this.heap = fileBacked ? null : new Map();
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

  /**
   * Heap entries due by their owner's cutoff, oldest first, at most `limit`. A file-backed index has
   * none to give: the shard's sweep reads the file and hands each partition its candidates.
   */
  dueBy(cutoffOf: (owner: string) => number, limit: number): DueEntry[] {
    if (this.heap === null) return [];
    const due = [...this.heap.values()].filter((e) => e.expiresAtMs < cutoffOf(e.owner)).sort((a, b) => a.expiresAtMs - b.expiresAtMs);
    return due.slice(0, limit);
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
