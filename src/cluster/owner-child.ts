// The serving side of a cluster node: the kobo server process its node supervisor (node.ts) starts
// once it holds the owner lease. Reads the epoch and fences from its environment, keeps the lease's
// deadline (renewed over IPC) and each stream's verified tail in shared memory the shard workers use,
// and answers the supervisor's questions about those tails. Main thread of that process.
// Invariant: when the supervisor goes (IPC closed) this process exits at once, acknowledging nothing more.
import type { ShardRoute } from './shard-link.ts';

export interface OwnerCluster {
  servers: string[];
  epoch: number;
  /** Per shard, the stream sequence of this owner's epoch marker. */
  fences: number[];
  /** The kobo-control stream's sequence of this owner's epoch marker. */
  controlFence: number;
  /** Float64 [0]: wall-clock ms until which the lease surely holds. */
  lease: SharedArrayBuffer;
  /** How long past that deadline an answer may wait for the lease to hold again before the shard gives up. */
  holdMs: number;
  /** Float64 per stream (shards, then kobo-control), see `tailSlots`. */
  tails: SharedArrayBuffer;
  /**
   * Per-shard ownership: this server is the front only; each shard runs in a shard host on its owner
   * node, at the route the supervisor last sent (`RoutesMessage`). Unset: the server runs every shard.
   */
  remote?: { routes: ShardRoute[]; secret: string };
}

/**
 * The slots of a stream in `OwnerCluster.tails`: `verified`, the sequence through which every message
 * after the fence is known to be this owner's (its PubAck or its stored msg id said so), and `shipped`,
 * the highest sequence this owner has published at (or is publishing at).
 */
export function tailSlots(tails: SharedArrayBuffer, stream: number): { verified: (seq: number) => void; shipped: (seq: number) => void } {
  const slots = new Float64Array(tails);
  return { verified: (seq) => void (slots[2 * stream] = seq), shipped: (seq) => void (slots[2 * stream + 1] = seq) };
}

/** Set by the supervisor for the process it starts (never by an operator). */
export const OWNER_ENV = { role: 'KOBO_CLUSTER_ROLE', servers: 'KOBO_CLUSTER_NATS', epoch: 'KOBO_CLUSTER_EPOCH', fences: 'KOBO_CLUSTER_FENCES', controlFence: 'KOBO_CLUSTER_CONTROL_FENCE', leaseUntil: 'KOBO_CLUSTER_LEASE_UNTIL_MS', holdMs: 'KOBO_CLUSTER_HOLD_MS', frontOnly: 'KOBO_CLUSTER_FRONT_ONLY' } as const;

/** Per-shard ownership: where each shard is served now (null: moving), sent whenever it changes. */
export interface RoutesMessage {
  type: 'routes';
  routes: ShardRoute[];
}

/** A lease renewal the supervisor sends. */
export interface LeaseMessage {
  type: 'lease';
  untilMs: number;
}

/** The supervisor asks for every stream's tails (`id` pairs the answer with the question). */
export interface TailsQuestion {
  type: 'tails';
  id: number;
}

/** Per stream (shards, then kobo-control): the verified and shipped sequences, read after the question came. */
export interface TailsAnswer {
  type: 'tails';
  id: number;
  verified: number[];
  shipped: number[];
}

let owner: OwnerCluster | null | undefined;

/** `{ cluster }` for the shard pool when this process serves as a cluster owner, else `{}`. */
export function ownerCluster(env: NodeJS.ProcessEnv = process.env): { cluster?: OwnerCluster } {
  if (owner === undefined) owner = readOwner(env);
  return owner === null ? {} : { cluster: owner };
}

function readOwner(env: NodeJS.ProcessEnv): OwnerCluster | null {
  if (env[OWNER_ENV.role] !== 'owner') return null;
  if (process.send === undefined) throw new Error(`${OWNER_ENV.role}=owner is set by a cluster node for the server it starts; unset it`);
  const fences = (env[OWNER_ENV.fences] ?? '').split(',').map(Number);
  const controlFence = Number(env[OWNER_ENV.controlFence] ?? '0');
  const lease = new SharedArrayBuffer(8);
  const until = new Float64Array(lease);
  until[0] = Number(env[OWNER_ENV.leaseUntil] ?? '0');
  const tails = new SharedArrayBuffer(8 * 2 * (fences.length + 1));
  const slots = new Float64Array(tails);
  for (const [stream, fence] of [...fences, controlFence].entries()) slots.fill(fence, 2 * stream, 2 * stream + 2);
  const remote = env[OWNER_ENV.frontOnly] === '1' ? { routes: fences.map((): ShardRoute => null), secret: env.KOBO_CLUSTER_SECRET ?? '' } : undefined;
  process.on('message', (message: LeaseMessage | TailsQuestion | RoutesMessage) => {
    if (message.type === 'lease') until[0] = message.untilMs;
    if (message.type === 'routes' && remote !== undefined) remote.routes = message.routes;
    if (message.type === 'tails') {
      const streams = fences.length + 1;
      const answer: TailsAnswer = { type: 'tails', id: message.id, verified: Array.from({ length: streams }, (_, s) => slots[2 * s]!), shipped: Array.from({ length: streams }, (_, s) => slots[2 * s + 1]!) };
      process.send?.(answer);
    }
  });
  // The supervisor died (kill -9 of the node): nothing it renewed any more, nothing more is acknowledged.
  process.on('disconnect', () => process.exit(75));
  return {
    servers: (env[OWNER_ENV.servers] ?? '').split(',').filter((s) => s !== ''),
    epoch: Number(env[OWNER_ENV.epoch]),
    fences,
    controlFence,
    lease,
    holdMs: Number(env[OWNER_ENV.holdMs] ?? '0'),
    tails,
    ...(remote === undefined ? {} : { remote }),
  };
}
