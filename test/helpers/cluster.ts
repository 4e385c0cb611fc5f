// Starts kobo cluster nodes (node supervisors, each with its data dir and internal port) against a
// nats-server cluster from nats.ts, on 127.0.0.1. Test-side only.
// Invariant: processes are found and killed by PID (a node's server is its child process).
import { spawnSync } from 'node:child_process';
import { freePort, startNatsCluster, type NatsCluster } from './nats.ts';
import assert from 'node:assert/strict';
import { idem, startServer, tempDataDir, uniqueEmail, uniquePhone, type client, type TestServer } from './server.ts';
import { partitionOfId } from '../../src/ids.ts';
import { until } from './wait.ts';

export const CLUSTER_SECRET = 'test-cluster-secret-0123456789';
/** The node-wide lease (one node owns every shard): per-shard ownership is the default, so tests of this mode say so. */
export const NODE_WIDE_ENV = { KOBO_CLUSTER_OWNERSHIP: 'node' };

export interface KoboNode {
  name: string;
  server: TestServer;
  internalPort: number;
  /** PID of the kobo server this node runs while it owns (null: none). */
  servingPid: () => number | null;
  /** PIDs of every process the node started (its server, and with per-shard ownership its shard hosts). */
  childPids: () => number[];
}

export interface KoboCluster {
  nats: NatsCluster;
  nodes: KoboNode[];
  /** Index of the node whose log says it owns, waiting up to `timeoutMs`. */
  owner: (timeoutMs?: number, not?: number) => Promise<number>;
  /** Starts one more node (an empty data dir). */
  addNode: () => Promise<KoboNode>;
  stop: () => Promise<void>;
}

function childOf(pid: number | undefined): number | null {
  return childrenOf(pid)[0] ?? null;
}

function childrenOf(pid: number | undefined): number[] {
  if (pid === undefined) return [];
  const ps = spawnSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' });
  return ps.stdout.split('\n').map((l) => l.trim()).filter((l) => l !== '').map(Number);
}

export async function startKoboCluster(options: { keys: string[]; size?: number; env?: Record<string, string> }): Promise<KoboCluster> {
  const nats = await startNatsCluster(3);
  const nodes: KoboNode[] = [];
  const addNode = async (): Promise<KoboNode> => {
    const i = nodes.length;
    const internalPort = await freePort();
    const server = await startServer({
      keys: options.keys,
      dataDir: tempDataDir(`kobo-node${i}`),
      env: {
        KOBO_CLUSTER_NATS: nats.urls.join(','),
        KOBO_CLUSTER_NODE: `node${i}`,
        KOBO_CLUSTER_SECRET: CLUSTER_SECRET,
        KOBO_CLUSTER_INTERNAL_PORT: String(internalPort),
        KOBO_CLUSTER_LEASE_SECONDS: '8',
        ...options.env,
      },
    });
    const node = { name: `node${i}`, server, internalPort, servingPid: () => childOf(server.child.pid), childPids: () => childrenOf(server.child.pid) };
    nodes.push(node);
    return node;
  };
  try {
    for (let i = 0; i < (options.size ?? 3); i += 1) await addNode();
  } catch (error) {
    for (const node of nodes) await node.server.kill();
    await nats.stop();
    throw error;
  }
  const owner = async (timeoutMs = 30_000, not = -1): Promise<number> =>
    until(
      async () => nodes.findIndex((node, i) => i !== not && node.server.child.exitCode === null && node.server.child.signalCode === null && node.servingPid() !== null && /owns all/.test(lastOwnership(node.server.output()))),
      (i) => i >= 0,
      'a node owning the shards',
      timeoutMs,
    );
  return {
    nats,
    nodes,
    owner,
    addNode,
    stop: async () => {
      for (const node of nodes) {
        for (const started of node.childPids()) {
          try {
            process.kill(started, 'SIGKILL');
          } catch {
            // already gone
          }
        }
        await node.server.kill();
      }
      await nats.stop();
    },
  };
}

/**
 * Runs `run` on a fresh cluster and stops it after, pass or fail; on failure the nodes' last log lines
 * (request lines left out) go to stderr first, which is how a failed takeover is diagnosed.
 */
export async function withCluster(options: { keys: string[]; size?: number; env?: Record<string, string> }, run: (cluster: KoboCluster) => Promise<void>): Promise<void> {
  const cluster = await startKoboCluster(options);
  try {
    await run(cluster);
  } catch (error) {
    for (const node of cluster.nodes) process.stderr.write(`--- ${node.name}\n${node.server.output().split('\n').filter((l) => !/"msg":"request"/.test(l)).slice(-40).join('\n')}\n`);
    throw error;
  } finally {
    await cluster.stop();
  }
}

/** The last ownership line a node logged ("owns all" or "stops serving"/"exited"). */
function lastOwnership(output: string): string {
  const lines = output.split('\n').filter((l) => /owns all|stops serving|exited \(|could not take over/.test(l));
  return lines[lines.length - 1] ?? '';
}

/**
 * Creates customers until each of `shards` shards holds `each` of them (a customer's partition, and so
 * its shard, is chosen by the server), so every shard's log grows; returns their ids in creation order.
 */
export async function customersOnEveryShard(api: ReturnType<typeof client>, options: { shards: number; each: number; name: string }): Promise<string[]> {
  const customers: string[] = [];
  const perShard = new Array<number>(options.shards).fill(0);
  while (customers.length < options.each * options.shards) {
    const r = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: { name: options.name, email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    const shard = partitionOfId(r.body.data.id) % options.shards;
    if (perShard[shard]! >= options.each) continue;
    perShard[shard]! += 1;
    customers.push(r.body.data.id);
  }
  return customers;
}
