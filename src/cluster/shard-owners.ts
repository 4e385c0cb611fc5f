// Per-shard ownership on one node (KOBO_CLUSTER_OWNERSHIP=shard): a lease per shard (`shard.<n>` in
// kobo-leases), claimed while this node holds fewer than its fair share (⌈shards ÷ live nodes⌉) and
// handed back (after a drain) above it; each held shard is fenced, caught up, and served by a shard
// host process (shard-host.ts). Main thread of the node supervisor (node.ts).
// Invariant: a shard host acknowledges nothing past the deadline of its shard's lease (it reads it from
// shared memory the renewals update); a lost lease kills the host before anything else is answered.
import { spawn, type ChildProcess } from 'node:child_process';
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import type { ClusterConfig } from './cluster-config.ts';
import { LeaseKeeper, type OwnerValue } from './lease-keeper.ts';
import { msgIdOf, streamOf, subjectOf } from './streams.ts';
import { fence } from './fencing.ts';
import { OWNER_ENV, type LeaseMessage, type TailsAnswer, type TailsQuestion } from './owner-child.ts';
import type { ShardRoute } from './shard-link.ts';
import { SHARD_HOST_ENV } from './shard-host.ts';

/** How long a shard host may take to recover its shard and listen. */
const HOST_START_MS_MAX = 60_000;
/** How long a server or shard host may take to tell its tails. */
const TAILS_TIMEOUT_MS = 1_000;
let tailsAsked = 0;

/** A server's or shard host's verified and shipped tail of every stream (shards, then kobo-control). */
export function askTails(child: ChildProcess): Promise<TailsAnswer> {
  const id = ++tailsAsked;
  return new Promise<TailsAnswer>((resolve, reject) => {
    const onMessage = (message: TailsAnswer): void => {
      if (message.type !== 'tails' || message.id !== id) return;
      clearTimeout(timer);
      child.off('message', onMessage);
      resolve(message);
    };
    const timer = setTimeout(() => {
      child.off('message', onMessage);
      reject(new Error('the process did not tell its tails in time'));
    }, TAILS_TIMEOUT_MS);
    child.on('message', onMessage);
    child.send({ type: 'tails', id } satisfies TailsQuestion);
  });
}
/** A node status report (written every second) older than this counts the node as gone. */
const LIVE_REPORT_AGE_MS_MAX = 3_000;
/** After the bucket failed a node, a free key keeps its last holder's route at least this long. */
const ROUTE_GRACE_MS = 2_000;
/** A node starts claiming shards only once it has read the other nodes' reports for this long. */
const SETTLE_MS = 1_500;

export function shardKeyOf(shard: number): string {
  return `shard.${shard}`;
}

/** The fair share of shards for one node: ⌈shards ÷ live nodes⌉. */
export function fairShare(shards: number, liveNodes: number): number {
  return Math.ceil(shards / Math.max(1, liveNodes));
}

interface Held {
  lease: LeaseKeeper;
  epoch: number;
  host: ChildProcess | null;
  /** The host's link listener (host:port), once it listens. */
  link: string | null;
  /** Being handed back (drained first): no renewal is given up, no claim counts it. */
  leaving: boolean;
}

export interface ShardOwnersDeps {
  kv: KV;
  js: JetStreamClient;
  jsm: JetStreamManager;
  cluster: ClusterConfig;
  shards: number;
  leaseMs: number;
  holdMs: number;
  log: (message: string) => void;
  /** Takes this node's follower of a shard off duty: catches it up to `fence` and closes it. */
  stopFollowing: (shard: number, fence: number) => Promise<void>;
  /** This node follows the shard again (it lost or handed back its lease). */
  follow: (shard: number) => Promise<void>;
  /** Where a shard is served changed (the front, if this node holds it, learns the routes). */
  changed: () => void;
}

