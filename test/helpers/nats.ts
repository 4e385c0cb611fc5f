// Starts a JetStream cluster of nats-server processes on 127.0.0.1 for cluster tests and benches (a
// config file and a store dir each, free ports). Test-side only; installs Debian's nats-server with
// apt when it is missing and the test runs as root. Invariant: every process started here is killed by PID.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { StorageType } from '@nats-io/jetstream';
import { connectJetStream, patiently } from '../../src/cluster/streams.ts';

export interface NatsNode {
  name: string;
  clientPort: number;
  routePort: number;
  url: string;
  child: ChildProcess | null;
  config: string;
  output: () => string;
}

export interface NatsCluster {
  nodes: NatsNode[];
  urls: string[];
  /** SIGKILL one server. */
  kill: (index: number) => Promise<void>;
  /** Starts a killed server again with its store. */
  restart: (index: number) => Promise<void>;
  stop: () => Promise<void>;
}

/** The nats-server binary, installed with apt when missing and allowed (root); null when unavailable. */
export function natsServerBinary(): string | null {
  const find = (): string | null => {
    for (const candidate of ['/usr/sbin/nats-server', '/usr/bin/nats-server', '/usr/local/bin/nats-server']) if (fs.existsSync(candidate)) return candidate;
    const which = spawnSync('sh', ['-c', 'command -v nats-server'], { encoding: 'utf8' });
    return which.status === 0 && which.stdout.trim() !== '' ? which.stdout.trim() : null;
  };
  const found = find();
  if (found !== null || process.getuid?.() !== 0) return found;
  spawnSync('sh', ['-c', 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nats-server'], { stdio: 'ignore', timeout: 300_000 });
  return find();
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as net.AddressInfo).port;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Waits until `port` accepts connections; fails at once (with the server's output) if the server
 * exited meanwhile, e.g. because another process took a port between freePort() and its bind.
 */
async function waitForPort(port: number, timeoutMs: number, node?: NatsNode): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    const child = node?.child;
    if (child !== undefined && child !== null && (child.exitCode !== null || child.signalCode !== null)) {
      throw new Error(`nats-server ${node!.name} exited before it listened on ${port}: ${node!.output().slice(-500)}`);
    }
    if (Date.now() > until) throw new Error(`nats-server did not listen on ${port} in ${timeoutMs} ms${node === undefined ? '' : `: ${node.output().slice(-500)}`}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Waits until the servers' JetStream places a stream on all of them: listening is not enough, since the
 * meta leader learns its peers seconds later, and a kobo node started before that waits in its own
 * retries past a test's start timeout. Creates and deletes a probe stream with `size` replicas.
 */
async function jetStreamPlaces(urls: readonly string[], size: number): Promise<void> {
  const { nc, jsm } = await connectJetStream(urls, 'kobo-test-probe');
  try {
    const name = `probe-${process.pid}-${Date.now()}`;
    await patiently(() => jsm.streams.add({ name, subjects: [`${name}.x`], num_replicas: size, storage: StorageType.File }));
    await jsm.streams.delete(name);
  } finally {
    await nc.close();
  }
}

/** Attempts at a cluster: a port taken between freePort() and a server's bind costs one more. */
const CLUSTER_ATTEMPTS_MAX = 3;

export async function startNatsCluster(size = 3): Promise<NatsCluster> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await startNatsClusterOnce(size);
    } catch (error) {
      if (attempt >= CLUSTER_ATTEMPTS_MAX) throw error;
    }
  }
}

async function startNatsClusterOnce(size: number): Promise<NatsCluster> {
  const binary = natsServerBinary();
  if (binary === null) throw new Error('nats-server is not installed (apt-get install nats-server)');
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'kobo-nats-'));
  const nodes: NatsNode[] = [];
  for (let i = 0; i < size; i += 1) {
    const clientPort = await freePort();
    const routePort = await freePort();
    nodes.push({ name: `n${i + 1}`, clientPort, routePort, url: `nats://127.0.0.1:${clientPort}`, child: null, config: path.join(root, `n${i + 1}.conf`), output: () => '' });
  }
  for (const node of nodes) {
    const routes = nodes.filter((n) => n !== node).map((n) => `nats-route://127.0.0.1:${n.routePort}`);
    fs.writeFileSync(node.config, [
      `server_name: ${node.name}`,
      `listen: 127.0.0.1:${node.clientPort}`,
      `jetstream { store_dir: "${path.join(root, node.name)}" }`,
      `cluster { name: kobo-test, listen: 127.0.0.1:${node.routePort}, routes: [${routes.join(', ')}] }`,
      '',
    ].join('\n'));
  }
  const launch = (node: NatsNode): void => {
    const child = spawn(binary, ['-c', node.config], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
    node.child = child;
    node.output = () => output;
  };
  for (const node of nodes) launch(node);
  try {
    for (const node of nodes) await waitForPort(node.clientPort, 15_000, node);
    await jetStreamPlaces(nodes.map((n) => n.url), size);
  } catch (error) {
    // Nothing of a failed attempt is left running or on disk.
    for (const node of nodes) node.child?.kill('SIGKILL');
    fs.rmSync(root, { recursive: true, force: true });
    throw error;
  }
  const killOne = async (index: number): Promise<void> => {
    const child = nodes[index]!.child;
    if (child === null || child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGKILL');
    await gone;
  };
  return {
    nodes,
    urls: nodes.map((n) => n.url),
    kill: killOne,
    restart: async (index) => {
      launch(nodes[index]!);
      await waitForPort(nodes[index]!.clientPort, 15_000, nodes[index]!);
    },
    stop: async () => {
      for (let i = 0; i < nodes.length; i += 1) await killOne(i);
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
}
