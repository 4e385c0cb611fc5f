// The owner's side of the replicated control rows: each change control.db or webhooks.db reports (a key,
// a sandbox clock, an operator action, a webhook subscription, a front-idempotency record) is published
// to the kobo-control stream in order, one message per row, fenced on the expected last sequence, msg id
// control:<epoch>:<n>. Main thread of the server a cluster node starts once it owns.
// Invariant: `settled` resolves only once every change reported before it has its PubAck and the lease
// holds; a foreign tail, or a lease lapsed past its hold, is fatal (nothing more is answered).
import type { NatsConnection } from '@nats-io/transport-node';
import { jetstream, StorageType, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { allRows, scannedRows, REPLICATED_TABLES, type ReplicaChange, type ReplicaSink } from '../store/replica-rows.ts';
import type { ControlStore } from '../store/control-store.ts';
import type { WebhookStore } from '../webhooks/store.ts';
import type { FrontIdempotencyStore } from '../http/idempotency-store.ts';
import { tailSlots, type OwnerCluster } from './owner-child.ts';
import { forgetControlPosition } from './control-follower.ts';
import { apiErrorCode, connectJetStream, patiently, CONTROL_SEEDED_SUBJECT, CONTROL_STREAM, CONTROL_SUBJECTS, controlMsgIdOf, controlSubjectOf, DAY_MS, epochHeaders, WRONG_LAST_SEQUENCE } from './streams.ts';

/** How long one publish waits for its PubAck before it is sent again with the same msg id. */
const PUBLISH_TIMEOUT_MS = 2_000;
/** Pause before a publish that failed without an answer is sent again. */
const PUBLISH_RETRY_MS = 100;
/** How often past days of front-idempotency records are purged from the stream. */
const PURGE_EVERY_MS = 3_600_000;
/** Days before the retention cut that each purge looks at (older ones went at earlier purges). */
const PURGE_DAYS_BACK = 7;
/** How often the owner looks for rows another process (the kobo CLI) changed in its files. */
const SCAN_EVERY_MS = 1_000;
/** How often settled changes waiting for the lease to hold again look at it. */
const LEASE_WAIT_MS = 20;

export interface ControlLogOptions {
  servers: string[];
  epoch: number;
  /** The stream's sequence of this owner's epoch marker: the first change goes right after it. */
  fence: number;
  /** Float64 [0]: wall-clock ms until which the lease surely holds. */
  lease: SharedArrayBuffer;
  /** How long past the lease's deadline changes may wait for it to hold again. */
  holdMs: number;
  /** This stream's verified and shipped sequence go to slot `tailSlot` of these (owner-child.ts). */
  tails: SharedArrayBuffer;
  tailSlot: number;
  idempotencyRetentionMs: number;
  /** The process must stop: called once, then nothing settles any more. */
  onFatal: (message: string) => void;
}

interface Pending {
  n: number;
  subject: string;
  body: string;
}

/**
 * The stream of replicated control rows: one subject per row, only its newest message kept (the stream
 * is the rows' current state, so it needs no image to be purged below).
 */
export async function ensureControlStream(jsm: JetStreamManager, replicas: number): Promise<void> {
  if (await jsm.streams.info(CONTROL_STREAM).then(() => true, () => false)) return;
  await patiently(() => jsm.streams.add({ name: CONTROL_STREAM, subjects: [CONTROL_SUBJECTS], num_replicas: replicas, storage: StorageType.File, max_msgs_per_subject: 1, duplicate_window: 120 * 1_000_000_000 }).catch(async (error: unknown) => {
    // Another node created it meanwhile.
    if (!(await jsm.streams.info(CONTROL_STREAM).then(() => true, () => false))) throw error;
  }));
}

/** The subject a change's row lives at (a front-idempotency record's includes its day). */
export function subjectOfChange(change: ReplicaChange): string {
  const key = String(change.row[REPLICATED_TABLES[change.table].key]);
  return controlSubjectOf(change.table, key, change.table === 'front_idempotency' ? Number(change.row.at_ms) : null);
}

export class ControlLog implements ReplicaSink {
  private readonly queue: Pending[] = [];
  private nextN = 1;
  private ackedN = 0;
  private lastSeq: number;
  private readonly waiters: Array<{ n: number; resolve: () => void }> = [];
  private pumping = false;
  private failed = false;
  private readonly leaseUntil: Float64Array;
  private readonly tails: ReturnType<typeof tailSlots>;
  private leaseTimer: NodeJS.Timeout | null = null;
  private readonly purgeTimer: NodeJS.Timeout;
  private scanTimer: NodeJS.Timeout | null = null;
  /** Per row subject, the body last published (what the stream holds). */
  private readonly published = new Map<string, string>();

  private constructor(
    private readonly nc: NatsConnection,
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly options: ControlLogOptions,
  ) {
    this.lastSeq = options.fence;
    this.leaseUntil = new Float64Array(options.lease);
    this.tails = tailSlots(options.tails, options.tailSlot);
    this.purgeTimer = setInterval(() => void this.purgePastDays(), PURGE_EVERY_MS);
    this.purgeTimer.unref();
  }

  static async open(options: ControlLogOptions): Promise<ControlLog> {
    const { nc, jsm } = await connectJetStream(options.servers, 'kobo-control-owner');
    return new ControlLog(nc, jetstream(nc, { timeout: PUBLISH_TIMEOUT_MS }), jsm, options);
  }

  record(change: ReplicaChange): void {
    const subject = subjectOfChange(change);
    const body = JSON.stringify(change);
    if (change.table !== 'front_idempotency') this.published.set(subject, body);
    this.enqueue(subject, body);
  }

  /**
   * Publishes what another process changed in the files (the kobo CLI: keys, subscriptions, queued
   * operator actions), found by comparing the rows with what was last published, every SCAN_EVERY_MS.
   * Front-idempotency records are only ever written by this server, and are not scanned.
   */
  watch(rows: () => ReplicaChange[]): void {
    for (const change of rows()) this.published.set(subjectOfChange(change), JSON.stringify(change));
    this.scanTimer = setInterval(() => {
      for (const change of rows()) {
        const subject = subjectOfChange(change);
        const body = JSON.stringify(change);
        if (this.published.get(subject) !== body) this.record(change);
      }
    }, SCAN_EVERY_MS);
    this.scanTimer.unref();
  }

  private enqueue(subject: string, body: string): void {
    this.queue.push({ n: this.nextN, subject, body });
    this.nextN += 1;
    void this.pump();
  }

  /** Every change reported so far is acknowledged. */
  idle(): boolean {
    return this.ackedN === this.nextN - 1;
  }

  /** Resolves once every change reported before the call is acknowledged (never, if the process must stop). */
  settled(): Promise<void> {
    const n = this.nextN - 1;
    if (this.ackedN >= n && !this.failed) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ n, resolve }));
  }

  /**
   * The first owner of a cluster whose stream has never been seeded publishes every replicated row it
   * holds (a data dir from before cluster mode replicated them), then the seeded marker.
   */
  async seed(rows: () => ReplicaChange[]): Promise<number> {
    const seeded = await this.jsm.streams.getMessage(CONTROL_STREAM, { last_by_subj: CONTROL_SEEDED_SUBJECT }).catch(() => null);
    if (seeded !== null) return 0;
    const all = rows();
    for (const change of all) this.record(change);
    this.enqueue(CONTROL_SEEDED_SUBJECT, JSON.stringify({ epoch: this.options.epoch, rows: all.length }));
    await this.settled();
    return all.length;
  }

  private leaseHolds(): boolean {
    return Date.now() < this.leaseUntil[0]!;
  }

  /** The lease lapsed longer ago than the hold allows (the supervisor stops this server at the same bound). */
  private pastHold(): boolean {
    return Date.now() >= this.leaseUntil[0]! + this.options.holdMs;
  }

  private die(message: string): void {
    if (this.failed) return;
    this.failed = true;
    this.options.onFatal(`control rows: ${message}`);
  }

  private async pump(): Promise<void> {
    if (this.pumping || this.failed) return;
    this.pumping = true;
    try {
      while (this.queue.length > 0) {
        const item = this.queue[0]!;
        await this.publish(item);
        this.queue.shift();
        this.ackedN = item.n;
        this.settle();
      }
    } catch (error) {
      this.die((error as Error).message);
    } finally {
      this.pumping = false;
    }
  }

  /** Resolves the waiters whose changes are acknowledged, while the lease holds (a lapsed one is waited for, up to the hold). */
  private settle(): void {
    if (this.waiters.length === 0 || this.failed) return;
    if (!this.leaseHolds()) {
      if (this.pastHold()) this.die('the lease lapsed and was not re-established within the hold; acknowledging nothing');
      else this.leaseTimer ??= setTimeout(() => {
        this.leaseTimer = null;
        this.settle();
      }, LEASE_WAIT_MS);
      return;
    }
    while (this.waiters.length > 0 && this.waiters[0]!.n <= this.ackedN) this.waiters.shift()!.resolve();
  }

  /** Publishes one change at the sequence after the last; resends with the same id until it is stored. */
  private async publish(item: Pending): Promise<void> {
    const msgId = controlMsgIdOf(this.options.epoch, item.n);
    const seq = this.lastSeq + 1;
    this.tails.shipped(seq);
    for (;;) {
      if (this.pastHold()) throw new Error(`no PubAck for change ${msgId} within the lease and its hold`);
      try {
        const ack = await this.js.publish(item.subject, item.body, { msgID: msgId, expect: { lastSequence: seq - 1 }, headers: epochHeaders(this.options.epoch, msgId), timeout: PUBLISH_TIMEOUT_MS });
        if (ack.seq !== seq) throw new Error(`change ${msgId} stored at ${ack.seq}, expected ${seq}`);
        this.verified(seq);
        return;
      } catch (error) {
        if (apiErrorCode(error) !== WRONG_LAST_SEQUENCE) {
          if (error instanceof Error && error.message.startsWith(`change ${msgId} stored`)) throw error;
          await new Promise((resolve) => setTimeout(resolve, PUBLISH_RETRY_MS));
          continue;
        }
        // 10071: either our earlier attempt was stored (2.9.10 answers so to a resend) or another owner wrote.
        const last = await this.jsm.streams.info(CONTROL_STREAM).then((i) => i.state.last_seq, () => null);
        if (last === null || last < seq) continue;
        const stored = await this.jsm.streams.getMessage(CONTROL_STREAM, { seq }).catch(() => null);
        if (stored !== null && stored.header.get('Nats-Msg-Id') === msgId) {
          this.verified(seq);
          return;
        }
        throw new Error(`sequence ${seq} of ${CONTROL_STREAM} holds ${stored?.header.get('Nats-Msg-Id') ?? 'another message'}, not ${msgId} (another node owns the cluster now)`);
      }
    }
  }

  private verified(seq: number): void {
    this.lastSeq = seq;
    this.tails.verified(seq);
  }

  /** Drops whole past days of front-idempotency records (each node also sweeps its own table). */
  private async purgePastDays(): Promise<void> {
    const cut = Math.floor((Date.now() - this.options.idempotencyRetentionMs) / DAY_MS);
    for (let day = cut - PURGE_DAYS_BACK; day < cut; day += 1) {
      await this.jsm.streams.purge(CONTROL_STREAM, { filter: `kobo.control.front_idempotency.${day}.>` }).catch(() => {});
    }
  }

  async close(): Promise<void> {
    clearInterval(this.purgeTimer);
    if (this.leaseTimer !== null) clearTimeout(this.leaseTimer);
    if (this.scanTimer !== null) clearInterval(this.scanTimer);
    await this.nc.close();
  }
}

/**
 * Cluster owner: every change of the stores goes to the stream from now on; the copy's follower position
 * is dropped (this copy now holds writes the cluster may never acknowledge), and a never-seeded stream
 * gets every row this copy holds. Call before anything writes to the stores.
 */
export async function replicateControlRows(
  owner: OwnerCluster,
  stores: { control: ControlStore; webhooks: WebhookStore; front: FrontIdempotencyStore },
  options: { idempotencyRetentionMs: number; onFatal: (message: string) => void },
): Promise<ControlLog> {
  const log = await ControlLog.open({ servers: owner.servers, epoch: owner.epoch, fence: owner.controlFence, lease: owner.lease, holdMs: owner.holdMs, tails: owner.tails, tailSlot: owner.fences.length, ...options });
  forgetControlPosition(stores.control.db);
  stores.control.replica = log;
  stores.webhooks.replica = log;
  stores.front.replica = log;
  await log.seed(() => [...allRows(stores.control.db, 'control'), ...allRows(stores.webhooks.db, 'webhooks')]);
  log.watch(() => [...scannedRows(stores.control.db, 'control'), ...scannedRows(stores.webhooks.db, 'webhooks')]);
  return log;
}
