// A cluster node: the supervisor `npm start` runs when KOBO_CLUSTER_NATS is set. It holds or watches the
// owner lease (JetStream KV), follows the streams into its data dir, and once it owns fences, catches up
// and starts the kobo server (owner-child.ts); with per-shard ownership that server is the front only and
// the shards' own leases and hosts are shard-owners.ts's. Main thread.
// Invariant: the server it starts acknowledges nothing past the lease deadline this node last renewed;
// while that lease has lapsed but may come back (its bucket electing a leader), requests wait, bounded.
import { spawn, type ChildProcess } from 'node:child_process';
import { jetstream } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import type { Config } from '../config.ts';
import type { ClusterConfig } from './cluster-config.ts';
import { ensureLayout } from '../shard/layout.ts';
import { ShardFollower } from './follower.ts';
import { ControlFollower } from './control-follower.ts';
import { ensureControlStream } from './control-log.ts';
import { ClusterImages, koboInChild } from './images.ts';
import { continuableFollower as restoredIfBehind, imageServedShards, ShardImages } from './shard-images.ts';
import { ShardCopies } from './shard-copies.ts';
import { startFronts, type Fronts, type Route } from './proxy.ts';
import { connectJetStream, patiently, CONTROL_EPOCH_SUBJECT, CONTROL_STREAM, controlMsgIdOf, LEASE_BUCKET, msgIdOf, OWNER_KEY, streamOf, subjectOf } from './streams.ts';
import { ensureStreams, fence } from './fencing.ts';
import { OWNER_ENV, type LeaseMessage, type RoutesMessage, type TailsAnswer } from './owner-child.ts';
import { askTails, ShardOwners } from './shard-owners.ts';
import { LeaseKeeper, type OwnerValue, type Renewal } from './lease-keeper.ts';
import { writeClusterNodeFile } from '../cli/cluster-writes.ts';

/** How often a node looks at the lease (a follower: to learn the owner, or claim a lapsed lease). */
const LEASE_POLL_MS = 250;
/** How long the started server may take to recover and listen. */
const CHILD_START_MS_MAX = 60_000;
/** The least time requests wait past a lapsed lease's deadline for the owner to re-establish it (else 2 × the TTL). */
const HOLD_MS_MIN = 10_000;
/**
 * After the lease bucket failed to answer a follower (its leader lost), the follower leaves a free lease
 * to the owner this long, so that an owner that outlived its key's TTL re-creates it first.
 */
const CLAIM_GRACE_MS = 2_000;
/** A status report the bucket has not answered in this long counts as the bucket failing. */
const BUCKET_SLOW_MS = 1_000;

export type { OwnerValue };

type Role = 'follower' | 'taking-over' | 'owner';

export interface ClusterNode {
  publicPort: number;
  stop: () => Promise<void>;
}

