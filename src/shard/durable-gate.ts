// Pipelined group commit: what a batch sends (replies, events, effects) waits here until an fsync
// that began after the batch's commit has finished. Runs in a shard worker; the fsync itself runs on
// the libuv pool, so the shard executes the next batch meanwhile.
// Invariant: a release never overtakes an earlier one, and never precedes the sync covering its commit.

export type SyncFn = (done: (error: Error | null) => void) => void;

export class DurableGate<T> {
  /** Sqlite transactions committed so far. */
  private committed = 0;
  /** How many of them the last finished sync covers. */
  private durable = 0;
  private syncing = false;
  private readonly waiting: Array<{ needs: number; item: T }> = [];

  /**
   * `sync` makes every commit so far durable (calls back when it has); `release` sends what waited.
   * `onSynced` sees each sync's duration in seconds.
   */
  constructor(
    private readonly sync: SyncFn,
    private readonly release: (item: T) => void,
    private readonly onSynced: (seconds: number) => void = () => {},
  ) {}

  /** Counts a sqlite transaction that wrote something. */
  committedOne(): void {
    this.committed += 1;
  }

  /** Releases `item` once every commit counted so far is durable (at once if they already are). */
  afterCommits(item: T): void {
    const needs = this.committed;
    if (needs <= this.durable && this.waiting.length === 0) this.release(item);
    else this.waiting.push({ needs, item });
    this.syncIfBehind();
  }

  /** Items waiting for a sync. */
  get pending(): number {
    return this.waiting.length;
  }

  private syncIfBehind(): void {
    if (this.syncing || this.durable >= this.committed) return;
    this.syncing = true;
    const target = this.committed;
    const started = performance.now();
    this.sync((error) => {
      // A failed fsync leaves the journal's state unknown: stop and answer nothing. Recovery replays
      // what reached the disk; the front end answers the waiting requests 5xx.
      if (error !== null) throw error;
      this.onSynced((performance.now() - started) / 1000);
      this.syncing = false;
      this.durable = target;
      while (this.waiting.length > 0 && this.waiting[0]!.needs <= this.durable) this.release(this.waiting.shift()!.item);
      this.syncIfBehind();
    });
  }
}
