// A shard's runtime: owns its partitions' state and SQLite file, and group-commits each tick. Runs on
// its own worker thread (worker.ts), or on the main thread when the process has one CPU (pool.ts).
// Commands that arrive in one event-loop turn are applied in order and their records appended to the
// log as ONE row in one sqlite transaction; the journal fsync runs on the libuv pool while the next
// batch executes, and a batch's replies leave when an fsync begun after its commit ends. The rows the
// records imply (cold entities, idempotency, expiries) are written later, in bulk (derived-rows.ts).
// Invariant: no reply (read or write) leaves before every event it could reflect is on disk.
import path from 'node:path';
import { mintId } from '../ids.ts';
import { ShardStore } from '../store/shard-store.ts';
import { recoverShard } from './recovery.ts';
import { execute } from './dispatch.ts';
import { resumeEffects } from './handlers/resume.ts';
import { setRequeryAfterMs, type Effect, type HandlerContext } from './lifecycle/context.ts';
import type { Command, IndexMessage, MainToShard, ShardToMain, WalletUpdate } from './protocol.ts';
import type { OutboxEvent, PartitionState, StoredReply } from './state.ts';
import { partitionsOf, shardFile } from './layout.ts';
import { ClockTimers } from '../rails/clock-timers.ts';
import { Passivation } from './passivate.ts';
import { DurableGate } from './durable-gate.ts';
import { SHARD_METRICS_INTERVAL_MS, ShardMetrics } from '../metrics/shard-metrics.ts';
import { setConnectors } from '../rails/coverage.ts';
import type { RailCall } from '../rails/rail.ts';
import { callRail, isSimulated, setLiveRails } from '../rails/rails.ts';
import { connectorRail } from '../connectors/client.ts';
import { coverageOf, type ConnectorConfig } from '../connectors/connector-config.ts';
import { publicUrlOf, setPublicUrl, walletJson } from './views.ts';
import { walletOf } from './state.ts';
import { derivedWrites } from './derived-writes.ts';
import { imageRounds } from './image-rounds.ts';
import { answerList } from './list-pages.ts';
import { rebuildListIndex } from './list-rebuild.ts';
import { startSweeps } from './sweeps.ts';
import { crashPoints } from './crash-points.ts';
import { SqliteJournal } from '../journal/journal.ts';
import { openJournal, type ShardClusterData } from '../journal/jetstream-journal.ts';

export interface ShardWorkerData {
  shard: number;
  shards: number;
  dataDir: string;
  railLatencyMs: number;
  batchCommandsMax: number;
  snapshotIntervalMs: number;
  idempotencyRetentionMs: number;
  idempotencySweepMs: number;
  snapshotEveryRecords: number;
  /** WAL records always kept after truncation, for audit and verify (0: keep only what snapshots need). */
  walRetainRecords: number;
  /** Records per WAL segment (truncation drops whole segments). */
  walSegmentRecords: number;
  /** How often unused quotes past expiry leave the heap. */
  quoteSweepMs: number;
  /** How often unpaid sandbox collections past their instructions' expiry fail. */
  collectionSweepMs: number;
  clockOffsets: Array<[owner: string, offsetMs: number]>;
  /** Operator connectors (live rails): their calls run here, as effects after commit. */
  connectors: ConnectorConfig[];
  requeryAfterMs: number;
  /** Test-only fault injection (KOBO_TEST_CRASH_AT): '' in production. */
  crashAt: string;
  /** Set when this node owns the shard in a cluster: rows are also replicated through JetStream. */
  cluster?: ShardClusterData;
}

interface Queued {
  n: number;
  cmd: Command;
}


/** What links a shard runtime to the front end: a worker's parent port, or direct calls on one thread. */
export interface ShardPort {
  post(message: ShardToMain): void;
  onMessage(handler: (message: ShardInbound) => void): void;
  /** The runtime has stopped (closed its file): a worker exits; an inline shard tells its pool. */
  exit(): void;
}

export type ShardInbound = MainToShard | { type: 'clock'; owner: string; offsetMs: number } | { type: 'public-url'; url: string };

