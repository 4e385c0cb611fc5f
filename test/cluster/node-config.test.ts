// Cluster settings refused at start-up with one line and exit 78 (EX_CONFIG), before any NATS
// connection; the server-side role is refused when an operator sets it by hand.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { ROOT, entryArgs } from '../helpers/build.ts';
import { tempDataDir } from '../helpers/server.ts';
import { loadClusterConfig } from '../../src/cluster/cluster-config.ts';

function start(env: Record<string, string>): { status: number | null; stderr: string } {
  const result = spawnSync(process.execPath, entryArgs('main'), { cwd: ROOT, env: { ...process.env, PORT: '0', HOST: '127.0.0.1', KOBO_DATA_DIR: tempDataDir('kobo-cfg'), KOBO_SHARDS: '1', ...env }, encoding: 'utf8', timeout: 30_000 });
  return { status: result.status, stderr: result.stderr };
}

const base = { KOBO_CLUSTER_NATS: 'nats://127.0.0.1:1', KOBO_CLUSTER_NODE: 'n1', KOBO_CLUSTER_SECRET: 'a-secret-of-enough-length' };

test('cluster config: a short KOBO_CLUSTER_SECRET → exit 78, one line naming it, the value not shown', () => {
  const r = start({ ...base, KOBO_CLUSTER_SECRET: 'short-secret' });
  assert.equal(r.status, 78, r.stderr);
  assert.match(r.stderr, /^kobo: config: KOBO_CLUSTER_SECRET must be at least 16 characters \(value not shown: it is a secret\)\n$/);
  assert.doesNotMatch(r.stderr, /short-secret/);
});

test('cluster config: KOBO_CLUSTER_NATS not nats:// URLs → exit 78 naming it', () => {
  const r = start({ ...base, KOBO_CLUSTER_NATS: 'http://127.0.0.1:4222' });
  assert.equal(r.status, 78, r.stderr);
  assert.match(r.stderr, /KOBO_CLUSTER_NATS must list nats:\/\/host:port URLs/);
});

test('cluster config: no KOBO_CLUSTER_NODE, or a lease outside 2–300 s → exit 78 naming the variable', () => {
  const { KOBO_CLUSTER_NODE: _node, ...noNode } = base;
  const r = start({ ...noNode, KOBO_CLUSTER_NODE: '' });
  assert.equal(r.status, 78, r.stderr);
  assert.match(r.stderr, /KOBO_CLUSTER_NODE must name this node/);
  const lease = start({ ...base, KOBO_CLUSTER_LEASE_SECONDS: '1' });
  assert.equal(lease.status, 78, lease.stderr);
  assert.match(lease.stderr, /KOBO_CLUSTER_LEASE_SECONDS must be an integer from 2 to 300, got "1"/);
});

test('cluster config: KOBO_CLUSTER_ROLE=owner set by hand (no node started this server) → refused, exit 1', () => {
  const r = start({ KOBO_CLUSTER_ROLE: 'owner', KOBO_CLUSTER_NATS: 'nats://127.0.0.1:1' });
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, /KOBO_CLUSTER_ROLE=owner is set by a cluster node for the server it starts; unset it/);
});

test('cluster config: KOBO_CLUSTER_OWNERSHIP neither node nor shard → exit 78 naming it', () => {
  const r = start({ ...base, KOBO_CLUSTER_OWNERSHIP: 'spread' });
  assert.equal(r.status, 78, r.stderr);
  assert.match(r.stderr, /KOBO_CLUSTER_OWNERSHIP must be "node" or "shard", got "spread"/);
});

test('cluster config: KOBO_CLUSTER_ROLE=shard-host set by hand (no node started this process) → refused, exit 1', () => {
  const r = start({ KOBO_CLUSTER_ROLE: 'shard-host', KOBO_CLUSTER_NATS: 'nats://127.0.0.1:1' });
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, /KOBO_CLUSTER_ROLE=shard-host is set by a cluster node for the process it starts; unset it/);
});

test('cluster node: SIGTERM while it still waits for its first nats-server → exits 0 within seconds, saying so (not after JetStream answers)', async () => {
  const child = spawn(process.execPath, entryArgs('main'), { cwd: ROOT, env: { ...process.env, PORT: '0', HOST: '127.0.0.1', KOBO_DATA_DIR: tempDataDir('kobo-cfg'), KOBO_SHARDS: '1', ...base }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    // Nothing listens on port 1: the node is waiting for its first connection.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    assert.equal(child.exitCode, null, `still waiting:\n${output}`);
    const sentAt = Date.now();
    child.kill('SIGTERM');
    const code = await Promise.race([exited, new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 10_000))]);
    assert.equal(code, 0, output);
    assert.ok(Date.now() - sentAt < 10_000);
    assert.match(output, /SIGTERM: stopping the cluster node before it came up/);
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
});

test('cluster config: KOBO_CLUSTER_OWNERSHIP unset → per-shard ownership; "node" → the node-wide lease', () => {
  assert.equal(loadClusterConfig({ ...base })?.ownership, 'shard');
  assert.equal(loadClusterConfig({ ...base, KOBO_CLUSTER_OWNERSHIP: 'node' })?.ownership, 'node');
  assert.equal(loadClusterConfig({ ...base, KOBO_CLUSTER_OWNERSHIP: 'shard' })?.ownership, 'shard');
  // No KOBO_CLUSTER_NATS: no cluster at all, whatever the other settings (the single-node default).
  assert.equal(loadClusterConfig({ KOBO_CLUSTER_OWNERSHIP: 'shard', KOBO_CLUSTER_NODE: 'n1' }), null);
});
