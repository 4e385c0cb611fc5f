// Start-up refusals an operator meets: a port already taken (exclusive listen, not a second ledger on the
// same port), and configuration mistakes (one line naming the variable and what it allows, no stack).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT, client, secretKey, startServer, tempDataDir } from '../helpers/server.ts';
import { entryArgs } from '../helpers/build.ts';

interface Exited {
  code: number | null;
  stdout: string;
  stderr: string;
}

function runServer(env: Record<string, string>, timeoutMs = 30_000): Promise<Exited> {
  const child = spawn(process.execPath, entryArgs('main'), {
    cwd: ROOT,
    env: { ...process.env, HOST: '127.0.0.1', KOBO_SHARDS: '1', KOBO_DATA_DIR: tempDataDir('kobo-refused'), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

test('a second server on a port already in use exits non-zero naming the port; the first keeps serving alone', { timeout: 60_000 }, async () => {
  const key = secretKey();
  const first = await startServer({ keys: [key], shards: 1 });
  try {
    const second = await runServer({ PORT: String(first.port), KOBO_API_KEYS: secretKey() });
    assert.notEqual(second.code, 0, 'the second server must not start');
    assert.equal(second.code, 1);
    const lines = second.stderr.trim().split('\n');
    assert.equal(lines.length, 1, `one clear line, got:\n${second.stderr}`);
    assert.match(lines[0]!, new RegExp(`cannot listen on 127\\.0\\.0\\.1:${first.port}: the port is in use`));
    assert.doesNotMatch(second.stdout, /listening on|recovered/, 'refused before recovery');
    // Every request reaches the first server's ledger: its key works ten times out of ten.
    const api = client(first.baseUrl, key);
    for (let i = 0; i < 10; i += 1) assert.equal((await api('GET', '/v1/test_helpers/clock')).status, 200);
  } finally {
    await first.stop();
  }
});

test('config mistakes: one line naming the variable and the allowed values, no stack, no JSON pointer', { timeout: 60_000 }, async () => {
  const badConnectorsFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'kobo-connectors-')), 'connectors.json');
  fs.writeFileSync(badConnectorsFile, JSON.stringify([{ name: 'bank', url: 'https://bank.example', secret: 'short', rails: ['payout'] }]));
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{ PORT: '' }, /^kobo: config: PORT is set but empty; unset it to use the default \(8080\) or give an integer$/],
    [{ PORT: '70000' }, /^kobo: config: PORT must be an integer from 0 to 65535, got "70000"$/],
    [{ KOBO_SHARDS: '100' }, /^kobo: config: KOBO_SHARDS must be an integer from 1 to 64, got "100"$/],
    [{ KOBO_LOG_LEVEL: 'verbose' }, /^kobo: config: KOBO_LOG_LEVEL must be one of silent, error, warn, info, debug, got "verbose"$/],
    [{ KOBO_DATA_DIR: '' }, /^kobo: config: KOBO_DATA_DIR is set but empty/],
    [{ KOBO_DRAIN_MS: 'soon' }, /^kobo: config: KOBO_DRAIN_MS must be an integer, got "soon"$/],
    [{ KOBO_CONNECTORS_FILE: path.join(os.tmpdir(), 'kobo-no-such-connectors.json') }, /^kobo: config: KOBO_CONNECTORS_FILE .*kobo-no-such-connectors\.json does not exist$/],
    [{ KOBO_CONNECTORS_FILE: badConnectorsFile }, /^kobo: config: KOBO_CONNECTORS_FILE .*: .*secret/],
    [{ KOBO_API_KEYS: 'sk_test_short' }, /^kobo: config: KOBO_API_KEYS entry sk_test_shor… is not a secret key/],
    [{ KOBO_API_KEYS: `${secretKey()},sk_test_abcdefgh!secretpart` }, /^kobo: config: KOBO_API_KEYS entry sk_test_abcd… is not a secret key \(sk_test_ or sk_live_/],
    [{ KOBO_API_KEYS: 'sk_test_abcdefgh12@' }, /^kobo: config: KOBO_API_KEYS entry sk_test_abcd… has an empty account name after @$/],
    [{ KOBO_SNAPSHOT_INTERVAL_MS: '1' }, /^kobo: config: KOBO_SNAPSHOT_INTERVAL_MS must be one of 0, an integer from 100 to 86400000, got "1"$/],
    [{ KOBO_PUBLIC_URL: 'pay.example.com' }, /^kobo: config: KOBO_PUBLIC_URL must be an http:\/\/ or https:\/\/ base URL without query or fragment, got "pay.example.com"$/],
    [{ KOBO_FX_BAND_BPS: '0' }, /^kobo: config: KOBO_FX_BAND_BPS must be an integer from 1 to 10000, got "0"$/],
    [{ KOBO_FX_PAIR_BANDS_BPS: 'NGN-USD:500' }, /^kobo: config: KOBO_FX_PAIR_BANDS_BPS must be a comma-separated list of FROM\/TO:BPS/],
    [{ KOBO_FX_PAIR_BANDS_BPS: 'NGN/USD:20000' }, /^kobo: config: KOBO_FX_PAIR_BANDS_BPS must be a comma-separated list of FROM\/TO:BPS/],
    [{ KOBO_FX_PAIR_BANDS_BPS: 'NGN/XOF:500' }, /^kobo: config: KOBO_FX_PAIR_BANDS_BPS: NGN\/XOF is not a pair kobo has reference rates for/],
    [{ KOBO_FX_PAIR_BANDS_BPS: 'NGN/USD:500,USD/NGN:800' }, /^kobo: config: KOBO_FX_PAIR_BANDS_BPS: USD\/NGN appears twice/],
    [{ KOBO_RATE_LIMIT_CALLBACKS_PER_MIN: '0' }, /^kobo: config: KOBO_RATE_LIMIT_CALLBACKS_PER_MIN must be an integer of at least 1, got "0"$/],
    [{ KOBO_METRICS_TOKEN: ' s3cret ' }, /^kobo: config: KOBO_METRICS_TOKEN must be a token without leading or trailing whitespace \(empty: none\), got \(value not shown: it is a secret\)$/],
  ];
  // Config is checked before anything starts, so the runs are independent: run them side by side.
  const runs = await Promise.all(cases.map(([env]) => runServer({ PORT: '0', ...env })));
  cases.forEach(([env, expected], i) => {
    const run = runs[i]!;
    assert.equal(run.code, 78, `${JSON.stringify(env)} exits with EX_CONFIG:\n${run.stderr}`);
    const lines = run.stderr.trim().split('\n');
    assert.equal(lines.length, 1, `${JSON.stringify(env)}: one line, got:\n${run.stderr}`);
    assert.match(lines[0]!, expected);
    assert.doesNotMatch(run.stderr, /\n\s+at |\/port|\/shards/, 'no stack trace or JSON pointer');
    assert.equal(run.stdout, '', 'nothing started');
    assert.doesNotMatch(run.stderr, /secretpart|s3cret/, 'a secret is never printed');
  });
});

