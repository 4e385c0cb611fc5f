// The front end's handle on the shards: start them, route a command to its partition's shard, await
// the durable reply. Runs on the main thread; each shard runs on a worker thread, or inline on this
// thread's event loop. A shard that dies takes the process down with it: its state is only
// trustworthy again after a restart replays the WAL.
// Invariant: at most `shardQueueMax` commands wait per shard; beyond that callers get UNAVAILABLE at once.
import { SHARD_MOVING_MESSAGE } from '../errors.ts';
import type { ConnectorConfig } from '../connectors/connector-config.ts';
import { inspect } from 'node:util';
import { Worker } from 'node:worker_threads';
import type { Command, IndexMessage, ListAnswer, MainToShard, ShardListQuery, ShardToMain, WalletUpdate } from './protocol.ts';
import { ForwardGate } from './forward-gate.ts';
import type { OutboxEvent, StoredReply } from './state.ts';
import { shardOf } from './layout.ts';
import { WAL_SEGMENT_RECORDS } from '../journal/log-segments.ts';
import type { ShardWorkerData } from './shard-runtime.ts';
import { faultHint, InlineShard, type ShardHandle } from './shard-handles.ts';
import type { ShardMetricsMessage } from '../metrics/shard-metrics.ts';
import type { OwnerCluster } from '../cluster/owner-child.ts';
import { RemoteShard, type ShardRoute } from '../cluster/shard-link.ts';
import { WaiterSlab } from './waiter-slab.ts';

/** A forward a moving remote shard refused (503) is sent again this often, at most this many times. */
const REMOTE_FORWARD_RETRY_MS = 500;
const REMOTE_FORWARD_ATTEMPTS_MAX = 120;
/** What a command to a remote shard that is moving gets (503; the HTTP front adds Retry-After to it). */

export interface PoolOptions {
  shards: number;
  /** Run each shard on the main thread's event loop instead of a worker thread (one CPU: no hop). */
  inline?: boolean;
  dataDir: string;
  railLatencyMs: number;
  batchCommandsMax: number;
  shardQueueMax: number;
  snapshotIntervalMs: number;
  idempotencyRetentionMs: number;
  idempotencySweepMs: number;
  /** Idempotency scopes a shard forgot (past retention), for the front end's index. */
  onIdempotencyExpired: (pairs: Array<[hash: number, partition: number]>) => void;
  snapshotEveryRecords: number;
  walRetainRecords: number;
  walSegmentRecords?: number;
  quoteSweepMs: number;
  collectionSweepMs: number;
  clockOffsets: Array<[string, number]>;
  /** Operator connectors (live rails), handed to every shard. */
  connectors?: ConnectorConfig[];
  requeryAfterMs?: number;
  /** Test-only fault injection (KOBO_TEST_CRASH_AT). */
  crashAt?: string;
  onFatal: (message: string) => void;
  /** Faults that fail one command but not the process (e.g. a command that cannot be cloned). */
  log?: (message: string) => void;
  /** Outbox events a shard made durable, for the webhook dispatcher. */
  onOutbox: (events: OutboxEvent[]) => void;
  /** Views of wallets a durable commit changed; called before that commit's replies are handed out. */
  onWallets?: (updates: WalletUpdate[]) => void;
  /** A shard's measurements of the last second (group commits, fsync, WAL records, snapshots, rails). */
  onMetrics?: (message: ShardMetricsMessage) => void;
  /** Cluster mode, this node owning every shard: each shard's rows are replicated (owner-child.ts). */
  cluster?: OwnerCluster;
  /**
   * Cluster mode with per-shard ownership: every shard runs in a shard host on its owner node and is
   * reached over a link (cluster/shard-link.ts); `onIndex` gets the report a shard sends each time a
   * link to it opens again (it may have moved, and what it stored since the last report is in it).
   */
  remote?: { routeOf: (shard: number) => ShardRoute; secret: string; epoch: number; onIndex: (report: IndexMessage) => void };
}