/** Starts a shard: recovers its partitions from the file, then serves commands from `port` until `stop`. */
export function runShard(data: ShardWorkerData, port: ShardPort): void {
  const post = (message: ShardToMain): void => port.post(message);
  const timers: Array<ReturnType<typeof setInterval>> = [];

  const store = new ShardStore(path.join(data.dataDir, shardFile(data.shard)), { deferredSync: true, walSegmentRecords: data.walSegmentRecords });
  const partitions = partitionsOf(data.shard, data.shards);
  const recovered = recoverShard(store, { partitions });
  const passivation = new Passivation();
  const states: Map<number, PartitionState> = recovered.states;
  // A file from before lists (or restored from a backup) gets its resources' index rows once.
  rebuildListIndex(store, states);
  // The front end starts with no wallet views: what replay changed is not news to it.
  for (const state of states.values()) state.walletsChanged.clear();
  const clockOffsets = new Map<string, number>(data.clockOffsets);
  /** Requeries and other follow-ups due at an instant of the owner's clock (advanced by the sandbox helper). */
  const clockTimers = new ClockTimers((owner) => clockOffsets.get(owner) ?? 0);
  setConnectors(data.connectors.map(coverageOf));
  setRequeryAfterMs(data.requeryAfterMs);
  setLiveRails(data.connectors.map((c) => connectorRail(c, publicUrlOf, (sample) => metrics.connectorCall(sample))));
  const queue: Queued[] = [];
  let flushScheduled = false;
  /** Commands taken off the queue so far (an `index` question waits for those sent before it). */
  let dequeued = 0;
  let stopping = false;
  /** Set once the file is closed: a late timer or rail answer of an inline shard then changes nothing. */
  let closed = false;
  const metrics = new ShardMetrics(data.shard);
  const crashAt = crashPoints(data.crashAt);

  function contextFor(cmd: Command): HandlerContext {
    const state = states.get(cmd.partition);
    if (state === undefined) throw new Error(`shard ${data.shard}: partition ${cmd.partition} is not mine`);
    return { state, nowMs: cmd.nowMs, mintId: () => mintId(cmd.partition, cmd.nowMs), railLatencyMs: data.railLatencyMs };
  }

  /**
   * The payer on the hosted checkout page carries no key, so the front end cannot know whose sandbox
   * clock the request runs on: the payment's owner's clock is applied here, as it is to rail answers,
   * so the payment's history and its event never go back in time.
   */
  function onOwnersClock(cmd: Command): Command {
    if (cmd.k !== 'payment.checkout') return cmd;
    const owner = states.get(cmd.partition)?.payments.get(cmd.id)?.owner;
    return owner === undefined ? cmd : Object.assign({}, cmd, { nowMs: Math.max(cmd.nowMs, clockTimers.nowOf(owner)) });
  }

  function runEffect(effect: Effect): void {
    if (effect.replyTo !== undefined || !states.has(effect.cmd.partition)) {
      // Another partition's work goes through the front end, which owns the routing (and the reply).
      post({ type: 'forward', cmd: effect.cmd, ...(effect.replyTo === undefined ? {} : { replyTo: effect.replyTo }) });
      return;
    }
    // A connector is called here; the sandbox rail (pure) answers inside the shard when its answer is due.
    if (effect.call !== undefined && !isSimulated(effect.call.rail)) {
      runRailCall(effect, effect.call);
      return;
    }
    if (effect.dueAtMs !== undefined) {
      const owner = effect.cmd.owner;
      clockTimers.schedule(owner, effect.dueAtMs, () => enqueue({ n: -1, cmd: Object.assign({}, effect.cmd, { nowMs: Math.max(effect.cmd.nowMs, clockTimers.nowOf(owner)) }) }));
      return;
    }
    setTimeout(() => {
      // A rail answers on the account's sandbox clock as it is when the answer arrives.
      const nowMs = Math.max(effect.cmd.nowMs, Date.now() + (clockOffsets.get(effect.cmd.owner) ?? 0));
      enqueue({ n: -1, cmd: Object.assign({}, effect.cmd, { nowMs }) });
    }, effect.afterMs).unref();
  }

  /**
   * Commands that only read. A batch runs them first, before any of its writes, so what they see is
   * exactly the committed state, and their replies need only the earlier batches' fsync.
   */
  const READ_KINDS = new Set<Command['k']>(['customer.get', 'wallet.get', 'txn.get', 'payment.get', 'payment.methods', 'transfer.get', 'beneficiary.get', 'order.get', 'customer.secret', 'wallet.resolve']);
  /** A connector call: made when due (wall time or the owner's clock), its answer enqueued as a command. */
  function runRailCall(effect: Effect, call: RailCall): void {
    const cmd = effect.cmd;
    if (cmd.k !== 'rail.answer') throw new Error(`shard ${data.shard}: a rail call must answer with rail.answer, not ${cmd.k}`);
    const start = (): void => {
      const answered = Promise.resolve(callRail(call, Math.max(cmd.nowMs, clockTimers.nowOf(cmd.owner))));
      void answered.then((answer) => enqueue({ n: -1, cmd: Object.assign({}, cmd, { answer, nowMs: Math.max(cmd.nowMs, clockTimers.nowOf(cmd.owner)) }) }));
    };
    if (effect.dueAtMs !== undefined) clockTimers.schedule(cmd.owner, effect.dueAtMs, start);
    else setTimeout(start, effect.afterMs).unref();
  }

  /** What a batch sends once the commits it depends on are durable. */
  interface Outputs {
    replies: Array<{ n: number; reply: StoredReply }>;
    outbox: OutboxEvent[];
    freed: Array<[number, number]>;
    effects: Effect[];
    /** Views of the wallets the batch changed: they travel with (and are taken before) its replies. */
    wallets?: WalletUpdate[];
    /** The last LSN of the batch's records: once released, the log holds them durably. */
    lsn?: number;
    done?: () => void;
  }

  function release(outputs: Outputs): void {
    const wallets = outputs.wallets ?? [];
    if (outputs.lsn !== undefined) derived.logDurable(outputs.lsn);
    if (outputs.replies.length > 0) crashAt('log.synced');
    if (outputs.replies.length > 0 || wallets.length > 0) post({ type: 'replies', items: outputs.replies, wallets });
    if (outputs.replies.length > 0) crashAt('replies.sent');
    if (outputs.outbox.length > 0) post({ type: 'outbox', events: outputs.outbox });
    if (outputs.freed.length > 0) post({ type: 'idem.expired', pairs: outputs.freed });
    for (const effect of outputs.effects) runEffect(effect);
    outputs.done?.();
  }

  /** Pipelined group commit: outputs leave once an fsync begun after their commit has finished. */
  const journal = openJournal(new SqliteJournal(store), data.shard, data.cluster);
  const gate = new DurableGate<Outputs>((done) => journal.sync(done), release, (seconds) => metrics.sync(seconds));

  /**
   * Once the log holds the records up to `lsn` durably, their derived rows go into the derived file, which
   * commits and fsyncs; a failed fsync stops the shard like any failed write.
   */
  async function derivedDurable(lsn: number): Promise<void> {
    await allDurable();
    derived.write(Number.POSITIVE_INFINITY, lsn);
    await derived.durable();
  }

  /** Resolves once every commit made so far is durable (snapshots answer only then). */
  function allDurable(): Promise<void> {
    return new Promise((resolve) => gate.afterCommits({ replies: [], outbox: [], freed: [], effects: [], done: resolve }));
  }

  function flush(): void {
    flushScheduled = false;
    if (closed) return;
    const taken = queue.splice(0, data.batchCommandsMax);
    dequeued += taken.length;
    const batch = [...taken.filter((item) => READ_KINDS.has(item.cmd.k)), ...taken.filter((item) => !READ_KINDS.has(item.cmd.k))];
    const records: Array<{ partition: number; body: string }> = [];
    const replies: Array<{ n: number; reply: StoredReply }> = [];
    const early: Array<{ n: number; reply: StoredReply }> = [];
    const effects: Effect[] = [];
    const outbox: OutboxEvent[] = [];
    const lsnBase = store.lsnNext;
    for (const item of batch) {
      const cmd = onOwnersClock(item.cmd);
      const ctx = contextFor(cmd);
      const executed = execute(ctx, cmd);
      // Until this batch has recorded anything, state is what the earlier commits made: a read's reply
      // may leave as soon as they are durable. (A "read" that changed something waits for this commit.)
      if (records.length === 0 && READ_KINDS.has(item.cmd.k) && executed.events.length === 0 && executed.effects.length === 0) {
        if (item.n >= 0) early.push({ n: item.n, reply: executed.reply });
        continue;
      }
      if (executed.events.length > 0) {
        const lsn = lsnBase + records.length;
        records.push({ partition: item.cmd.partition, body: JSON.stringify(executed.events) });
        passivation.note(ctx.state, lsn, { replies: executed.stored === true, entities: true });
      } else if (ctx.state.due.pending) {
        // A sweep that only dropped stale expiry rows: they are written with this batch.
        passivation.note(ctx.state, lsnBase + records.length - 1);
      }
      for (const event of executed.events) if (event.t === 'outbox.added') outbox.push(event.event);
      metrics.reconciliations(executed.events);
      // A stored idempotency record's row is its record's LSN; the front end's index keeps it.
      if (executed.stored === true) executed.reply.seq = lsnBase + records.length - 1;
      if (item.n >= 0) replies.push({ n: item.n, reply: executed.reply });
      else metrics.rail(item.cmd, executed.reply);
      effects.push(...executed.effects);
    }
    if (early.length > 0) gate.afterCommits({ replies: early, outbox: [], freed: [], effects: [] });
    // The one durable step of the tick: the batch's log row, in one sqlite transaction, made durable by
    // the next journal fsync. If it throws (disk full, I/O error) the worker dies before any reply is
    // sent, and the front end answers 5xx; a restart replays what reached disk. What the records finished
    // leaves the heap now and waits, readable, for writeDerived.
    const commitStarted = performance.now();
    const extras = passivation.take();
    store.appendBatch(records, extras);
    if (records.length > 0) {
      crashAt('log.appended');
      gate.committedOne();
    }
    derived.afterBatch();
    metrics.commit(batch.length, records.length, (performance.now() - commitStarted) / 1000);
    passivation.settle();
    gate.afterCommits({ replies, outbox, freed: [], effects, wallets: changedWallets(records), ...(records.length > 0 ? { lsn: store.lsnNext - 1 } : {}) });
    if (queue.length > 0) scheduleFlush();
    images.noteRecords(records);
  }

  /** The views of the wallets this batch's records changed, as they stand after the batch. */
  function changedWallets(records: ReadonlyArray<{ partition: number }>): WalletUpdate[] {
    const updates: WalletUpdate[] = [];
    let previous = -1;
    for (const record of records) {
      if (record.partition === previous) continue;
      previous = record.partition;
      const state = states.get(record.partition)!;
      if (state.walletsChanged.size === 0) continue;
      for (const id of state.walletsChanged) {
        const wallet = walletOf(state, id);
        if (wallet !== undefined) updates.push({ id, owner: wallet.owner, customerId: wallet.customerId, json: `{"data":${walletJson(wallet)}}` });
      }
      state.walletsChanged = new Set();
    }
    return updates;
  }

  // The log's journal checkpoints off this loop, as the derived file's do (store/log-checkpoints.ts).
  store.checkpointLogInWorker();
  /** Writes waiting derived rows into the derived file; the keys expiry freed go out once their deletion is durable there. */
  const derived = derivedWrites({
    store,
    isClosed: () => closed,
    wrote: () => crashAt('derived.written'),
    freed: (pairs) => gate.afterCommits({ replies: [], outbox: [], freed: pairs, effects: [] }),
  });
  const writeDerived = (rowsMax?: number): number => derived.write(rowsMax);

  function scheduleFlush(): void {
    if (flushScheduled) return;
    flushScheduled = true;
    setImmediate(flush);
  }

  function enqueue(item: Queued): void {
    if (closed) return;
    queue.push(item);
    scheduleFlush();
  }

  const images = imageRounds({
    store,
    partitions,
    states,
    recordsAtStart: recovered.replayed,
    everyRecords: data.snapshotEveryRecords,
    retainRecords: data.walRetainRecords,
    isClosed: () => closed,
    writeDerived: (rowsMax) => writeDerived(rowsMax),
    derivedDurable,
    allDurable,
    committed: (step) => {
      crashAt(step);
      gate.committedOne();
    },
    took: (seconds) => metrics.snapshot(seconds),
  });
  const snapshotAll = images.run;

  /** The front's indexes, then the events the dispatcher has not acknowledged (it dedupes by id). */
  function reportIndex(): void {
    post(indexMessage());
    const pendingOutbox = [...states.values()].flatMap((state) => [...state.outbox.values()]);
    if (pendingOutbox.length > 0) post({ type: 'outbox', events: pendingOutbox });
  }

  function indexMessage(): IndexMessage {
    const customers: IndexMessage['customers'] = [];
    for (const state of states.values()) {
      for (const c of state.customers.values()) customers.push([c.owner, c.email, c.phone, c.id]);
    }
    return {
      type: 'ready',
      shard: data.shard,
      customers,
      idempotencyScopes: store.idemLocations(),
      recovered: { replayed: recovered.replayed, cut: recovered.cut, lastLsn: recovered.lastLsn },
    };
  }

  port.onMessage((message) => {
    switch (message.type) {
      case 'ping':
        post({ type: 'pong', n: message.n });
        return;
      case 'public-url':
        setPublicUrl(message.url);
        return;
      case 'commands':
        for (const item of message.items) queue.push(item);
        scheduleFlush();
        return;
      case 'list': {
        // Read between batches (what earlier commits made), answered once those commits are durable.
        if (closed) {
          post({ type: 'list.page', n: message.n, rows: [], error: { status: 503, code: 'UNAVAILABLE', message: 'The shard is stopping.' } });
          return;
        }
        const answer = answerList(message.query, { store, states, read: (cmd) => execute(contextFor(cmd), cmd).reply });
        gate.afterCommits({ replies: [], outbox: [], freed: [], effects: [], done: () => post({ type: 'list.page', n: message.n, ...answer }) });
        return;
      }
      case 'clock':
        clockOffsets.set(message.owner, message.offsetMs);
        clockTimers.clockMoved(message.owner);
        return;
      case 'snapshot':
        void snapshotAll().then((r) => post({ type: 'snapshot.done', n: message.n, partitions: r.partitions, lsn: r.lsn }));
        return;
      case 'index': {
        // A front that links (a new one, or after a move) must learn every record this shard may have
        // answered: everything sent before the question is executed, made durable and its rows written first.
        const target = dequeued + queue.length;
        const whenDone = (): void => {
          if (closed) return;
          if (dequeued < target) {
            setImmediate(whenDone);
            return;
          }
          // The index is read from the derived file: every row written, and expiry's deletions durable there.
          void allDurable().then(() => {
            if (closed) return Promise.resolve();
            writeDerived();
            return derived.durable().then(() => {
              if (!closed) reportIndex();
            });
          });
        };
        whenDone();
        return;
      }
      case 'stop':
        if (stopping) return;
        stopping = true;
        void snapshotAll().then(allDurable).then(() => {
          writeDerived();
          return derived.durable();
        }).then(() => {
          for (const timer of timers) clearInterval(timer);
          closed = true;
          void journal.close();
          store.close();
          port.exit();
        });
        return;
    }
  });

  for (const state of states.values()) for (const effect of resumeEffects(state, data.railLatencyMs)) runEffect(effect);
  reportIndex();
  if (data.snapshotIntervalMs > 0) timers.push(setInterval(() => void snapshotAll(), data.snapshotIntervalMs).unref());
  timers.push(setInterval(() => post(metrics.take(queue.length)), SHARD_METRICS_INTERVAL_MS).unref());

  timers.push(...startSweeps({ data, partitions, states, clockOffsets, store, enqueue: (cmd) => enqueue({ n: -1, cmd }), writeDerived: () => writeDerived(), isClosed: () => closed }));
}
