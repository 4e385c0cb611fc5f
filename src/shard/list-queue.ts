// A partition's queue of list notes (list rows and ledger entries) between applied events and the group
// commit that takes them with their record's LSN (passivate.ts). Runs in the shard worker that owns
// the partition. Invariant: without a shard file nothing is kept (there is no index to feed).
import type { EntryRow, ListRow } from '../store/list-index.ts';

export class ListNotes {
  private rows: ListRow[] = [];
  private entries: EntryRow[] = [];

  /** `fileBacked`: notes go to the shard file's index; without a file (tests, tools) nothing is kept. */
  constructor(readonly on: boolean) {}

  row(row: ListRow): void {
    if (this.on) this.rows.push(row);
  }

  entry(entry: EntryRow): void {
    if (this.on) this.entries.push(entry);
  }

  /** The notes since the last call, for the group commit. */
  drain(): { rows: ListRow[]; entries: EntryRow[] } {
    const drained = { rows: this.rows, entries: this.entries };
    if (this.rows.length > 0) this.rows = [];
    if (this.entries.length > 0) this.entries = [];
    return drained;
  }
}
