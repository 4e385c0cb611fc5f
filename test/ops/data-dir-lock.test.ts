// The data dir's lock (server.lock) is held by `kobo restore` and an offline `kobo snapshot` for their
// whole run, as by the server for its life: a server never starts under them (it once opened control.db
// in the dir a restore was moving aside, and a second server then died on SQLITE_CONSTRAINT_PRIMARYKEY),
// and neither command runs under the other. Real processes, frozen mid-run with SIGSTOP.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, client, idem, secretKey, startServer, tempDataDir, uniqueEmail, uniquePhone } from '../helpers/server.ts';
import { entryArgs } from '../helpers/build.ts';
import { kobo } from '../helpers/cli.ts';

const key = secretKey();
const keys = [`${key}@locks`];

/** A CLI command run in the background, frozen (SIGSTOP) at its first progress line: mid-run. */
async function frozenAtFirstStep(dataDir: string, ...args: string[]): Promise<{ child: ChildProcess; finished: Promise<{ code: number | null; stderr: string }> }> {
  const child = spawn(process.execPath, [...entryArgs('kobo'), ...args], { cwd: ROOT, env: { ...process.env, KOBO_DATA_DIR: dataDir }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  const finished = new Promise<{ code: number | null; stderr: string }>((resolve) => child.once('exit', (code) => resolve({ code, stderr })));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no progress line in 60 s:\n${stderr}`)), 60_000);
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      if (/^ {2}… /m.test(stderr) && !child.killed) {
        clearTimeout(timer);
        child.kill('SIGSTOP');
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`exited ${code} before its first progress line:\n${stderr}`)));
  });
  return { child, finished };
}

/** Starts a server on `dataDir`: 'refused' with its output, or 'started' (then stopped at once). */
async function tryServer(dataDir: string): Promise<{ outcome: 'refused' | 'started'; output: string; code: number | null }> {
  const child = spawn(process.execPath, entryArgs('main'), {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', KOBO_DATA_DIR: dataDir, KOBO_SHARDS: '1', KOBO_API_KEYS: key },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    const watch = (): void => {
      if (/listening on http/.test(output)) child.kill('SIGKILL');
    };
    child.stdout!.on('data', watch);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ outcome: /listening on http/.test(output) ? 'started' : 'refused', output, code });
    });
  });
}

async function seededDir(): Promise<{ dataDir: string; kept: string; lost: string; backup: string }> {
  const server = await startServer({ keys, shards: 1 });
  const api = client(server.baseUrl, key);
  const customer = async (): Promise<string> => {
    const r = await api('POST', '/v1/customers', { idempotencyKey: idem('c'), body: { name: 'Lock Test', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return r.body.data.id as string;
  };
  const kept = await customer();
  const backup = path.join(tempDataDir('lock-backup'), 'b.kobo');
  const snap = kobo(server.dataDir, 'snapshot', '--out', backup);
  assert.equal(snap.status, 0, snap.stderr);
  const lost = await customer();
  await server.stop();
  return { dataDir: server.dataDir, kept, lost, backup };
}

/** Paths of the shard, control and webhook databases a process has open. */
function openDatabases(pid: number): string[] {
  const dir = `/proc/${pid}/fd`;
  return fs.readdirSync(dir).map((fd) => {
    try {
      return fs.readlinkSync(path.join(dir, fd));
    } catch {
      return '';
    }
  }).filter((target) => /\.db$/.test(target));
}

test('restore holds the lock for its whole run: a server started meanwhile refuses, so does a snapshot; after it, one server opens only the restored files', { timeout: 180_000 }, async () => {
  const { dataDir, kept, lost, backup } = await seededDir();
  const restore = await frozenAtFirstStep(dataDir, 'restore', backup);
  try {
    const server = await tryServer(dataDir);
    assert.equal(server.outcome, 'refused', `a server started while the restore ran:\n${server.output}`);
    assert.equal(server.code, 1);
    assert.match(server.output, new RegExp(`in use by \`kobo restore\` \\(pid ${restore.child.pid}\\)`));
    const snap = kobo(dataDir, 'snapshot', '--out', path.join(tempDataDir('lock-snap'), 's.kobo'));
    assert.notEqual(snap.status, 0, `a snapshot ran under the restore:\n${snap.stdout}`);
    assert.match(snap.stderr, /in use by `kobo restore`/);
  } finally {
    restore.child.kill('SIGCONT');
  }
  const done = await restore.finished;
  assert.equal(done.code, 0, done.stderr);

  const server = await startServer({ keys, shards: 1, dataDir });
  try {
    const api = client(server.baseUrl, key);
    assert.equal((await api('GET', `/v1/customers/${kept}`)).status, 200, 'the backup is restored');
    assert.equal((await api('GET', `/v1/customers/${lost}`)).status, 404, 'what came after the backup is not');
    const open = openDatabases(server.child.pid!);
    assert.ok(open.some((f) => f.endsWith('control.db')) && open.some((f) => f.endsWith('webhooks.db')), open.join('\n'));
    for (const file of open) assert.equal(path.dirname(file), fs.realpathSync(dataDir), `the server has ${file} open, outside the restored dir`);
    const second = await tryServer(dataDir);
    assert.equal(second.outcome, 'refused');
    assert.match(second.output, /in use by another kobo server \(pid \d+\)/);
    assert.doesNotMatch(second.output, /CONSTRAINT/);
  } finally {
    await server.stop();
  }
});