export async function runClusterNode(config: Readonly<Config>, cluster: ClusterConfig, log: (message: string) => void): Promise<ClusterNode> {
  const shards = ensureLayout(config.dataDir, config.shards).shards;
  // The kobo CLI on this machine finds the cluster here (its writes must go through the owner).
  writeClusterNodeFile(config.dataDir, { servers: cluster.servers, node: cluster.node });
  const { nc, jsm } = await connectJetStream(cluster.servers, `kobo-node-${cluster.node}`);
  const js = jetstream(nc);
  await ensureStreams(jsm, shards, cluster.replicas);
  await ensureControlStream(jsm, cluster.replicas);
  const kv = await patiently(() => new Kvm(nc).create(LEASE_BUCKET, { replicas: cluster.replicas, ttl: cluster.leaseSeconds * 1_000, history: 1 }));
  const leaseMs = cluster.leaseSeconds * 1_000;
  const holdMs = Math.max(2 * leaseMs, HOLD_MS_MIN);
  const images = await patiently(() => ClusterImages.open(nc, jsm, { dataDir: config.dataDir, shards, replicas: cluster.replicas }));
  const perShard = cluster.ownership === 'shard';
  const shardImages = new ShardImages(images.objects, jsm, config.dataDir);
  // Per-shard ownership: the `owner` key makes this node the front (the server every request goes to,
  // the writer of kobo-control); each shard has a lease of its own (shard-owners.ts).
  const lease = new LeaseKeeper(kv, jsm, { node: cluster.node, url: cluster.advertiseUrl, leaseMs, shards, log, ...(perShard ? { streams: [{ name: CONTROL_STREAM, slot: shards }] } : {}) });

  let role: Role = 'follower';
  /** The revision this node's server was started under: part of its msg ids (a re-created lease keeps it). */
  let epoch = 0;
  let owner: OwnerValue | null = null;
  /** When the lease bucket last failed to answer this node (see CLAIM_GRACE_MS). */
  let bucketFailedAtMs = -Infinity;
  /** Since when this node's reads have found the lease free (null: it was held at the last read). */
  let freeSinceMs: number | null = null;
  let child: ChildProcess | null = null;
  let childPort = 0;
  let stopped = false;
  /** A stop is under way: no claim, no new follower; renewals go on until the server has exited. */
  let stopping = false;
  let followers: ShardFollower[] = [];
  let controlFollower: ControlFollower | null = null;
  /** A follower imaging its own copy (its shard followers pause meanwhile); a takeover ends it first. */
  let copyImaging: { child: ChildProcess; done: Promise<string> } | null = null;
  let imagedAt = '';
  const endCopyImaging = async (): Promise<void> => {
    const running = copyImaging;
    if (running === null) return;
    running.child.kill('SIGKILL');
    await running.done.catch(() => {});
  };
  /** Pauses the shard followers, recovers and images the copy in a process of its own, follows again. */
  const imageCopy = async (): Promise<void> => {
    const current = followers;
    const positions = current.map((f) => `${f.shard}:${f.position}`).join(',');
    // Per-shard ownership: only the followed shards (this node's hosts write the others), whatever the front's role.
    if ((!perShard && role !== 'follower') || current.length === 0 || stopping || positions === imagedAt) return;
    // They let go of their files: image-copy archives segments their open stores would still list.
    for (const follower of current) await follower.pause();
    const startedAt = Date.now();
    // A per-shard takeover began while they paused: it has one of these files now; the others follow again.
    copyImaging = copies.busy > 0 ? null : koboInChild(config.dataDir, ['cluster', 'image-copy', ...(perShard ? ['--shards', current.map((f) => f.shard).join(',')] : [])]);
    try {
      if (copyImaging === null) throw new Error('a shard is being taken over');
      const out = await copyImaging.done;
      imagedAt = positions;
      log(`cluster: ${cluster.node} imaged its copy in ${Date.now() - startedAt} ms (${out.trim().split('\n').join('; ')})`);
    } catch (error) {
      log(`cluster: ${cluster.node} could not image its copy: ${(error as Error).message}`);
    } finally {
      copyImaging = null;
    }
    // A takeover or a stop began meanwhile: it has these followers now (per shard: the ones still followed).
    if (perShard && !stopping) for (const follower of current.filter((f) => followers.includes(f))) await follower.follow();
    else if (role === 'follower' && !stopping && followers === current) for (const follower of current) await follower.follow();
  };

  const openFollowers = async (): Promise<void> => {
    const create = (): ShardFollower[] => Array.from({ length: shards }, (_, shard) => new ShardFollower(shard, config.dataDir, js, { walSegmentRecords: config.walSegmentRecords }));
    // Per-shard ownership: each shard's copy is checked (and restored) against its own images.
    followers = perShard ? [] : create();
    if (perShard) for (let shard = 0; shard < shards; shard += 1) followers.push(await continuableFollower(shard));
    for (const follower of perShard ? [] : followers) {
      if (await images.continuable(follower.shard, follower.nextLsn)) continue;
      // The stream was purged past this copy (a new node, or one away for long): start from the newest image.
      for (const f of followers) f.close();
      const restored = await images.restoreNewest();
      log(`cluster: ${cluster.node}'s copy is behind the purged streams; restored image ${restored ?? '(none found)'}`);
      followers = create();
      break;
    }
    for (const follower of followers) await follower.follow();
    controlFollower = new ControlFollower(config.dataDir, js, jsm);
    await controlFollower.follow();
  };
  const closeFollowers = async (): Promise<void> => {
    for (const follower of followers) {
      await follower.stop();
      follower.close();
    }
    followers = [];
    if (controlFollower !== null) {
      await controlFollower.stop();
      controlFollower.close();
      controlFollower = null;
    }
  };

  const serving = (): boolean => role === 'owner' && childPort > 0 && child !== null;
  const ownsNow = (): boolean => serving() && Date.now() < lease.untilMs;
  /** The lease lapsed but may come back (renewed, or re-created and proven): requests wait for it. */
  const holding = (): boolean => serving() && lease.revision > 0 && Date.now() < lease.untilMs + holdMs;
  let refusing = false;
  const localRoute = (): Route => {
    const route = ownsNow() ? { url: `http://127.0.0.1:${childPort}` } : holding() ? 'hold' : null;
    // An owner that starts answering 503 says why, once.
    if (role === 'owner' && (route === null) !== refusing) log(`cluster: ${cluster.node} ${route === null ? `refuses requests (lease ${lease.untilMs - Date.now()} ms, revision ${lease.revision}, server ${child === null ? 'gone' : 'up'})` : 'serves again'}`);
    refusing = role === 'owner' && route === null;
    return route;
  };
  const fronts: Fronts = await startFronts({
    host: config.host,
    port: config.port,
    internalHost: cluster.internalHost,
    internalPort: cluster.internalPort,
    secret: cluster.secret,
    localRoute,
    publicRoute: (): Route => {
      if (role === 'owner') return localRoute();
      if (role === 'follower' && owner !== null && owner.node !== cluster.node) return { url: owner.url, token: cluster.secret };
      return null;
    },
  });

  /** Stops serving at once (SIGKILL: nothing it has not answered will be answered). */
  const dropChild = (why: string): void => {
    if (child === null) return;
    log(`cluster: ${cluster.node} stops serving: ${why}`);
    child.kill('SIGKILL');
  };

  const becomeFollower = async (): Promise<void> => {
    role = 'follower';
    childPort = 0;
    if (perShard && !stopping && controlFollower === null) {
      controlFollower = new ControlFollower(config.dataDir, js, jsm);
      await controlFollower.follow().catch((error: unknown) => log(`cluster: ${cluster.node} could not follow kobo-control yet: ${(error as Error).message}`));
      return;
    }
    if (!stopping && followers.length === 0) await openFollowers().catch((error: unknown) => log(`cluster: ${cluster.node} could not follow the streams yet: ${(error as Error).message}`));
  };

  /** The server's verified and shipped tail of every stream (shards, then kobo-control). */
  const serverTails = (): Promise<TailsAnswer> => (child === null ? Promise.reject(new Error('no server')) : askTails(child));

  const startChild = async (fences: number[], controlFence: number): Promise<void> => {
    const env = { ...process.env, PORT: '0', HOST: '127.0.0.1', ...(perShard ? { [OWNER_ENV.frontOnly]: '1' } : {}), [OWNER_ENV.role]: 'owner', [OWNER_ENV.epoch]: String(epoch), [OWNER_ENV.fences]: fences.join(','), [OWNER_ENV.controlFence]: String(controlFence), [OWNER_ENV.leaseUntil]: String(lease.untilMs), [OWNER_ENV.holdMs]: String(holdMs), KOBO_SHARDS: String(shards) };
    const started = spawn(process.execPath, [...process.execArgv, process.argv[1]!], { env, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
    child = started;
    let output = '';
    childPort = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the server did not listen in ${CHILD_START_MS_MAX} ms`)), CHILD_START_MS_MAX);
      started.stdout!.on('data', (chunk: Buffer) => {
        process.stdout.write(chunk);
        output += chunk.toString();
        const match = /listening on http:\/\/127\.0\.0\.1:(\d+) /.exec(output);
        if (match !== null) {
          clearTimeout(timer);
          resolve(Number(match[1]));
        }
      });
      started.stderr!.on('data', (chunk: Buffer) => process.stderr.write(chunk));
      started.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`the server exited with ${code} before listening`));
      });
    });
    sendRoutes(true);
    started.once('exit', (code, signal) => {
      if (child === started) child = null;
      log(`cluster: ${cluster.node}'s server exited (${signal ?? code}); following again`);
      fronts.wake();
      if (stopping) return; // the stop hands the lease back
      // Whatever stopped it (a foreign tail, a fault), this node no longer serves: the lease lapses.
      lease.forget();
      void becomeFollower();
    });
  };

  /** Per-shard ownership: the front (this node's server, when it holds the `owner` key) learns where each shard is served. */
  let sentRoutes = '';
  const sendRoutes = (always = false): void => {
    if (owners === null || child === null || !child.connected) return;
    const routes = owners.routes();
    const text = JSON.stringify(routes);
    if (!always && text === sentRoutes) return;
    sentRoutes = text;
    child.send({ type: 'routes', routes } satisfies RoutesMessage);
  };

  const takeOverFront = async (): Promise<void> => {
    role = 'taking-over';
    try {
      const controlFence = await fence(js, jsm, CONTROL_STREAM, CONTROL_EPOCH_SUBJECT, controlMsgIdOf(epoch, 0), epoch);
      const control = controlFollower ?? new ControlFollower(config.dataDir, js, jsm);
      controlFollower = null;
      await control.catchUp(controlFence);
      control.close();
      if (lease.revision === 0) throw new Error('the lease was lost during the takeover');
      await startChild(Array.from({ length: shards }, () => 0), controlFence);
      role = 'owner';
      log(`cluster: ${cluster.node} holds the front (epoch ${epoch}, control fence ${controlFence}); its shards: ${owners?.heldShards().join(',') || 'none'}`);
    } catch (error) {
      log(`cluster: ${cluster.node} could not take the front over: ${(error as Error).message}`);
      lease.forget();
      dropChild('takeover failed');
      if (child === null) await becomeFollower();
    }
  };

  const takeOver = async (): Promise<void> => {
    if (perShard) return takeOverFront();
    role = 'taking-over';
    try {
      await endCopyImaging();
      const fences: number[] = [];
      for (let shard = 0; shard < shards; shard += 1) fences.push(await fence(js, jsm, streamOf(shard), subjectOf(shard), msgIdOf(shard, epoch, 0), epoch));
      const controlFence = await fence(js, jsm, CONTROL_STREAM, CONTROL_EPOCH_SUBJECT, controlMsgIdOf(epoch, 0), epoch);
      const current = followers;
      followers = [];
      for (const follower of current) {
        await follower.catchUp(fences[follower.shard]!);
        follower.close();
      }
      const control = controlFollower ?? new ControlFollower(config.dataDir, js, jsm);
      controlFollower = null;
      await control.catchUp(controlFence);
      control.close();
      if (lease.revision === 0) throw new Error('the lease was lost during the takeover');
      await startChild(fences, controlFence);
      role = 'owner';
      log(`cluster: ${cluster.node} owns all ${shards} shard(s) (epoch ${epoch}, fences ${fences.join(',')})`);
    } catch (error) {
      log(`cluster: ${cluster.node} could not take over: ${(error as Error).message}`);
      lease.forget();
      dropChild('takeover failed');
      if (child === null) await becomeFollower();
    }
  };

  const renew = async (): Promise<void> => {
    // A serving owner whose key lapsed (its bucket's election outlasted the TTL) may re-create it.
    const renewal: Renewal = await lease.renew(role === 'owner' && child !== null ? serverTails : null);
    if (renewal.kind === 'renewed') {
      child?.send({ type: 'lease', untilMs: lease.untilMs } satisfies LeaseMessage);
      fronts.wake();
    } else if (renewal.kind === 'lost') {
      // Another node owns now (or wrote meanwhile): hand back a key this node re-created, stop serving.
      await lease.handBack();
      dropChild(renewal.why);
      if (child === null && role !== 'taking-over') await becomeFollower();
    } else if (role !== 'owner' ? Date.now() >= lease.untilMs : !holding()) {
      dropChild(role !== 'owner' ? 'the lease could not be renewed in time' : `the lease could not be re-established within ${holdMs} ms of its deadline`);
    }
  };

  /** Per-shard ownership: a follower of `shard` whose copy its stream can continue (restored from the shard's image if not). */
  const continuableFollower = (shard: number): Promise<ShardFollower> =>
    restoredIfBehind(shard, () => new ShardFollower(shard, config.dataDir, js, { walSegmentRecords: config.walSegmentRecords }), images, shardImages, (m) => log(`cluster: ${cluster.node}${m}`));
  const copies = new ShardCopies({
    followers: () => followers,
    setFollowers: (next) => (followers = next),
    continuable: continuableFollower,
    copyImaging: () => copyImaging !== null,
    endCopyImaging,
    stopping: () => stopping,
    held: (shard) => owners?.heldShards().includes(shard) === true,
    log: (m) => log(`cluster: ${cluster.node}${m}`),
  });

  const owners: ShardOwners | null = !perShard ? null : new ShardOwners({
    kv, js, jsm, cluster, shards, leaseMs, holdMs, log,
    stopFollowing: (shard, marker) => copies.stopFollowing(shard, marker),
    follow: (shard) => copies.follow(shard),
    changed: () => sendRoutes(),
  });

  const poll = async (): Promise<void> => {
    await pollFront();
    if (owners !== null) await owners.poll(!stopping && Date.now() - bucketFailedAtMs >= CLAIM_GRACE_MS, bucketFailedAtMs);
  };

  const pollFront = async (): Promise<void> => {
    if (lease.revision > 0) {
      await renew();
      return;
    }
    const entry = await kv.get(OWNER_KEY).catch(() => undefined);
    if (entry === undefined) {
      // The bucket is electing a leader: the owner known so far still is (it holds requests meanwhile).
      bucketFailedAtMs = Date.now();
      return;
    }
    const live = entry !== null && entry.operation === 'PUT' ? (entry.json() as OwnerValue) : null;
    if (live !== null) {
      owner = live;
      freeSinceMs = null;
      return;
    }
    freeSinceMs ??= Date.now();
    // A free lease right after the bucket failed may be the owner's, lapsed during the election: it goes
    // first, and requests go on to it meanwhile (it holds them).
    const bucketFailedLately = (): boolean => Date.now() - bucketFailedAtMs < CLAIM_GRACE_MS;
    const claim = bucketFailedLately() || role !== 'follower' || child !== null || stopping ? 'deferred' : await lease.claim();
    if (claim === 'unavailable') bucketFailedAtMs = Date.now();
    if (claim !== 'claimed') {
      // Taken: the next poll reads the new owner. A read answered by a replica can also miss the key for
      // seconds around a nats-server's loss: the owner is forgotten (503 during a move) only once the key
      // has been free for a whole TTL with the bucket answering (a dead owner's forwards fail anyway).
      if (owner !== null && Date.now() - freeSinceMs >= leaseMs && !bucketFailedLately()) {
        log(`cluster: ${cluster.node} forgets owner ${owner.node}: the lease has been free for ${Date.now() - freeSinceMs} ms (${claim})`);
        owner = null;
      }
      return;
    }
    freeSinceMs = null;
    epoch = lease.revision;
    owner = lease.value;
    // Not awaited: the polls go on renewing the lease while the copy catches up and the server recovers.
    void takeOver();
  };

  await openFollowers();
  let polling = false;
  const timer = setInterval(() => {
    if (polling || stopped) return;
    polling = true;
    void poll().finally(() => (polling = false));
  }, Math.min(LEASE_POLL_MS, leaseMs / 3));
  let copying = false;
  const copyTimer = cluster.copyImageSeconds === 0 ? null : setInterval(() => {
    if (copying) return;
    copying = true;
    void imageCopy().finally(() => (copying = false));
  }, cluster.copyImageSeconds * 1_000);
  let imaging = false;
  const imageTimer = cluster.imageIntervalSeconds === 0 ? null : setInterval(() => {
    if (owners !== null) {
      // Per-shard ownership: each node images the shards it serves, one at a time.
      if (imaging || stopping) return;
      imaging = true;
      void imageServedShards(owners, shardImages, { node: cluster.node, stopping: () => stopping, log }).finally(() => (imaging = false));
      return;
    }
    if (imaging || role !== 'owner' || stopping) return;
    imaging = true;
    void images.publish(epoch).then(
      (written) => {
        if (!written) log(`cluster: image not written (the streams did not hold its rows yet)`);
      },
      (error: unknown) => log(`cluster: image failed: ${(error as Error).message}`),
    ).finally(() => (imaging = false));
  }, cluster.imageIntervalSeconds * 1_000);
  const statusTimer = setInterval(() => {
    const status = { node: cluster.node, role, epoch: lease.revision === 0 ? 0 : epoch, url: cluster.advertiseUrl, positions: followers.map((f) => f.position), ...(owners === null ? {} : { followed: followers.map((f) => f.shard), held: owners.heldShards() }), control: controlFollower?.position ?? null, atMs: Date.now() };
    if (owners !== null) void owners.readLive().then(() => copies.refollowStalled()).catch((error: unknown) => log(`cluster: ${cluster.node} could not check its followers: ${(error as Error).message}`));
    // A report the bucket leaves unanswered for long is the sign of an election (see CLAIM_GRACE_MS).
    const slow = setTimeout(() => (bucketFailedAtMs = Date.now()), BUCKET_SLOW_MS);
    void kv.put(`node.${cluster.node}`, JSON.stringify(status)).catch(() => (bucketFailedAtMs = Date.now())).finally(() => clearTimeout(slow));
  }, 1_000);

  log(`listening on http://${config.host}:${fronts.publicPort} (cluster node ${cluster.node}, internal ${cluster.internalHost}:${fronts.internalPort}, ${shards} shard(s), data ${config.dataDir})`);

  return {
    publicPort: fronts.publicPort,
    stop: async () => {
      // The server drains its requests (KOBO_DRAIN_MS) and snapshots while the lease is still renewed.
      stopping = true;
      fronts.stopAccepting();
      if (child !== null) {
        const running = child;
        const exited = new Promise((resolve) => running.once('exit', resolve));
        running.kill('SIGTERM');
        await exited;
      }
      if (owners !== null) {
        // The others count this node gone at once (not after its report ages), so they may take its shards
        // as soon as each is handed back.
        clearInterval(statusTimer);
        await kv.delete(`node.${cluster.node}`).catch(() => {});
        await owners.stop();
      }
      stopped = true;
      clearInterval(timer);
      clearInterval(statusTimer);
      if (imageTimer !== null) clearInterval(imageTimer);
      if (copyTimer !== null) clearInterval(copyTimer);
      await endCopyImaging();
      while (polling) await new Promise((resolve) => setTimeout(resolve, 10));
      // Handing the lease back lets another node take over without waiting for its TTL.
      await lease.handBack();
      fronts.close();
      await closeFollowers();
      await nc.drain();
    },
  };
}

export type { KV };
