// The kobo CLI's writes to control.db and webhooks.db on a cluster node (keys, subscriptions, queued
// operator actions): allowed only on the node that owns the cluster, whose server publishes the rows to
// the kobo-control stream; the command waits until the stream holds them. Operator CLI.
// Invariant: on a cluster node a command reports success only for rows the stream holds.
import fs from 'node:fs';
import path from 'node:path';
import { Kvm } from '@nats-io/kv';
import type { ReplicaChange, ReplicaSink } from '../store/replica-rows.ts';
import { connectJetStream, CONTROL_STREAM, LEASE_BUCKET, OWNER_KEY } from '../cluster/streams.ts';
import { subjectOfChange } from '../cluster/control-log.ts';
import { CLUSTER_NODE_FILE } from '../cluster/cluster-config.ts';

/** How long the owner's server may take to publish a row the CLI wrote (it looks every second). */
const REPLICATED_MS_MAX = 10_000;

export interface ClusterNodeFile {
  servers: string[];
  node: string;
}

export function writeClusterNodeFile(dataDir: string, value: ClusterNodeFile): void {
  fs.writeFileSync(path.join(dataDir, CLUSTER_NODE_FILE), `${JSON.stringify(value)}\n`, { mode: 0o600 });
}

function clusterOf(dataDir: string): ClusterNodeFile | null {
  const file = path.join(dataDir, CLUSTER_NODE_FILE);
  return fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as ClusterNodeFile) : null;
}

/**
 * Runs `write` (which hands its stores the sink it is given); on a cluster node, first checks that this
 * node owns the cluster, then waits until the stream holds every row the write changed.
 */
export async function clusterWrite<T>(dataDir: string, write: (sink: ReplicaSink | null) => T): Promise<T> {
  const cluster = clusterOf(dataDir);
  if (cluster === null) return write(null);
  const { nc, jsm } = await connectJetStream(cluster.servers, 'kobo-cli');
  try {
    const kv = await new Kvm(nc).open(LEASE_BUCKET);
    const entry = await kv.get(OWNER_KEY);
    const owner = entry !== null && entry.operation === 'PUT' ? (entry.json() as { node: string }).node : null;
    if (owner !== cluster.node) {
      throw new Error(`this is cluster node ${cluster.node}; ${owner === null ? 'no node owns the cluster right now: try again in a few seconds' : `run the command on ${owner}, the node that owns the cluster`}`);
    }
    const changes: ReplicaChange[] = [];
    const result = write({ record: (change) => changes.push(change) });
    const until = Date.now() + REPLICATED_MS_MAX;
    for (const change of changes) {
      const want = JSON.stringify(change);
      for (;;) {
        const stored = await jsm.streams.getMessage(CONTROL_STREAM, { last_by_subj: subjectOfChange(change) }).catch(() => null);
        // A queued action may already be applied (and published again, done) by the time this looks.
        if (stored !== null && (change.table === 'operator_actions' || Buffer.from(stored.data).toString('utf8') === want)) break;
        if (Date.now() > until) throw new Error(`written on ${cluster.node}, but the cluster does not hold it yet: is the server running? (it publishes such rows within a second)`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
    return result;
  } finally {
    await nc.close();
  }
}
