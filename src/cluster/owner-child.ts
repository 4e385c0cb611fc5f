// The serving side of a cluster node: the kobo server process its node supervisor (node.ts) starts
// once it holds the owner lease. Reads the epoch and fences from its environment and keeps the lease's
// deadline, renewed over IPC, in shared memory every shard worker reads. Main thread of that process.
// Invariant: when the supervisor goes (IPC closed) this process exits at once, acknowledging nothing more.

export interface OwnerCluster {
  servers: string[];
  epoch: number;
  /** Per shard, the stream sequence of this owner's epoch marker. */
  fences: number[];
  /** The kobo-control stream's sequence of this owner's epoch marker. */
  controlFence: number;
  /** Float64 [0]: wall-clock ms until which the lease surely holds. */
  lease: SharedArrayBuffer;
}

/** Set by the supervisor for the process it starts (never by an operator). */
export const OWNER_ENV = { role: 'KOBO_CLUSTER_ROLE', servers: 'KOBO_CLUSTER_NATS', epoch: 'KOBO_CLUSTER_EPOCH', fences: 'KOBO_CLUSTER_FENCES', controlFence: 'KOBO_CLUSTER_CONTROL_FENCE', leaseUntil: 'KOBO_CLUSTER_LEASE_UNTIL_MS' } as const;

/** A lease renewal the supervisor sends. */
export interface LeaseMessage {
  type: 'lease';
  untilMs: number;
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
  const lease = new SharedArrayBuffer(8);
  const until = new Float64Array(lease);
  until[0] = Number(env[OWNER_ENV.leaseUntil] ?? '0');
  process.on('message', (message: LeaseMessage) => {
    if (message.type === 'lease') until[0] = message.untilMs;
  });
  // The supervisor died (kill -9 of the node): nothing it renewed any more, nothing more is acknowledged.
  process.on('disconnect', () => process.exit(75));
  return {
    servers: (env[OWNER_ENV.servers] ?? '').split(',').filter((s) => s !== ''),
    epoch: Number(env[OWNER_ENV.epoch]),
    fences: (env[OWNER_ENV.fences] ?? '').split(',').map(Number),
    controlFence: Number(env[OWNER_ENV.controlFence] ?? '0'),
    lease,
  };
}