export class ShardOwners {
  private readonly held = new Map<number, Held>();
  /** Per shard, the holder read from the bucket at the last poll (null: free or unknown). */
  readonly owners: Array<OwnerValue | null>;
  private live = 1;
  /** The other nodes whose report is fresh. */
  private liveOthers: string[] = [];
  /** Per shard, the first stream sequence some live node's follower has yet to apply (absent: none follows it). */
  private followersNeed = new Map<number, number>();
  /** Per shard, since when this node has read it free (null: held at the last read). */
  private readonly freeSinceMs: Array<number | null>;
  /**
   * Per shard, the holder the front keeps linking to while its key reads free: a key that lapsed during
   * the bucket's election comes back (its holder holds requests meanwhile), so the route is dropped only
   * once the key has been free for a whole TTL with the bucket answering (as the node-wide owner is).
   */
  private readonly routeOwners: Array<OwnerValue | null>;
  private bucketFailedAtMs = -Infinity;
  private liveReadAtMs = 0;
  private readonly startedAtMs = Date.now();
  private stopping = false;

  constructor(private readonly deps: ShardOwnersDeps) {
    this.owners = Array.from({ length: deps.shards }, () => null);
    this.freeSinceMs = Array.from({ length: deps.shards }, () => null);
    this.routeOwners = Array.from({ length: deps.shards }, () => null);
  }

  /** The shards this node holds a lease of. */
  heldShards(): number[] {
    return [...this.held.keys()].sort((a, b) => a - b);
  }

  /** The held shards whose host serves (linked, not being handed back), with their epochs. */
  serving(): Array<{ shard: number; epoch: number }> {
    return [...this.held].filter(([, h]) => h.host !== null && h.link !== null && !h.leaving && h.lease.revision > 0).map(([shard, h]) => ({ shard, epoch: h.epoch }));
  }

  /** The first sequence of `shard`'s stream a live follower still needs (Infinity: no live node follows it). */
  followersNeedOf(shard: number): number {
    return this.followersNeed.get(shard) ?? Infinity;
  }

  /** Where each shard is served now, as the front links to it. */
  routes(): ShardRoute[] {
    return this.owners.map((owner, shard) => {
      const mine = this.held.get(shard);
      const link = mine !== undefined ? (mine.host === null ? null : mine.link) : ((owner ?? this.routeOwners[shard])?.link ?? null);
      if (link === null) return null;
      const at = link.lastIndexOf(':');
      return { host: link.slice(0, at), port: Number(link.slice(at + 1)) };
    });
  }

  /** Counts the nodes whose status report is fresh (each node writes `node.<name>` every second). */
  async readLive(): Promise<void> {
    const names: string[] = [];
    const keys = await this.deps.kv.keys('node.>').catch(() => null);
    if (keys === null) return;
    for await (const key of keys) names.push(key);
    const others: string[] = [];
    const need = new Map<number, number>();
    for (const name of names) {
      const entry = await this.deps.kv.get(name).catch(() => null);
      if (entry === null || entry.operation !== 'PUT') continue;
      const report = entry.json() as { atMs?: number; node?: string; followed?: number[]; positions?: number[] };
      if (Date.now() - (report.atMs ?? 0) < LIVE_REPORT_AGE_MS_MAX && report.node !== undefined && report.node !== this.deps.cluster.node) {
        others.push(report.node);
        (report.followed ?? []).forEach((shard, i) => need.set(shard, Math.min(need.get(shard) ?? Infinity, (report.positions?.[i] ?? 0) + 1)));
      }
    }
    this.liveOthers = others;
    this.followersNeed = need;
    this.live = others.length + 1;
    this.liveReadAtMs = Date.now();
  }

