// A shard host: the process a cluster node (shard-owners.ts) starts for one shard whose lease it holds,
// when ownership is per shard. Runs that shard's runtime on its main thread and serves it to the front
// (the pool of whichever node holds the front lease) over a link (shard-link.ts), keeping the lease
// deadline and the stream's tails in shared memory as owner-child.ts does for a whole server.
// Invariant: commands of different links never share a number; when the supervisor goes, this process exits.
import net from 'node:net';
import type { Config } from '../config.ts';
import { runShard, type ShardInbound, type ShardWorkerData } from '../shard/shard-runtime.ts';
import type { ShardToMain, WalletUpdate } from '../shard/protocol.ts';
import { OWNER_ENV, type LeaseMessage, type TailsAnswer, type TailsQuestion } from './owner-child.ts';
import { acceptedHello, HELLO_BYTES_MAX, readFrames, writeFrame } from './shard-link.ts';
import { WaiterSlab } from '../shard/waiter-slab.ts';

/** Forwards and outbox events kept while no front is linked (handed to the next one); past it the oldest go. */
const UNLINKED_KEPT_MAX = 100_000;

/** Set by the node for the shard host it starts. */
export const SHARD_HOST_ENV = { shard: 'KOBO_CLUSTER_SHARD', secret: 'KOBO_CLUSTER_SECRET', host: 'KOBO_CLUSTER_INTERNAL_HOST' } as const;

interface Link {
  socket: net.Socket;
}

