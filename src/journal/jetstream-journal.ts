// The clustered journal: each group-commit row the shard's SQLite file commits is also published to
// the shard's JetStream stream (one message per row, msg id <shard>:<epoch>:<batch>), fenced on the
// expected last sequence and the previous row's msg id, so rows are pipelined. Runs in the shard worker
// of the owning node.
// Invariant: `sync` calls back only when the local fsync AND the PubAck of every row shipped before
// the call have come, and the owner's lease holds (it waits for a lapsed one, bounded); a foreign tail stops the shard.
import type { NatsConnection } from '@nats-io/transport-node';
import { jetstream, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { SqliteJournal, type EncodedRow, type Journal, type JournalPosition } from './journal.ts';
import type { WalRow } from '../store/shard-store.ts';
import { apiErrorCode, connectJetStream, msgIdOf, rowHeaders, streamOf, subjectOf, WRONG_LAST_MSG_ID, WRONG_LAST_SEQUENCE } from '../cluster/streams.ts';
import { tailSlots } from '../cluster/owner-child.ts';

/** How long one publish waits for its PubAck before it is sent again with the same msg id. */
const PUBLISH_TIMEOUT_MS = 2_000;
/** Pause before a publish that failed without an answer (no responders during an election) is sent again. */
const PUBLISH_RETRY_MS = 100;
/** How often a sync whose replies wait for the lease to hold again looks at it. */
const LEASE_WAIT_MS = 20;

/** What a shard worker of the owning node needs to replicate its log. */
export interface ShardClusterData {
  servers: string[];
  /** The owner's lease revision: part of every msg id. */
  epoch: number;
  /** The stream's last sequence when this owner took over (its epoch marker). */
  fence: number;
  /** [0]: the wall-clock ms until which the lease surely holds (written by the node's main thread). */
  lease: SharedArrayBuffer;
  /** How long past the lease's deadline rows and replies may wait for it to hold again before the shard gives up. */
  holdMs: number;
  /** The owner's verified and shipped sequence of each stream (owner-child.ts, `tailSlots`). */
  tails: SharedArrayBuffer;
}

interface Shipped {
  row: EncodedRow;
  msgId: string;
  /**
   * The msg id of the row shipped just before this one (null for the first after the fence). A row is
   * fenced on it as well as on the sequence: with rows pipelined, a new owner's epoch marker can take
   * the place of an earlier row still in flight, and a later row, expecting only the sequence after
   * that place, would then land after the marker (a deposed owner's row inside the new owner's log).
   */
  previousMsgId: string | null;
  acked: boolean;
  /** Sends so far (an answer to an earlier one is ignored). */
  attempt: number;
}

export class JetStreamJournal implements Journal {
  private js: JetStreamClient | null = null;
  private jsm: JetStreamManager | null = null;
  private nc: NatsConnection | null = null;
  /** Sequence the next shipped row will get (we are the only writer past the fence). */
  private nextSeq: number;
  /** Every row up to this sequence is acknowledged by the stream. */
  private ackedThrough: number;
  private readonly shipped = new Map<number, Shipped>();
  /** The msg id of the last row shipped (null: none since the fence). */
  private lastMsgId: string | null = null;
  /** Rows shipped before the connection was up, sent in order once it is. */
  private readonly early: number[] = [];
  private readonly waiters: Array<{ seq: number; done: (error: Error | null) => void }> = [];
  private failure: Error | null = null;
  private readonly leaseUntil: Float64Array;
  private readonly tails: ReturnType<typeof tailSlots>;

  constructor(
    private readonly local: SqliteJournal,
    private readonly shard: number,
    private readonly cluster: ShardClusterData,
  ) {
    this.nextSeq = cluster.fence + 1;
    this.ackedThrough = cluster.fence;
    this.leaseUntil = new Float64Array(cluster.lease);
    this.tails = tailSlots(cluster.tails, shard);
    local.store.onRow = (row) => void this.append(row);
    void connectJetStream(cluster.servers, `kobo-shard-${shard}`).then(
      ({ nc, jsm }) => {
        this.nc = nc;
        this.jsm = jsm;
        this.js = jetstream(nc, { timeout: PUBLISH_TIMEOUT_MS });
        for (const seq of this.early.splice(0)) this.send(seq);
      },
      (error: unknown) => this.fail(new Error(`shard ${shard}: cannot reach JetStream`, { cause: error })),
    );
  }

  /** Ships a row the local copy has just committed; durable once `sync` says so. */
  append(row: EncodedRow): JournalPosition {
    const seq = this.nextSeq;
    this.nextSeq += 1;
    this.tails.shipped(seq);
    const msgId = msgIdOf(this.shard, this.cluster.epoch, row.batch);
    this.shipped.set(seq, { row, msgId, previousMsgId: this.lastMsgId, acked: false, attempt: 0 });
    this.lastMsgId = msgId;
    if (this.js === null) this.early.push(seq);
    else this.send(seq);
    // Positions are the local copy's (the same LSNs every copy of the log has).
    return SqliteJournal.position(row.lsnFirst + row.n - 1);
  }

  private leaseHolds(): boolean {
    return Date.now() < this.leaseUntil[0]!;
  }

  /**
   * The lease lapsed longer ago than the hold allows: the node could not re-establish it (its
   * supervisor stops this server at the same bound; this is the shard's own guard).
   */
  private pastHold(): boolean {
    return Date.now() >= this.leaseUntil[0]! + this.cluster.holdMs;
  }

  private send(seq: number): void {
    const entry = this.shipped.get(seq);
    if (entry === undefined || entry.acked || this.failure !== null) return;
    entry.attempt += 1;
    const attempt = entry.attempt;
    // A publish caught in a reconnection may never settle: past its timeout it is sent again (same id).
    const watchdog = setTimeout(() => {
      if (entry.attempt === attempt && !entry.acked) this.retry(seq, new Error('no PubAck in time'));
    }, PUBLISH_TIMEOUT_MS + PUBLISH_RETRY_MS);
    watchdog.unref();
    const expect = entry.previousMsgId === null ? { lastSequence: seq - 1 } : { lastSequence: seq - 1, lastMsgID: entry.previousMsgId };
    this.js!.publish(subjectOf(this.shard), entry.row.body, { msgID: entry.msgId, expect, headers: rowHeaders(entry.row, entry.msgId), timeout: PUBLISH_TIMEOUT_MS }).then(
      (ack) => {
        clearTimeout(watchdog);
        if (ack.seq !== seq) this.fail(new Error(`shard ${this.shard}: row ${entry.msgId} stored at ${ack.seq}, expected ${seq}`));
        else this.acked(seq);
      },
      (error: unknown) => {
        clearTimeout(watchdog);
        // A later attempt is under way (the watchdog sent it): this answer is stale.
        if (entry.attempt !== attempt || entry.acked) return;
        const code = apiErrorCode(error);
        if (code === WRONG_LAST_SEQUENCE || code === WRONG_LAST_MSG_ID) void this.checkTail(seq, entry);
        else this.retry(seq, error);
      },
    );
  }

  private retry(seq: number, error: unknown): void {
    // An election or a slow server is waited out, through a lapse of the lease too (nothing is
    // acknowledged meanwhile), up to the hold.
    if (this.pastHold()) {
      this.fail(new Error(`shard ${this.shard}: no PubAck for row at ${seq} within the lease and its hold`, { cause: error }));
      return;
    }
    setTimeout(() => this.send(seq), PUBLISH_RETRY_MS).unref();
  }

  /**
   * 10071 or 10070: the stream's last message is not the row before this one (sequence seq - 1 and its
   * msg id). Either our message is already stored there (a re-send after a lost PubAck: 2.9.10 answers
   * 10071, not "duplicate"), or an earlier row of ours is not stored yet (it is being re-sent), or
   * another owner appended: this node has lost the shard.
   */
  private async checkTail(seq: number, entry: Shipped): Promise<void> {
    try {
      const last = (await this.jsm!.streams.info(streamOf(this.shard))).state.last_seq;
      if (last < seq) {
        // Nothing is stored at seq yet (an earlier row was still on its way): send again.
        this.retry(seq, new Error('an earlier row is not stored yet'));
        return;
      }
      const stored = await this.jsm!.streams.getMessage(streamOf(this.shard), { seq });
      if (stored === null) this.retry(seq, new Error(`sequence ${seq} could not be read`));
      else if (stored.header.get('Nats-Msg-Id') === entry.msgId) this.acked(seq);
      else this.fail(new Error(`shard ${this.shard}: sequence ${seq} of the stream holds ${stored.header.get('Nats-Msg-Id') ?? 'a message without an id'}, not ${entry.msgId} (another node owns the shard now)`));
    } catch (error) {
      this.retry(seq, error);
    }
  }

  private acked(seq: number): void {
    const entry = this.shipped.get(seq);
    if (entry !== undefined) entry.acked = true;
    while (this.shipped.get(this.ackedThrough + 1)?.acked === true) {
      this.shipped.delete(this.ackedThrough + 1);
      this.ackedThrough += 1;
    }
    this.tails.verified(this.ackedThrough);
    this.settle();
  }

  private fail(error: Error): void {
    this.failure ??= error;
    this.settle();
  }

  private settle(): void {
    while (this.waiters.length > 0) {
      const first = this.waiters[0]!;
      if (this.failure === null && first.seq > this.ackedThrough) return;
      this.waiters.shift();
      first.done(this.failure);
    }
  }

  sync(done: (error: Error | null) => void): void {
    const seq = this.nextSeq - 1;
    let parts = 2;
    let failed: Error | null = null;
    const part = (error: Error | null): void => {
      failed ??= error;
      parts -= 1;
      if (parts > 0) return;
      if (failed !== null) done(failed);
      else this.whenLeaseHolds(() => done(null), done);
    };
    this.local.sync(part);
    this.waiters.push({ seq, done: part });
    this.settle();
  }

  /**
   * The replies leave only while no other node can have taken the shard over: while the lease has
   * lapsed (its bucket electing a leader, say) they wait for the node to renew or re-establish it.
   */
  private whenLeaseHolds(then: () => void, fail: (error: Error) => void): void {
    if (this.leaseHolds()) then();
    else if (this.pastHold()) fail(new Error(`shard ${this.shard}: the lease lapsed and was not re-established within the hold; acknowledging nothing`));
    else setTimeout(() => this.whenLeaseHolds(then, fail), LEASE_WAIT_MS).unref();
  }

  readAfter(position: JournalPosition | null): Iterable<WalRow> {
    return this.local.readAfter(position);
  }

  tail(): JournalPosition | null {
    return this.local.tail();
  }

  truncateBefore(position: JournalPosition): number {
    return this.local.truncateBefore(position);
  }

  /** Closes the connection (the shard has stopped: every row it shipped was acknowledged or never will be). */
  async close(): Promise<void> {
    await this.nc?.close();
  }
}

/** The journal of a shard: its file's log alone (the default), or replicated when the node owns a cluster lease. */
export function openJournal(local: SqliteJournal, shard: number, cluster: ShardClusterData | undefined): Journal & { close(): Promise<void> } {
  if (cluster === undefined) return Object.assign(local, { close: async () => {} });
  return new JetStreamJournal(local, shard, cluster);
}
