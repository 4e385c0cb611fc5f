// `npm start` under a supervisor: SIGTERM to the npm process (what systemd, Docker and process managers
// send) stops every process it started, requests already received are answered, the stop is bounded by
// KOBO_DRAIN_MS, the exit is 0, and a restart on the same data dir has every acknowledged write.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import { ROOT, entryArgs } from '../helpers/build.ts';
import { client, secretKey, startServer, tempDataDir, uniqueEmail, uniquePhone } from '../helpers/server.ts';

/** Every process below `pid` (children, grandchildren, …), from /proc. */
function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // exited while listed
    }
  }
  const found: number[] = [];
  const walk = (p: number): void => {
    for (const child of children.get(p) ?? []) {
      found.push(child);
      walk(child);
    }
  };
  walk(pid);
  return found;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A POST whose headers (and half its body) are sent now; `finish()` sends the rest and reads the reply. */
async function halfSentPost(port: number, key: string, idempotencyKey: string, body: string): Promise<{ finish: () => Promise<string>; socket: net.Socket }> {
  const socket = net.connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  // A reset once the drain gives up on this client is an outcome the caller checks, not a crash of the test runner.
  socket.on('error', () => undefined);
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
  const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  const half = Math.floor(body.length / 2);
  socket.write(
    `POST /v1/customers HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nIdempotency-Key: ${idempotencyKey}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, half)}`,
  );
  return {
    socket,
    finish: async () => {
      socket.write(body.slice(half));
      await ended; // draining: the server answers and closes the connection
      return received;
    },
  };
}

test('SIGTERM to the `npm start` PID: in-flight requests answered, every process gone within the drain bound, exit 0, nothing lost', { timeout: 120_000 }, async () => {
  entryArgs('main'); // builds dist/ when stale, so npm's prestart has nothing to do
  const key = secretKey();
  const dataDir = tempDataDir('kobo-npm-start');
  const drainMs = 1_500;
  const npm = spawn('npm', ['start'], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', KOBO_DATA_DIR: dataDir, KOBO_SHARDS: '2', KOBO_API_KEYS: key, KOBO_DRAIN_MS: String(drainMs) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  npm.stdout.on('data', (c: Buffer) => (output += c.toString()));
  npm.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<number | null>((resolve) => npm.once('exit', (code) => resolve(code)));
  try {
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`npm start did not listen in 60 s:\n${output}`)), 60_000);
      npm.stdout.on('data', () => {
        const match = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(output);
        if (match !== null) {
          clearTimeout(timer);
          resolve(Number(match[1]));
        }
      });
    });
    const tree = descendants(npm.pid!);
    const server = tree.find((pid) => fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('dist/main.js'));
    assert.ok(server !== undefined, 'node dist/main.js runs under npm');
    assert.ok(
      !tree.some((pid) => /(^|\/)(sh|tsx)\0/.test(fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8'))),
      'no shell or tsx process sits between npm and node',
    );

    const customers = Array.from({ length: 4 }, (_, i) => ({ name: `Drain ${i}`, email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' }));
    const inFlight = await Promise.all(customers.map((c, i) => halfSentPost(port, key, `drain-${i}-${Date.now()}`, JSON.stringify(c))));
    // One client never finishes its body: the drain must give up on it after KOBO_DRAIN_MS.
    const stuck = await halfSentPost(port, key, `stuck-${Date.now()}`, JSON.stringify({ name: 'Stuck', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' }));
    // A keep-alive connection opened before the signal (as a load balancer's would be).
    const probe = net.connect(port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => probe.once('connect', resolve).once('error', reject));
    probe.on('error', () => undefined); // the server may reset it when it stops; the test reads what arrived
    let probed = '';
    probe.on('data', (chunk: Buffer) => (probed += chunk.toString()));
    await new Promise((resolve) => setTimeout(resolve, 200)); // the server has read every header

    const signalled = Date.now();
    npm.kill('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 300));
    // The listen socket is closed at once: new connections are refused while the drain runs.
    await assert.rejects(fetch(`http://127.0.0.1:${port}/healthz`));
    // On a connection already open, readiness now says no: balancers stop sending here.
    probe.write('GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    await new Promise<void>((resolve) => probe.once('close', () => resolve()));
    assert.match(probed, /^HTTP\/1\.1 503 /, probed);
    assert.match(probed, /"code":"UNAVAILABLE"/);
    const replies = await Promise.all(inFlight.map((r) => r.finish()));
    for (const reply of replies) {
      assert.match(reply, /^HTTP\/1\.1 201 /, reply);
      assert.match(reply, /connection: close/i, 'answered while draining: the connection is closed after it');
    }
    const code = await exited;
    const tookMs = Date.now() - signalled;
    stuck.socket.destroy();
    assert.equal(code, 0, output);
    assert.ok(tookMs >= drainMs - 500, `waited for the stuck request up to the drain bound (${tookMs} ms)`);
    assert.ok(tookMs < drainMs + 10_000, `stopped within the drain bound plus the snapshot (${tookMs} ms)`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    for (const pid of [npm.pid!, ...tree]) assert.ok(!alive(pid), `process ${pid} is still running after SIGTERM`);
    assert.match(output, /"msg":"SIGTERM: stopping/);
    assert.match(output, /"requests_cut":1,"msg":"stopped in \d+ ms"/);

    // Every acknowledged customer is there after a restart.
    const restarted = await startServer({ keys: [key], dataDir, shards: 2 });
    try {
      const ids = replies.map((r) => (JSON.parse(r.slice(r.indexOf('\r\n\r\n') + 4)) as { data: { id: string } }).data.id);
      const api = client(restarted.baseUrl, key);
      for (const id of ids) assert.equal((await api('GET', `/v1/customers/${id}`)).status, 200, id);
    } finally {
      await restarted.stop();
    }
  } finally {
    if (npm.exitCode === null) npm.kill('SIGKILL');
  }
});
