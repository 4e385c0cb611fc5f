// The cluster settings of a node (KOBO_CLUSTER_*): unset KOBO_CLUSTER_NATS means the single-node
// default (no NATS at all). Main thread, read once at start-up.
// Invariant: a node in a cluster has a name, a shared secret for the internal listener, and a lease of seconds.
import { ConfigError } from '../config.ts';

export interface ClusterConfig {
  servers: string[];
  node: string;
  secret: string;
  internalHost: string;
  internalPort: number;
  /** How other nodes reach this node's internal listener. */
  advertiseUrl: string;
  leaseSeconds: number;
  replicas: number;
  /** How often the owner writes an image to the object store (0: never; the streams are then never purged). */
  imageIntervalSeconds: number;
  /** How often a follower images its own copy so a takeover replays little (0: never). */
  copyImageSeconds: number;
  /** 'node': one node owns every shard (the `owner` lease); 'shard': a lease per shard, shards spread over the nodes. */
  ownership: 'node' | 'shard';
}

/** Written by a cluster node into its data dir: how the kobo CLI on that machine finds the cluster. */
export const CLUSTER_NODE_FILE = 'cluster-node.json';

/** A shared secret shorter than this is refused (it authenticates forwarded requests). */
const SECRET_CHARS_MIN = 16;

function intOf(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  const value = raw === undefined ? fallback : Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) throw new ConfigError(`config: ${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  return value;
}

/** Null when this process is not a clustered node (or is the server a node started). */
export function loadClusterConfig(env: NodeJS.ProcessEnv = process.env): ClusterConfig | null {
  const nats = (env.KOBO_CLUSTER_NATS ?? '').trim();
  if (nats === '' || env.KOBO_CLUSTER_ROLE === 'owner' || env.KOBO_CLUSTER_ROLE === 'shard-host') return null;
  const servers = nats.split(',').map((s) => s.trim()).filter((s) => s !== '');
  for (const server of servers) if (!/^nats:\/\/[^\s/]+$/.test(server)) throw new ConfigError(`config: KOBO_CLUSTER_NATS must list nats://host:port URLs, got "${server}"`);
  const node = env.KOBO_CLUSTER_NODE ?? '';
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(node)) throw new ConfigError('config: KOBO_CLUSTER_NODE must name this node (1-64 of A-Z a-z 0-9 _ -)');
  const secret = env.KOBO_CLUSTER_SECRET ?? '';
  if (secret.length < SECRET_CHARS_MIN) throw new ConfigError(`config: KOBO_CLUSTER_SECRET must be at least ${SECRET_CHARS_MIN} characters (value not shown: it is a secret)`);
  const internalHost = env.KOBO_CLUSTER_INTERNAL_HOST ?? env.HOST ?? '127.0.0.1';
  const internalPort = intOf(env, 'KOBO_CLUSTER_INTERNAL_PORT', 7422, 1, 65535);
  const advertiseUrl = env.KOBO_CLUSTER_ADVERTISE_URL ?? `http://${internalHost}:${internalPort}`;
  const ownership = env.KOBO_CLUSTER_OWNERSHIP ?? 'shard';
  if (ownership !== 'node' && ownership !== 'shard') throw new ConfigError(`config: KOBO_CLUSTER_OWNERSHIP must be "node" or "shard", got "${ownership}"`);
  if (!/^https?:\/\/[^\s/]+$/.test(advertiseUrl)) throw new ConfigError(`config: KOBO_CLUSTER_ADVERTISE_URL must be http://host:port, got "${advertiseUrl}"`);
  return {
    servers,
    node,
    secret,
    internalHost,
    internalPort,
    advertiseUrl,
    leaseSeconds: intOf(env, 'KOBO_CLUSTER_LEASE_SECONDS', 5, 2, 300),
    replicas: intOf(env, 'KOBO_CLUSTER_REPLICAS', 3, 1, 5),
    imageIntervalSeconds: intOf(env, 'KOBO_CLUSTER_IMAGE_INTERVAL_SECONDS', 600, 0, 86_400),
    copyImageSeconds: intOf(env, 'KOBO_CLUSTER_COPY_IMAGE_SECONDS', 10, 0, 86_400),
    ownership,
  };
}
