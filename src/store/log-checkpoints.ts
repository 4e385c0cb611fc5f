// Checkpoints of a live shard file's journal on a worker thread (checkpointer.ts): sqlite's automatic
// checkpoint ran inside the commit that crossed 4 MiB of journal and held the shard's loop 8–10 ms about
// every 1.5 s at 64 connections (bench/RESULTS.md). Runs in the thread that writes the shard file.
// Invariant: the log's own appends never wait for a checkpoint; the journal restarts from its beginning
// only after a checkpoint copied all of it (sqlite's rule), so it stays bounded.
import type Database from 'better-sqlite3';
import { Checkpointer } from './checkpointer.ts';

/**
 * Commits between two checkpoints. A commit of a group of payments writes ~3–5 journal frames of 1 KiB
 * (the log row's leaf and overflow pages, page 1), so this is ~4 MiB of journal at 64 connections, as
 * sqlite's default threshold was; larger batches write more frames a commit and the journal grows longer.
 */
export const LOG_CHECKPOINT_COMMITS = 1_000;
/**
 * Checkpoints the worker tries after the first, each copying only the frames appended while the one
 * before ran, until one copies the whole journal before the next commit; then the writer copies that
 * last tail itself (short: frames of one checkpoint's duration), so the journal always restarts.
 */
const TAIL_TRIES_MAX = 8;

export class LogCheckpoints {
  private readonly checkpointer: Checkpointer;
  private commits = 0;
  private tries = 0;
  private closed = false;
  /** Checkpoints run to the end of the journal, and of those how many the writer's thread finished (tests, metrics). */
  completed = 0;
  finishedHere = 0;

  constructor(
    private readonly db: Database.Database,
    file: string,
    private readonly commitsBetween = LOG_CHECKPOINT_COMMITS,
  ) {
    db.pragma('wal_autocheckpoint = 0');
    this.checkpointer = new Checkpointer(file);
  }

  /** After each commit of the log: starts a checkpoint every `commitsBetween` commits unless one runs. */
  afterCommit(): void {
    this.commits += 1;
    if (this.commits < this.commitsBetween || this.checkpointer.running) return;
    this.commits = 0;
    this.tries = 0;
    if (this.checkpointer.usable) this.run();
    else this.checkpointHere();
  }

  private run(): void {
    this.checkpointer.run((error, result) => {
      if (this.closed) return;
      // A failed checkpoint loses nothing (the journal stays whole): the writer copies it now, as sqlite's
      // own checkpoint would have, so a worker that keeps failing never lets the journal grow unbounded.
      if (error !== null || result === null) {
        this.checkpointHere();
        return;
      }
      if (result.checkpointed >= result.log) {
        this.completed += 1;
        return;
      }
      this.tries += 1;
      if (this.tries <= TAIL_TRIES_MAX) {
        this.run();
        return;
      }
      // Commits kept landing while the worker copied: copy the short tail on this thread, between commits.
      this.checkpointHere();
    });
  }

  private checkpointHere(): void {
    const [row] = this.db.pragma('wal_checkpoint(PASSIVE)') as Array<{ log: number; checkpointed: number }>;
    if (row !== undefined && row.checkpointed >= row.log) this.completed += 1;
    this.finishedHere += 1;
  }

  close(): void {
    this.closed = true;
    this.checkpointer.close();
  }
}
