// A node's copy of one shard's log, kept from the shard's JetStream stream: rows are applied exactly as
// shipped (same LSNs, batches and checksums); rows the file holds that the stream does not (a former
// owner's unreplicated tail) are cut. Runs on the node supervisor's main thread while the node follows;
// it lets go of the file while `kobo cluster image-copy` images and truncates it (`pause`).
// Invariant: after `catchUp(target)` the file's log is the stream's rows up to `target`, nothing more.
import path from 'node:path';
import { DeliverPolicy, type JetStreamClient } from '@nats-io/jetstream';
import { ShardStore } from '../store/shard-store.ts';
import { shardFile } from '../shard/layout.ts';
import type { EncodedRow } from '../journal/log-segments.ts';
import { consumeRetrying, rowOf, streamOf, type Consuming } from './streams.ts';

/** A consumer silent this long while its stream holds more is made again (streams.ts). */
const FOLLOW_IDLE_MS = 3_000;
/** Rows applied in one sqlite transaction at most. */
const APPLY_ROWS_MAX = 500;
export const POSITION_META = 'js_position';

/**
 * A copy's position in its stream: the last sequence applied, and the LSN its rows reached with it. Rows
 * of the file past that LSN (a former owner's own, not yet met in the stream again) may be cut.
 */
export function copyPosition(store: ShardStore): { seq: number; lsn: number } {
  const [seq, lsn] = (store.getMeta(POSITION_META) ?? '0:0').split(':').map(Number);
  return { seq: seq ?? 0, lsn: lsn ?? 0 };
}

export class ShardFollower {
  /** The open file (null: paused, reopened at the next use). */
  private store: ShardStore | null;
  private closed = false;
  private readonly fileName: string;
  /** Last stream sequence applied, and the LSN the log reached with it. */
  private seq: number;
  private lsn: number;
  private consuming: Consuming | null = null;
  private rows: EncodedRow[] = [];

  constructor(
    readonly shard: number,
    dataDir: string,
    private readonly js: JetStreamClient,
    private readonly options: { walSegmentRecords?: number } = {},
  ) {
    this.fileName = path.join(dataDir, shardFile(shard));
    this.store = this.open();
    ({ seq: this.seq, lsn: this.lsn } = copyPosition(this.store));
  }

  /** The LSN this copy continues at. */
  get nextLsn(): number {
    return this.file.lsnNext;
  }

  /** The last stream sequence this copy holds. */
  get position(): number {
    return this.seq;
  }

  private open(): ShardStore {
    return new ShardStore(this.fileName, this.options.walSegmentRecords === undefined ? {} : { walSegmentRecords: this.options.walSegmentRecords });
  }

  /**
   * The file, reopened after a pause: another process may have archived segments meanwhile, which an
   * open store's list of segments would still name.
   */
  private get file(): ShardStore {
    if (this.closed) throw new Error(`follower of shard ${this.shard}: closed`);
    this.store ??= this.open();
    return this.store;
  }

  /** Applies one stream message (a row or an epoch marker) at sequence `seq`. */
  private apply(seq: number, row: EncodedRow | null): void {
    this.seq = seq;
    if (row === null) return;
    const next = this.rows.length > 0 ? this.rows[this.rows.length - 1]!.lsnFirst + this.rows[this.rows.length - 1]!.n : this.file.lsnNext;
    if (row.lsnFirst < next) {
      this.flush();
      const store = this.file;
      const first = store.walFirstLsn();
      const have = store.rowAt(row.lsnFirst);
      this.lsn = row.lsnFirst + row.n - 1;
      // A row this copy already holds (it wrote it as owner, or truncated it after an image) is kept.
      if ((have !== undefined && have.crc === row.crc && have.n === row.n) || (first !== null && row.lsnFirst < first) || (first === null && row.lsnFirst < store.lsnNext)) return;
      store.cutDiverged(row.lsnFirst);
    } else if (row.lsnFirst > next) {
      throw new Error(`follower of shard ${this.shard}: stream sequence ${seq} starts at LSN ${row.lsnFirst}, the copy continues at ${next}`);
    }
    this.rows.push(row);
    this.lsn = row.lsnFirst + row.n - 1;
    if (this.rows.length >= APPLY_ROWS_MAX) this.flush();
  }

  /** Writes the rows received so far, with the position, in one transaction. */
  private flush(): void {
    const rows = this.rows;
    this.rows = [];
    this.file.appendShipped(rows, [[POSITION_META, `${this.seq}:${this.lsn}`]]);
  }

  /**
   * Follows the stream from this copy's position until `stop` (a warm standby), through the stream's
   * elections. A row that cannot be applied stops it where it is; a takeover catches it up, or refuses.
   */
  async follow(): Promise<void> {
    if (this.closed || this.consuming !== null) return;
    const open = async () => (await this.js.consumers.get(streamOf(this.shard), { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: this.seq + 1 })).consume({ max_messages: APPLY_ROWS_MAX });
    const behind = async (): Promise<boolean> => {
      // Rows received but held for the rest of a batch that never came go to the file now.
      if (this.rows.length > 0 && !this.closed) this.flush();
      return (await (await this.js.streams.get(streamOf(this.shard))).info()).state.last_seq > this.seq;
    };
    this.consuming = consumeRetrying(`follower of shard ${this.shard}`, open, (m) => {
      if (this.closed || m.seq <= this.seq) return;
      this.apply(m.seq, rowOf(m.headers, m.data));
      if (m.info.pending === 0) this.flush();
    }, { idleMs: FOLLOW_IDLE_MS, behind });
  }

  /** Its following stopped on a row it could not apply (a gap: the stream was purged past this copy). */
  get stalled(): boolean {
    return this.consuming?.failed() ?? false;
  }

  /** Stops following; what was received is written. */
  async stop(): Promise<void> {
    await this.consuming?.end();
    this.consuming = null;
    if (this.rows.length > 0) this.flush();
  }

  /**
   * Brings the copy to exactly the stream's rows through `target` (the sequence of a new owner's epoch
   * marker): what is missing is applied, and rows beyond the stream's last one are cut.
   */
  async catchUp(target: number): Promise<void> {
    await this.stop();
    if (this.seq < target) {
      const consumer = await this.js.consumers.get(streamOf(this.shard), { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: this.seq + 1 });
      while (this.seq < target) {
        const batch = await consumer.fetch({ max_messages: Math.min(APPLY_ROWS_MAX, target - this.seq), expires: 5_000 });
        let got = 0;
        for await (const m of batch) {
          got += 1;
          if (m.seq > target) break;
          if (m.seq > this.seq) this.apply(m.seq, rowOf(m.headers, m.data));
        }
        if (got === 0) throw new Error(`follower of shard ${this.shard}: the stream gave nothing between ${this.seq} and ${target}`);
      }
    }
    this.flush();
    const store = this.file;
    if (store.lsnNext - 1 > this.lsn) store.cutDiverged(this.lsn + 1);
  }

  /** Stops following and closes the file until the next use (another process writes it meanwhile). */
  async pause(): Promise<void> {
    await this.stop();
    this.store?.close();
    this.store = null;
  }

  close(): void {
    this.store?.close();
    this.store = null;
    this.closed = true;
  }
}
