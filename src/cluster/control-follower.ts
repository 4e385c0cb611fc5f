// A node's copy of the replicated control rows (kobo-control stream → its control.db and webhooks.db),
// written through the stores' own row code. Runs on the node supervisor's main thread while it follows.
// Invariant: a copy an owner wrote to (no recorded position) is rebuilt from the stream once the stream
// is seeded, so a row the cluster never acknowledged does not outlive its owner's term.
import { DeliverPolicy, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import type Database from 'better-sqlite3';
import { ControlStore } from '../store/control-store.ts';
import { WebhookStore } from '../webhooks/store.ts';
import { FrontIdempotencyStore } from '../http/idempotency-store.ts';
import { clearReplicated, isReplicatedTable, REPLICATED_TABLES, upsertRow, type ReplicaChange } from '../store/replica-rows.ts';
import { consumeRetrying, CONTROL_EPOCH_SUBJECT, CONTROL_SEEDED_SUBJECT, CONTROL_STREAM, type Consuming } from './streams.ts';

/** Messages applied in one pair of transactions at most. */
const APPLY_MESSAGES_MAX = 500;
const POSITION_SQL = 'CREATE TABLE IF NOT EXISTS replica_position (stream TEXT PRIMARY KEY, seq INTEGER NOT NULL)';

/** The owner's server forgets the copy's position: its own writes may include rows the cluster never acknowledged. */
export function forgetControlPosition(db: Database.Database): void {
  db.exec(POSITION_SQL);
  db.prepare('DELETE FROM replica_position WHERE stream = ?').run(CONTROL_STREAM);
}

/** The change a message carries, or null for an epoch marker, the seeded marker or anything else. */
function changeOf(subject: string, data: Uint8Array): ReplicaChange | null {
  if (subject === CONTROL_EPOCH_SUBJECT || subject === CONTROL_SEEDED_SUBJECT || data.length === 0) return null;
  const parsed = JSON.parse(Buffer.from(data).toString('utf8')) as { table?: unknown; row?: unknown };
  if (typeof parsed.table !== 'string' || !isReplicatedTable(parsed.table) || typeof parsed.row !== 'object' || parsed.row === null) return null;
  return parsed as ReplicaChange;
}

export class ControlFollower {
  private control: ControlStore | null;
  private webhooks: WebhookStore | null;
  private seq: number;
  private pending: ReplicaChange[] = [];
  private consuming: Consuming | null = null;

  constructor(
    dataDir: string,
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
  ) {
    this.control = new ControlStore(dataDir);
    this.webhooks = new WebhookStore(dataDir);
    // Its constructor creates the front-idempotency table (and its checksum column) as the server would.
    void new FrontIdempotencyStore(this.webhooks.db, 0);
    this.control.db.exec(POSITION_SQL);
    const row = this.control.db.prepare('SELECT seq FROM replica_position WHERE stream = ?').get(CONTROL_STREAM) as { seq: number } | undefined;
    this.seq = row?.seq ?? -1;
  }

  /** The last stream sequence applied (0: none yet). */
  get position(): number {
    return Math.max(0, this.seq);
  }

  private get stores(): { control: ControlStore; webhooks: WebhookStore } {
    if (this.control === null || this.webhooks === null) throw new Error('control follower: closed');
    return { control: this.control, webhooks: this.webhooks };
  }

  /**
   * A copy without a position (new, restored from an image, or written by this node as owner) starts
   * again from the stream's first message; if the stream is seeded, its rows replace the copy's.
   */
  private async start(): Promise<void> {
    if (this.seq >= 0) return;
    const seeded = await this.jsm.streams.getMessage(CONTROL_STREAM, { last_by_subj: CONTROL_SEEDED_SUBJECT }).catch(() => null);
    const { control, webhooks } = this.stores;
    if (seeded !== null) {
      webhooks.db.transaction(() => clearReplicated(webhooks.db, 'webhooks'))();
      control.db.transaction(() => {
        clearReplicated(control.db, 'control');
        control.db.prepare('INSERT OR REPLACE INTO replica_position (stream, seq) VALUES (?, 0)').run(CONTROL_STREAM);
      })();
    }
    this.seq = 0;
  }

  private apply(seq: number, subject: string, data: Uint8Array): void {
    this.seq = seq;
    const change = changeOf(subject, data);
    if (change !== null) this.pending.push(change);
    if (this.pending.length >= APPLY_MESSAGES_MAX) this.flush();
  }

  /** Writes the changes received so far: webhooks.db first, then control.db with the position (re-applying is harmless). */
  private flush(): void {
    const { control, webhooks } = this.stores;
    const changes = this.pending;
    this.pending = [];
    webhooks.db.transaction(() => {
      for (const c of changes) if (REPLICATED_TABLES[c.table].db === 'webhooks') upsertRow(webhooks.db, c);
    })();
    control.db.transaction(() => {
      for (const c of changes) if (REPLICATED_TABLES[c.table].db === 'control') upsertRow(control.db, c);
      control.db.prepare('INSERT OR REPLACE INTO replica_position (stream, seq) VALUES (?, ?)').run(CONTROL_STREAM, this.seq);
    })();
  }

  /** Follows the stream until `stop`, through its elections (the consumer is made again after a failure). */
  async follow(): Promise<void> {
    await this.start();
    if (this.consuming !== null) return;
    const open = async () => (await this.js.consumers.get(CONTROL_STREAM, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: this.seq + 1 })).consume({ max_messages: APPLY_MESSAGES_MAX });
    this.consuming = consumeRetrying(`follower of ${CONTROL_STREAM}`, open, (m) => {
      if (this.control === null || m.seq <= this.seq) return;
      this.apply(m.seq, m.subject, m.data);
      if (m.info.pending === 0) this.flush();
    });
  }

  async stop(): Promise<void> {
    await this.consuming?.end();
    this.consuming = null;
    if (this.control !== null) this.flush();
  }

  /** Brings the copy to the stream through `target` (a new owner's epoch marker on this stream). */
  async catchUp(target: number): Promise<void> {
    await this.stop();
    await this.start();
    if (this.seq < target) {
      const consumer = await this.js.consumers.get(CONTROL_STREAM, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: this.seq + 1 });
      while (this.seq < target) {
        const batch = await consumer.fetch({ max_messages: Math.min(APPLY_MESSAGES_MAX, target - this.seq), expires: 5_000 });
        let got = 0;
        for await (const m of batch) {
          got += 1;
          if (m.seq > target) break;
          if (m.seq > this.seq) this.apply(m.seq, m.subject, m.data);
        }
        // A compacted stream has gaps: what is missing below the target was replaced by newer rows.
        if (got === 0) break;
      }
    }
    this.seq = Math.max(this.seq, target);
    this.flush();
  }

  close(): void {
    this.control?.close();
    this.webhooks?.close();
    this.control = null;
    this.webhooks = null;
  }
}