test('an offline snapshot holds the lock for its whole run: a server and a restore started meanwhile refuse; both work after it', { timeout: 180_000 }, async () => {
  const { dataDir, kept, backup } = await seededDir();
  const out = path.join(tempDataDir('lock-offline'), 'offline.kobo');
  const snap = await frozenAtFirstStep(dataDir, 'snapshot', '--out', out);
  try {
    const server = await tryServer(dataDir);
    assert.equal(server.outcome, 'refused', `a server started while the offline snapshot wrote into its files:\n${server.output}`);
    assert.match(server.output, new RegExp(`in use by \`kobo snapshot\` \\(pid ${snap.child.pid}\\)`));
    const restore = kobo(dataDir, 'restore', backup);
    assert.notEqual(restore.status, 0, `a restore ran under the snapshot:\n${restore.stdout}`);
    assert.match(restore.stderr, /in use by `kobo snapshot`/);
  } finally {
    snap.child.kill('SIGCONT');
  }
  const done = await snap.finished;
  assert.equal(done.code, 0, done.stderr);
  assert.ok(fs.existsSync(out));
  const server = await startServer({ keys, shards: 1, dataDir });
  try {
    assert.equal((await client(server.baseUrl, key)('GET', `/v1/customers/${kept}`)).status, 200);
  } finally {
    await server.stop();
  }
});

test('a restore killed between moving the old files out and the backup in: the server refuses the dir until a restore completes', { timeout: 120_000 }, async () => {
  const { dataDir, kept, backup } = await seededDir();
  // What a restore killed mid-swap leaves: its marker (the files themselves may be either set, or a mix).
  fs.writeFileSync(path.join(dataDir, 'restore.incomplete'), 'restoring from elsewhere\n');
  const refused = await tryServer(dataDir);
  assert.equal(refused.outcome, 'refused', refused.output);
  assert.match(refused.output, /interrupted restore/);
  const restored = kobo(dataDir, 'restore', backup);
  assert.equal(restored.status, 0, restored.stderr);
  assert.ok(!fs.existsSync(path.join(dataDir, 'restore.incomplete')));
  const server = await startServer({ keys, shards: 1, dataDir });
  try {
    assert.equal((await client(server.baseUrl, key)('GET', `/v1/customers/${kept}`)).status, 200);
  } finally {
    await server.stop();
  }
});