interface Pending {
  resolve: (reply: StoredReply) => void;
  shard: number;
}

const WORKER_URL = new URL('./worker-entry.mjs', import.meta.url);

export class ShardPool {
  private readonly workers: ShardHandle[] = [];
  /** Commands sent and not yet answered, by the number each carries to its shard and back. */
  private readonly pending = new WaiterSlab<Pending>();
  private readonly inFlight: number[];
  private readonly snapshotWaiters = new Map<number, (r: { partitions: number; lsn: number }) => void>();
  private readonly pingWaiters = new Map<number, () => void>();
  private readonly listWaiters = new Map<number, { shard: number; resolve: (answer: ListAnswer) => void }>();
  /** Remote mode: what every shard must know again when its link opens (sandbox clocks, the public URL). */
  private readonly clocks = new Map<string, number>();
  private publicUrl: string | null = null;
  private nextN = 1;
  /** Cross-shard steps, held while an online backup takes its cut. */
  private readonly forwards = new ForwardGate((cmd) => this.send(cmd));
  private outgoing: Array<Array<{ n: number; cmd: Command }>>;
  private outgoingScheduled = false;
  private stopping = false;

  constructor(private readonly options: PoolOptions) {
    this.inFlight = new Array<number>(options.shards).fill(0);
    this.outgoing = Array.from({ length: options.shards }, () => []);
  }

  /** Spawns every shard and resolves with their recovery reports once all have replayed their WAL. */
  async start(): Promise<IndexMessage[]> {
    const ready: Array<Promise<IndexMessage>> = [];
    for (let shard = 0; shard < this.options.shards; shard += 1) {
      const workerData: ShardWorkerData = {
        shard,
        shards: this.options.shards,
        dataDir: this.options.dataDir,
        railLatencyMs: this.options.railLatencyMs,
        batchCommandsMax: this.options.batchCommandsMax,
        snapshotIntervalMs: this.options.snapshotIntervalMs,
        idempotencyRetentionMs: this.options.idempotencyRetentionMs,
        idempotencySweepMs: this.options.idempotencySweepMs,
        snapshotEveryRecords: this.options.snapshotEveryRecords,
        walRetainRecords: this.options.walRetainRecords,
        walSegmentRecords: this.options.walSegmentRecords ?? WAL_SEGMENT_RECORDS,
        quoteSweepMs: this.options.quoteSweepMs,
        collectionSweepMs: this.options.collectionSweepMs,
        clockOffsets: this.options.clockOffsets,
        connectors: this.options.connectors ?? [],
        requeryAfterMs: this.options.requeryAfterMs ?? 300_000,
        crashAt: this.options.crashAt ?? '',
        ...(this.options.cluster === undefined ? {} : { cluster: { servers: this.options.cluster.servers, epoch: this.options.cluster.epoch, fence: this.options.cluster.fences[shard] ?? 0, lease: this.options.cluster.lease, holdMs: this.options.cluster.holdMs, tails: this.options.cluster.tails } }),
      };
      const remote = this.options.remote;
      if (remote !== undefined) {
        ready.push(this.startRemote(shard, remote));
        continue;
      }
      const worker: ShardHandle = this.options.inline === true ? new InlineShard(workerData) : new Worker(WORKER_URL, { workerData });
      this.workers.push(worker);
      ready.push(
        new Promise((resolve, reject) => {
          worker.on('message', (message: ShardToMain) => {
            if (message.type === 'ready') resolve(message);
            else this.onMessage(message);
          });
          worker.on('error', (error) => {
            reject(error);
            // What crosses the thread boundary may have lost its stack and message: show whatever it kept.
            if (!this.stopping) this.options.onFatal(`shard ${shard} failed${faultHint(error)}: ${error.stack ?? error.message ?? inspect(error)}`);
          });
          worker.on('exit', (code) => {
            if (!this.stopping) this.options.onFatal(`shard ${shard} exited with code ${code}`);
          });
        }),
      );
    }
    return Promise.all(ready);
  }