/** Starts the shard and its link listener; `stop` closes the shard as a server's stop does (snapshot, then exit 0). */
export function runShardHost(config: Readonly<Config>, log: (message: string) => void, env: NodeJS.ProcessEnv = process.env): { stop: () => void } {
  if (process.send === undefined) throw new Error(`${OWNER_ENV.role}=shard-host is set by a cluster node for the process it starts; unset it`);
  const shard = Number(env[SHARD_HOST_ENV.shard]);
  const secret = env[SHARD_HOST_ENV.secret] ?? '';
  const lease = new SharedArrayBuffer(8);
  const until = new Float64Array(lease);
  until[0] = Number(env[OWNER_ENV.leaseUntil] ?? '0');
  const fence = Number(env[OWNER_ENV.fences] ?? '0');
  const streams = config.shards + 1;
  const tails = new SharedArrayBuffer(8 * 2 * streams);
  const slots = new Float64Array(tails);
  slots.fill(fence, 2 * shard, 2 * shard + 2);
  process.on('message', (message: LeaseMessage | TailsQuestion) => {
    if (message.type === 'lease') until[0] = message.untilMs;
    if (message.type === 'tails') {
      const answer: TailsAnswer = { type: 'tails', id: message.id, verified: Array.from({ length: streams }, (_, s) => slots[2 * s]!), shipped: Array.from({ length: streams }, (_, s) => slots[2 * s + 1]!) };
      process.send?.(answer);
    }
  });
  // The node died (kill -9): nothing renews the lease any more, nothing more is acknowledged.
  process.on('disconnect', () => process.exit(75));

  const data: ShardWorkerData = {
    shard,
    shards: config.shards,
    dataDir: config.dataDir,
    railLatencyMs: config.railLatencyMs,
    batchCommandsMax: config.batchCommandsMax,
    snapshotIntervalMs: config.snapshotIntervalMs,
    idempotencyRetentionMs: config.idempotencyRetentionHours * 3_600_000,
    idempotencySweepMs: config.idempotencySweepMs,
    snapshotEveryRecords: config.snapshotEveryRecords,
    walRetainRecords: config.walRetainRecords,
    walSegmentRecords: config.walSegmentRecords,
    quoteSweepMs: config.quoteSweepMs,
    collectionSweepMs: config.collectionSweepMs,
    // The front sends every sandbox clock offset when it links (its control.db is the one that counts).
    clockOffsets: [],
    connectors: config.connectors,
    requeryAfterMs: config.requeryAfterMs,
    crashAt: config.testCrashAt,
    cluster: { servers: (env[OWNER_ENV.servers] ?? '').split(',').filter((s) => s !== ''), epoch: Number(env[OWNER_ENV.epoch]), fence, lease, holdMs: Number(env[OWNER_ENV.holdMs] ?? '0'), tails },
  };

  /** The link of the newest front (highest epoch); an older front's link is closed when it comes. */
  let front: Link | null = null;
  let frontEpoch = 0;
  const links = new Set<Link>();
  /**
   * This process's number of a command, list, ping or snapshot → the link and the number it came with. A
   * slab, not a Map: one insert and one delete a command made a Map rehash in the old generation and keep
   * every command's entry alive there (src/shard/waiter-slab.ts).
   */
  const asked = new WaiterSlab<{ link: Link; n: number }>();
  const unlinked: ShardToMain[] = [];
  let handler: ((message: ShardInbound) => void) | null = null;

  const send = (link: Link | null, message: ShardToMain): void => {
    if (link !== null && !link.socket.destroyed) writeFrame(link.socket, message);
  };
  const answer = (n: number, make: (n: number) => ShardToMain): void => {
    const to = asked.take(n);
    if (to === undefined) return;
    send(to.link, make(to.n));
  };
  let recoveryLogged = false;
  const post = (message: ShardToMain): void => {
    if (message.type === 'ready' && !recoveryLogged) {
      recoveryLogged = true;
      // How much of the log the start replayed: the tests read it (a takeover from a fresh image replays little).
      log(`shard host ${shard} recovered: ${message.recovered.replayed} record(s) replayed up to LSN ${message.recovered.lastLsn}`);
    }
    switch (message.type) {
      case 'replies': {
        const byLink = new Map<Link, Array<{ n: number; reply: (typeof message.items)[number]['reply'] }>>();
        for (const item of message.items) {
          const to = asked.take(item.n);
          if (to === undefined) continue;
          const items = byLink.get(to.link) ?? [];
          items.push({ n: to.n, reply: item.reply });
          byLink.set(to.link, items);
        }
        // The views of changed wallets go to the front, with its replies (before them, as in one process).
        if (front !== null && !byLink.has(front) && message.wallets.length > 0) byLink.set(front, []);
        for (const [link, items] of byLink) send(link, { ...message, items, wallets: link === front ? message.wallets : ([] as WalletUpdate[]) });
        return;
      }
      case 'list.page':
      case 'snapshot.done':
      case 'pong':
        answer(message.n, (n) => ({ ...message, n }));
        return;
      case 'forward':
      case 'outbox':
        if (front === null || front.socket.destroyed) {
          unlinked.push(message);
          if (unlinked.length > UNLINKED_KEPT_MAX) unlinked.shift();
          return;
        }
        send(front, message);
        return;
      default:
        // 'ready' (the index a linking front asked for), metrics, expired idempotency scopes.
        send(front, message);
    }
  };
  const inbound = (link: Link, message: ShardInbound): void => {
    if (handler === null) return;
    switch (message.type) {
      case 'commands':
        handler({ type: 'commands', items: message.items.map((item) => ({ n: asked.add({ link, n: item.n }), cmd: item.cmd })) });
        return;
      case 'list':
      case 'snapshot':
      case 'ping': {
        handler({ ...message, n: asked.add({ link, n: message.n }) });
        return;
      }
      case 'stop':
        return; // a front's stop is not the shard's: it stops when its node lets go of it
      default:
        handler(message);
    }
  };

  runShard(data, {
    post,
    onMessage: (h) => {
      handler = h;
    },
    exit: () => process.exit(0),
  });

  const server = net.createServer((socket) => {
    socket.setNoDelay(true);
    const link: Link = { socket };
    let hello = false;
    socket.once('error', () => {});
    readFrames(
      socket,
      (message) => {
        if (!hello) {
          // Anything but a valid hello (null, a number, a wrong secret) ends the link, never the host.
          const first = acceptedHello(message, shard, secret, frontEpoch);
          if (first === null) {
            socket.destroy();
            return;
          }
          hello = true;
          // A deposed front sends nothing more here: what it sent before is answered (to nobody) before
          // the new front's index question is, so that index holds every record it may have relayed.
          for (const other of links) other.socket.destroy();
          links.add(link);
          frontEpoch = first.epoch;
          front = link;
          // What waited for a front goes to it first; the index it asks for next brings the outbox again anyway.
          for (const kept of unlinked.splice(0)) send(link, kept);
          return;
        }
        inbound(link, message as ShardInbound);
      },
      (why) => {
        log(`shard host ${shard}: link closed: ${why}`);
        socket.destroy();
      },
      HELLO_BYTES_MAX,
    );
    socket.once('close', () => {
      links.delete(link);
      if (front === link) front = null;
      for (const [n, to] of asked.entries()) if (to.link === link) asked.take(n);
    });
  });
  const host = env[SHARD_HOST_ENV.host] ?? '127.0.0.1';
  server.listen({ host, port: 0 }, () => {
    const port = (server.address() as net.AddressInfo).port;
    // The node reads this line (the port the front links to).
    process.stdout.write(`shard host ${shard} listening on ${host}:${port}\n`);
  });
  return {
    stop: () => {
      server.close();
      handler?.({ type: 'stop' });
    },
  };
}