test('a config mistake is found before the data dir is touched: none is created', { timeout: 60_000 }, async () => {
  const dataDir = path.join(tempDataDir('kobo-untouched'), 'data');
  const run = await runServer({ PORT: '0', KOBO_DATA_DIR: dataDir, KOBO_API_KEYS: 'sk_test_short' });
  assert.equal(run.code, 78, run.stderr);
  assert.equal(fs.existsSync(dataDir), false, 'no data dir, layout.json or server.pid was made');
});

test('a restarted data dir keeps its recorded shard count when KOBO_SHARDS is not given', { timeout: 60_000 }, async () => {
  const key = secretKey();
  // 1 shard: not the CPU-count default of a multi-core machine, which the old code fell back to.
  const created = await startServer({ keys: [key], shards: 1 });
  await created.stop();
  const again = await startServer({ keys: [key], dataDir: created.dataDir, shards: null });
  try {
    assert.match(again.output(), /1 shard\(s\)/);
    assert.equal((await client(again.baseUrl, key)('GET', '/v1/test_helpers/clock')).status, 200);
  } finally {
    await again.stop();
  }
});

test('KOBO_LOG_LEVEL=warn: no request lines, but the start and stop lines a supervisor waits for remain', { timeout: 60_000 }, async () => {
  const key = secretKey();
  const server = await startServer({ keys: [key], shards: 1, env: { KOBO_LOG_LEVEL: 'warn' } });
  assert.equal((await client(server.baseUrl, key)('GET', '/v1/test_helpers/clock')).status, 200);
  await server.stop();
  assert.match(server.output(), /"msg":"listening on http:\/\/127\.0\.0\.1:\d+/);
  assert.match(server.output(), /"msg":"stopped in \d+ ms"/);
  assert.doesNotMatch(server.output(), /"msg":"request"/);
});

test('one server per data dir: a second is refused naming the first; a leftover server.pid naming a live process (PID reuse) does not block a start', { timeout: 60_000 }, async () => {
  const key = secretKey();
  const first = await startServer({ keys: [key], shards: 1 });
  try {
    const second = await runServer({ PORT: '0', KOBO_DATA_DIR: first.dataDir, KOBO_API_KEYS: key });
    assert.equal(second.code, 1, second.stderr);
    assert.match(second.stderr, new RegExp(`in use by another kobo server \\(pid ${first.child.pid}\\)`));
    assert.equal((await client(first.baseUrl, key)('GET', '/v1/test_helpers/clock')).status, 200, 'the first keeps serving');
  } finally {
    await first.kill();
  }
  // kill -9 left server.pid behind; make it name a live process that is not kobo (this test runner).
  fs.writeFileSync(path.join(first.dataDir, 'server.pid'), String(process.pid));
  const again = await startServer({ keys: [key], shards: 1, dataDir: first.dataDir });
  try {
    assert.equal((await client(again.baseUrl, key)('GET', '/v1/test_helpers/clock')).status, 200);
  } finally {
    await again.stop();
  }
});

test('a data dir that cannot be made (under /proc, under a file) → exit 1 with one line, at once', { timeout: 60_000 }, async () => {
  for (const [dataDir, expected] of [['/proc/kobo-nope/data', /cannot create \/proc\/kobo-nope/], ['/etc/hostname/data', /\/etc\/hostname is not a directory/]] as const) {
    const started = Date.now();
    const run = await runServer({ PORT: '0', KOBO_DATA_DIR: dataDir, KOBO_API_KEYS: secretKey() }, 15_000);
    assert.equal(run.code, 1, `${dataDir}: ${run.stderr}`);
    const lines = run.stderr.trim().split('\n');
    assert.equal(lines.length, 1, run.stderr);
    assert.match(lines[0]!, expected);
    assert.ok(Date.now() - started < 10_000, 'no hang');
  }
});