  /** A shard on another node: its first report resolves the start, later ones (after a move) go to `onIndex`. */
  private startRemote(shard: number, remote: NonNullable<PoolOptions['remote']>): Promise<IndexMessage> {
    for (const [owner, offsetMs] of this.options.clockOffsets) this.clocks.set(owner, offsetMs);
    const link = new RemoteShard(shard, remote.routeOf, remote.secret, remote.epoch);
    this.workers.push(link);
    let started = false;
    return new Promise((resolve) => {
      link.on('message', (message: ShardToMain) => {
        if (message.type !== 'ready') this.onMessage(message);
        else if (!started) {
          started = true;
          resolve(message);
        } else remote.onIndex(message);
      });
      link.on('up', () => {
        try {
          for (const [owner, offsetMs] of this.clocks) link.postMessage({ type: 'clock', owner, offsetMs });
          if (this.publicUrl !== null) link.postMessage({ type: 'public-url', url: this.publicUrl });
          link.postMessage({ type: 'index' });
        } catch {
          // Down again already: the next 'up' asks again.
        }
      });
      link.on('down', () => this.failShard(shard, SHARD_MOVING_MESSAGE));
    });
  }

  /** Remote mode: whether a shard's link is open now. */
  private reachable(shard: number): boolean {
    const handle = this.workers[shard];
    return !(handle instanceof RemoteShard) || handle.up;
  }

  /** A link failed: what it was sent has no answer here (whether it committed is unknown: the client retries). */
  private failShard(shard: number, message: string): void {
    for (const [n, waiter] of this.pending.entries()) {
      if (waiter.shard !== shard) continue;
      this.pending.take(n);
      this.inFlight[shard]! -= 1;
      waiter.resolve({ status: 503, error: { code: 'UNAVAILABLE', message } });
    }
    for (const [n, waiter] of this.listWaiters) {
      if (waiter.shard !== shard) continue;
      this.listWaiters.delete(n);
      waiter.resolve({ rows: [], error: { status: 503, code: 'UNAVAILABLE', message } });
    }
  }

  private onMessage(message: ShardToMain): void {
    if (message.type === 'replies') {
      // A client that hears of its write must find it in the next GET of the wallet: views first.
      if (message.wallets.length > 0) this.options.onWallets?.(message.wallets);
      for (const item of message.items) {
        const waiter = this.pending.take(item.n);
        if (waiter === undefined) continue;
        this.inFlight[waiter.shard]! -= 1;
        waiter.resolve(item.reply);
      }
    } else if (message.type === 'list.page') {
      const { type: _type, n, ...answer } = message;
      this.listWaiters.get(n)?.resolve(answer);
      this.listWaiters.delete(n);
    } else if (message.type === 'snapshot.done') {
      this.snapshotWaiters.get(message.n)?.({ partitions: message.partitions, lsn: message.lsn });
      this.snapshotWaiters.delete(message.n);
    } else if (message.type === 'metrics') {
      this.options.onMetrics?.(message);
    } else if (message.type === 'pong') {
      this.pingWaiters.get(message.n)?.();
      this.pingWaiters.delete(message.n);
    } else if (message.type === 'idem.expired') {
      this.options.onIdempotencyExpired(message.pairs);
    } else if (message.type === 'outbox') {
      this.options.onOutbox(message.events);
    } else if (message.type === 'forward') {
      if (this.options.remote !== undefined) {
        this.forwardRemote(message, 1);
        return;
      }
      this.forwards.forward(message.cmd, (reply) => {
        const replyTo = message.replyTo;
        if (replyTo === undefined) return;
        const outcome: 'credited' | 'rejected' = reply.status < 300 ? 'credited' : 'rejected';
        // A 503 (queue full) is not an answer: the origin re-asks on its next recovery or retry.
        if (reply.status >= 500) return;
        setTimeout(() => this.forwards.forward(Object.assign({}, replyTo.cmd, { outcome, nowMs: Math.max(replyTo.cmd.nowMs, message.cmd.nowMs) })), replyTo.delayMs).unref();
      });
    }
  }