  /**
   * One round: renews every held lease, reads every shard's holder, claims a free shard while below the
   * fair share, hands one back while above it. `mayClaim` false: the bucket failed lately (a lapsed
   * owner goes first) or the node is stopping. `bucketFailedAtMs`: when the bucket last failed this node.
   */
  async poll(mayClaim: boolean, bucketFailedAtMs = -Infinity): Promise<void> {
    this.bucketFailedAtMs = bucketFailedAtMs;
    for (const [shard, held] of this.held) await this.renew(shard, held);
    const before = JSON.stringify(this.routes());
    for (let shard = 0; shard < this.deps.shards; shard += 1) {
      const entry = await this.deps.kv.get(shardKeyOf(shard)).catch(() => undefined);
      if (entry === undefined) return; // the bucket is not answering: nothing is claimed on a guess
      this.owners[shard] = entry !== null && entry.operation === 'PUT' ? (entry.json() as OwnerValue) : null;
      if (this.owners[shard] !== null || this.held.has(shard)) this.freeSinceMs[shard] = null;
      else this.freeSinceMs[shard] ??= Date.now();
      const freeLong = Date.now() - (this.freeSinceMs[shard] ?? Infinity) >= this.deps.leaseMs && Date.now() - this.bucketFailedAtMs >= ROUTE_GRACE_MS;
      if (this.owners[shard] !== null) this.routeOwners[shard] = this.owners[shard] ?? null;
      else if (this.held.has(shard) || freeLong) this.routeOwners[shard] = null;
    }
    if (JSON.stringify(this.routes()) !== before) this.deps.changed();
    const fair = fairShare(this.deps.shards, this.live);
    const settled = this.liveReadAtMs > 0 && Date.now() - this.startedAtMs >= SETTLE_MS;
    if (!mayClaim || this.stopping || !settled) return;
    const counted = [...this.held.values()].filter((h) => !h.leaving).length;
    // A shard free for half a TTL that no node below its share took (a dead node still counted live,
    // its report not yet stale) is taken by a node at its share too: it must not wait for the report.
    const longFree = (shard: number): boolean => Date.now() - (this.freeSinceMs[shard] ?? Infinity) >= this.deps.leaseMs / 2;
    const free = this.owners.findIndex((owner, shard) => owner === null && !this.held.has(shard) && (counted < fair || (counted <= fair && longFree(shard))));
    if (free >= 0) {
      await this.claim(free);
    } else if (counted > fair && this.someoneBelow(fair) && [...this.held.values()].every((h) => h.link !== null && h.host !== null && !h.leaving)) {
      // Above the fair share while a live node is below it (it came back, or joined): drain one shard
      // and give it back; that node takes it.
      const extra = Math.max(...this.held.keys());
      this.deps.log(`cluster: ${this.deps.cluster.node} holds ${counted} shard(s), more than its share of ${fair}: handing shard ${extra} back`);
      this.release(extra);
    }
  }

  /** A live node other than this one holds fewer shards than the fair share. */
  private someoneBelow(fair: number): boolean {
    return this.liveOthers.some((node) => this.owners.filter((owner) => owner?.node === node).length < fair);
  }

  private async claim(shard: number): Promise<void> {
    const { cluster, leaseMs, shards, log, kv, jsm } = this.deps;
    const lease = new LeaseKeeper(kv, jsm, { node: cluster.node, url: cluster.advertiseUrl, leaseMs, shards, log, key: shardKeyOf(shard), streams: [{ name: streamOf(shard), slot: shard }] });
    if ((await lease.claim()) !== 'claimed') return;
    const held: Held = { lease, epoch: lease.revision, host: null, link: null, leaving: false };
    this.held.set(shard, held);
    // Not awaited: the polls go on renewing while the copy catches up and the host recovers.
    void this.takeOver(shard, held);
  }

  private async takeOver(shard: number, held: Held): Promise<void> {
    const { js, jsm, log, cluster } = this.deps;
    try {
      const marker = await fence(js, jsm, streamOf(shard), subjectOf(shard), msgIdOf(shard, held.epoch, 0), held.epoch);
      await this.deps.stopFollowing(shard, marker);
      if (held.lease.revision === 0 || this.held.get(shard) !== held) throw new Error('the lease was lost during the takeover');
      await this.startHost(shard, held, marker);
      log(`cluster: ${cluster.node} owns shard ${shard} (epoch ${held.epoch}, fence ${marker}, link ${held.link})`);
      // The new route is written with the next renewal; this one does it now.
      await this.renew(shard, held);
      this.deps.changed();
    } catch (error) {
      log(`cluster: ${cluster.node} could not take over shard ${shard}: ${(error as Error).message}`);
      const host = held.host;
      if (host !== null && host.exitCode === null && host.signalCode === null) {
        const exited = new Promise((resolve) => host.once('exit', resolve));
        host.kill('SIGKILL');
        await exited;
      }
      held.host = null;
      await this.letGo(shard, held, true);
    }
  }

