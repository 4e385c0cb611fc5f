// The journal a shard's group commits go to: append a row, learn when it is durable, read from a
// position, the tail, truncation. SqliteJournal is the shard file's own log (the single-node default);
// jetstream-journal.ts adds a replicated copy in cluster mode. Runs in the shard worker owning the file.
// Invariant: `sync` calls back only once every row appended before the call is durable in every copy.
import type { EncodedRow } from './log-segments.ts';
import type { ShardStore, WalRow } from '../store/shard-store.ts';

export type { EncodedRow } from './log-segments.ts';

/** Where a row sits in a journal; only the journal that gave it out interprets it. */
export type JournalPosition = string & { readonly journalPosition: unique symbol };

export interface Journal {
  /** Appends one group-commit row (already numbered and checksummed); returns its position. */
  append(row: EncodedRow): JournalPosition;
  /** Calls back once every row appended so far is durable, or with the error that must stop the shard. */
  sync(done: (error: Error | null) => void): void;
  /** Records after a position (null: from the start), in order. */
  readAfter(position: JournalPosition | null): Iterable<WalRow>;
  /** The position of the last row (null: empty). */
  tail(): JournalPosition | null;
  /** Drops what no kept snapshot needs below a position; returns how many records went. */
  truncateBefore(position: JournalPosition): number;
}

/** Today's behaviour: the log rows of the shard's SQLite file, fdatasync'd off the shard thread. */
export class SqliteJournal implements Journal {
  constructor(readonly store: ShardStore) {}

  static position(lsn: number): JournalPosition {
    return String(lsn) as JournalPosition;
  }

  static lsnOf(position: JournalPosition): number {
    const lsn = Number(position);
    if (!Number.isInteger(lsn) || lsn < 0) throw new Error(`SqliteJournal: ${position} is not one of its positions`);
    return lsn;
  }

  append(row: EncodedRow): JournalPosition {
    this.store.appendShipped([row]);
    return SqliteJournal.position(row.lsnFirst + row.n - 1);
  }

  sync(done: (error: Error | null) => void): void {
    this.store.syncJournal(done);
  }

  readAfter(position: JournalPosition | null): Iterable<WalRow> {
    return this.store.walAfter(position === null ? 0 : SqliteJournal.lsnOf(position));
  }

  tail(): JournalPosition | null {
    const last = this.store.lsnNext - 1;
    return last <= 0 ? null : SqliteJournal.position(last);
  }

  truncateBefore(position: JournalPosition): number {
    const retain = Math.max(0, this.store.lsnNext - 1 - SqliteJournal.lsnOf(position));
    return this.store.truncateWal(retain).dropped;
  }
}