  /**
   * Remote mode: a cross-shard step whose target (or origin, for the answer) is moving is sent again
   * until its shard answers (each step is idempotent by its id), for about a minute at most.
   */
  private forwardRemote(message: Extract<ShardToMain, { type: 'forward' }>, attempt: number): void {
    this.forwards.forward(message.cmd, (reply) => {
      if (reply.status === 503 && attempt < REMOTE_FORWARD_ATTEMPTS_MAX && !this.stopping) {
        setTimeout(() => this.forwardRemote(message, attempt + 1), REMOTE_FORWARD_RETRY_MS).unref();
        return;
      }
      const replyTo = message.replyTo;
      if (replyTo === undefined || reply.status >= 500) return;
      const outcome: 'credited' | 'rejected' = reply.status < 300 ? 'credited' : 'rejected';
      const back = { type: 'forward' as const, cmd: Object.assign({}, replyTo.cmd, { outcome, nowMs: Math.max(replyTo.cmd.nowMs, message.cmd.nowMs) }) };
      setTimeout(() => this.forwardRemote(back, 1), replyTo.delayMs).unref();
    });
  }

  send(cmd: Command): Promise<StoredReply> {
    const shard = shardOf(cmd.partition, this.options.shards);
    if (!this.reachable(shard)) {
      return Promise.resolve({ status: 503, error: { code: 'UNAVAILABLE', message: SHARD_MOVING_MESSAGE } });
    }
    if (this.inFlight[shard]! >= this.options.shardQueueMax) {
      return Promise.resolve({ status: 503, error: { code: 'UNAVAILABLE', message: 'The shard is at capacity; retry shortly.' } });
    }
    this.inFlight[shard]! += 1;
    return new Promise((resolve) => {
      const n = this.pending.add({ resolve, shard });
      this.outgoing[shard]!.push({ n, cmd });
      if (!this.outgoingScheduled) {
        this.outgoingScheduled = true;
        setImmediate(() => this.flushOutgoing());
      }
    });
  }

  /**
   * An online backup's cut: holds cross-shard steps for at most `holdMs`; true once none is half done
   * (every one sent before is durable), so the shard files can be read one after another as one moment.
   */
  holdForwards(id: string, holdMs: number): Promise<boolean> {
    return this.forwards.start(id, holdMs);
  }

  /** Ends the hold; true if it was still in force when released. */
  releaseForwards(id: string): boolean {
    return this.forwards.release(id);
  }

  /** Where clients reach the server (known once it listens): hosted checkout links are built on it. */
  setPublicUrl(url: string): void {
    this.publicUrl = url;
    this.workers.forEach((worker, shard) => {
      if (this.reachable(shard)) worker.postMessage({ type: 'public-url', url });
    });
  }

  /** Posts each shard's gathered commands as one message (the request handlers of one loop turn). */
  private flushOutgoing(): void {
    this.outgoingScheduled = false;
    this.outgoing.forEach((items, shard) => {
      if (items.length === 0) return;
      this.outgoing[shard] = [];
      if (this.post(shard, items)) return;
      // The batch could not be cloned (one command the structured clone refuses): send each alone,
      // so only the offending command fails and the rest of the batch runs.
      for (const item of items) if (!this.post(shard, [item])) this.failSend(item.n);
    });
  }

  /** Commands sent to each shard and not yet answered (the front end's view of its queue). */
  queueDepths(): readonly number[] {
    return this.inFlight;
  }