  private async startHost(shard: number, held: Held, marker: number): Promise<void> {
    const { cluster, holdMs, shards } = this.deps;
    const env = { ...process.env, [OWNER_ENV.role]: 'shard-host', [SHARD_HOST_ENV.shard]: String(shard), [SHARD_HOST_ENV.host]: cluster.internalHost, [OWNER_ENV.epoch]: String(held.epoch), [OWNER_ENV.fences]: String(marker), [OWNER_ENV.leaseUntil]: String(held.lease.untilMs), [OWNER_ENV.holdMs]: String(holdMs), KOBO_SHARDS: String(shards) };
    const started = spawn(process.execPath, [...process.execArgv, process.argv[1]!], { env, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
    held.host = started;
    let output = '';
    held.link = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the shard host did not listen in ${HOST_START_MS_MAX} ms`)), HOST_START_MS_MAX);
      started.stdout!.on('data', (chunk: Buffer) => {
        process.stdout.write(chunk);
        output += chunk.toString();
        const match = /shard host \d+ listening on (\S+)/.exec(output);
        if (match !== null) {
          clearTimeout(timer);
          resolve(match[1]!);
        }
      });
      started.stderr!.on('data', (chunk: Buffer) => process.stderr.write(chunk));
      started.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`the shard host exited with ${code} before listening`));
      });
    });
    held.lease.value.link = held.link;
    started.once('exit', (code, signal) => {
      if (held.host === started) held.host = null;
      this.deps.log(`cluster: ${cluster.node}'s host of shard ${shard} exited (${signal ?? code})`);
      void this.letGo(shard, held, held.leaving || this.stopping);
    });
  }

  /** The host is gone: the lease is forgotten (or handed back on a planned stop) and the copy follows again. */
  private async letGo(shard: number, held: Held, handBack: boolean): Promise<void> {
    if (this.held.get(shard) === held) {
      this.held.delete(shard);
      if (handBack) await held.lease.handBack();
      else held.lease.forget();
      this.deps.changed();
    }
    // Also after a lease lost mid-takeover (its follower was already taken off duty); `follow` is idempotent.
    if (!this.stopping && !this.held.has(shard)) await this.deps.follow(shard).catch((error: unknown) => this.deps.log(`cluster: ${this.deps.cluster.node} could not follow shard ${shard} again: ${(error as Error).message}`));
  }

  /** Drains a shard's host (SIGTERM: it snapshots and closes), then hands its lease back. */
  private release(shard: number): void {
    const held = this.held.get(shard);
    if (held === undefined) return;
    held.leaving = true;
    if (held.host === null) void this.letGo(shard, held, true);
    else held.host.kill('SIGTERM');
  }

  private async renew(shard: number, held: Held): Promise<void> {
    if (held.lease.revision === 0) return;
    const host = held.host;
    const renewal = await held.lease.renew(host === null ? null : () => askTails(host));
    if (renewal.kind === 'renewed') {
      if (host !== null && host.connected) host.send({ type: 'lease', untilMs: held.lease.untilMs } satisfies LeaseMessage);
    } else if (renewal.kind === 'lost') {
      this.deps.log(`cluster: ${this.deps.cluster.node} lost shard ${shard}: ${renewal.why}`);
      await held.lease.handBack();
      if (host !== null) host.kill('SIGKILL');
      else if (this.held.get(shard) === held) this.held.delete(shard);
    } else if (Date.now() >= held.lease.untilMs + (host === null ? 0 : this.deps.holdMs)) {
      this.deps.log(`cluster: ${this.deps.cluster.node} stops serving shard ${shard}: its lease could not be renewed in time`);
      host?.kill('SIGKILL');
    }
  }

  /** A planned stop: every host drains (SIGTERM), then its lease is handed back. */
  async stop(): Promise<void> {
    this.stopping = true;
    const exits: Array<Promise<unknown>> = [];
    for (const [shard, held] of this.held) {
      held.leaving = true;
      if (held.host === null) {
        await this.letGo(shard, held, true);
        continue;
      }
      const host = held.host;
      exits.push(new Promise((resolve) => host.once('exit', resolve)));
      host.kill('SIGTERM');
    }
    await Promise.all(exits);
    // letGo (on each exit) hands the leases back; give it a turn.
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