  /** True when every shard answers a ping within `timeoutMs` (readiness). */
  async ping(timeoutMs: number): Promise<boolean> {
    if (this.stopping || this.workers.length < this.options.shards) return false;
    const answers = this.workers.map((worker) => {
      const n = this.nextN++;
      return new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => {
          this.pingWaiters.delete(n);
          resolve(false);
        }, timeoutMs);
        this.pingWaiters.set(n, () => {
          clearTimeout(timer);
          resolve(true);
        });
        try {
          worker.postMessage({ type: 'ping', n } satisfies MainToShard);
        } catch {
          // A remote shard that is moving: not ready.
          clearTimeout(timer);
          this.pingWaiters.delete(n);
          resolve(false);
        }
      });
    });
    return (await Promise.all(answers)).every(Boolean);
  }

  private post(shard: number, items: Array<{ n: number; cmd: Command }>): boolean {
    try {
      this.workers[shard]!.postMessage({ type: 'commands', items } satisfies MainToShard);
      return true;
    } catch (error) {
      if (items.length === 1) this.options.log?.(`shard ${shard}: command ${items[0]!.cmd.k} could not be sent: ${(error as Error).message}`);
      return false;
    }
  }

  /** A command that never reached its shard changed nothing: its caller gets 500, the process lives. */
  private failSend(n: number): void {
    const waiter = this.pending.take(n);
    if (waiter === undefined) return;
    this.inFlight[waiter.shard]! -= 1;
    waiter.resolve({ status: 500, error: { code: 'INTERNAL', message: 'The command could not be handed to its shard.' } });
  }

  /** Asks each of `shards` for its part of a list (null: every shard); the answers come in that order. */
  list(query: ShardListQuery, shards: readonly number[] | null = null): Promise<ListAnswer[]> {
    const asked = shards ?? this.workers.map((_, shard) => shard);
    if (this.stopping) return Promise.resolve(asked.map(() => ({ rows: [], error: { status: 503, code: 'UNAVAILABLE', message: 'The server is stopping.' } })));
    return Promise.all(
      asked.map((shard) => {
        const n = this.nextN++;
        return new Promise<ListAnswer>((resolve) => {
          // Set first: an inline shard may answer within postMessage.
          this.listWaiters.set(n, { shard, resolve });
          try {
            this.workers[shard]!.postMessage({ type: 'list', n, query } satisfies MainToShard);
          } catch {
            this.listWaiters.delete(n);
            resolve({ rows: [], error: { status: 503, code: 'UNAVAILABLE', message: SHARD_MOVING_MESSAGE } });
          }
        });
      }),
    );
  }

  /** The shard that owns a partition. */
  shardOfPartition(partition: number): number {
    return shardOf(partition, this.options.shards);
  }

  broadcastClock(owner: string, offsetMs: number): void {
    this.clocks.set(owner, offsetMs);
    this.workers.forEach((worker, shard) => {
      // A remote shard that is moving hears every offset when its link opens again.
      if (this.reachable(shard)) worker.postMessage({ type: 'clock', owner, offsetMs });
    });
  }

  async snapshotAll(): Promise<Array<{ partitions: number; lsn: number }>> {
    // A remote shard snapshots on its own host's schedule and stop.
    if (this.options.remote !== undefined) return this.workers.map(() => ({ partitions: 0, lsn: 0 }));
    return Promise.all(
      this.workers.map((worker) => {
        const n = this.nextN++;
        return new Promise<{ partitions: number; lsn: number }>((resolve) => {
          this.snapshotWaiters.set(n, resolve);
          worker.postMessage({ type: 'snapshot', n } satisfies MainToShard);
        });
      }),
    );
  }

  /** Graceful stop: each shard snapshots its partitions and closes its file. */
  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(
      this.workers.map(
        (worker) =>
          new Promise<void>((resolve) => {
            worker.once('exit', () => resolve());
            worker.postMessage({ type: 'stop' } satisfies MainToShard);
          }),
      ),
    );
  }
}
