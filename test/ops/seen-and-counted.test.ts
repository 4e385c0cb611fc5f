// What an operator sees and counts, over a real server's stdout, stderr and /metrics: a warn line per
// failed webhook attempt and per subscription disabled, the webhook backlog gauges, account and key id
// in the request log (never the secret), kobo_build_info, unknown KOBO_* settings named at start, the
// connectors loaded listed, a missing connectors file named as missing, the first secret kept out of
// the JSON log. Real processes and receivers on 127.0.0.1.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ControlStore } from '../../src/store/control-store.ts';
import { KNOWN_VARIABLES, unknownSettings } from '../../src/config.ts';
import { editDistance, nearestName } from '../../src/ops/nearest-name.ts';
import { ROOT, entryArgs } from '../helpers/build.ts';
import { client, idem, secretKey, startServer, tempDataDir, uniqueEmail, uniquePhone, type TestServer } from '../helpers/server.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { connectorsFile } from '../helpers/connector.ts';

type Api = ReturnType<typeof client>;

/** Polls `check` every 10 ms until it holds; throws after `timeoutMs`. */
async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms: ${check.toString()}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
type Line = Record<string, any>;

const keyA = secretKey();
const keyB = secretKey();
let server: TestServer;
let failing: Receiver;
let failingOnce: Receiver;
const apiA = (): Api => client(server.baseUrl, keyA);
const apiB = (): Api => client(server.baseUrl, keyB);

/** The JSON lines of the server's output (stdout and stderr interleaved; other lines skipped). */
function lines(): Line[] {
  return server.output().split('\n').flatMap((text) => {
    if (!text.startsWith('{')) return [];
    try {
      return [JSON.parse(text) as Line];
    } catch {
      return [];
    }
  });
}

async function metric(name: string, labels: string): Promise<number | null> {
  const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}} `));
  return line === undefined ? null : Number(line.slice(line.lastIndexOf(' ') + 1));
}

async function subscribe(on: Api, url: string): Promise<string> {
  const r = await on('POST', '/v1/webhooks/subscriptions', { body: { url, events: ['payment.completed'] } });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body.data.id as string;
}

/** A collection that completes: one payment.completed event. */
async function completedPayment(on: Api): Promise<void> {
  const c = await on('POST', '/v1/customers', { idempotencyKey: idem(), body: { name: 'Hook', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
  assert.equal(c.status, 201, JSON.stringify(c.body));
  const p = await on('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: c.body.data.id, amount_minor: 100_000, currency: 'NGN', method: 'bank_transfer' } });
  assert.equal(p.status, 201, JSON.stringify(p.body));
  assert.equal((await on('POST', `/v1/test_helpers/payments/${p.body.data.id}/settle`)).status, 200);
}

before(async () => {
  failing = await startReceiver('/hooks/a');
  failing.behave({ status: 500 });
  failingOnce = await startReceiver('/hooks/b');
  failingOnce.behave({ status: 503 });
  const connectors = connectorsFile([{ name: 'ng-bank', url: 'http://127.0.0.1:9', secret: 'a-long-shared-secret-123', rails: ['payout', 'resolve'], countries: ['NG'] }]);
  server = await startServer({
    keys: [`${keyA}@acme`, `${keyB}@globex`],
    shards: 1,
    env: {
      KOBO_WEBHOOK_DISABLE_AFTER: '1',
      KOBO_WEBHOOK_TICK_MS: '25',
      KOBO_CONNECTORS_FILE: connectors,
      KOBO_RATE_LIMT_READ_PER_MIN: '5',
      KOBO_NONSENSE_ENTIRELY_UNLIKE: '1',
    },
  });
});

after(async () => {
  await server?.stop();
  await Promise.all([failing?.close(), failingOnce?.close()]);
});

describe('webhooks: seen and counted', () => {
  it('failed attempts → one warn line each (host only, never the URL\'s token); a second failure past KOBO_WEBHOOK_DISABLE_AFTER=1 → a warn line naming the disabled subscription', async () => {
    const subscriptionId = await subscribe(apiA(), `${failing.url}?token=hush-hush-token`);
    await completedPayment(apiA());
    await completedPayment(apiA());
    await failing.waitFor(2);
    await waitFor(() => lines().some((l) => l.level === 'warn' && l.subscription_id === subscriptionId && /disabled/.test(l.msg)), 5_000);
    const failed = lines().filter((l) => l.level === 'warn' && l.subscription_id === subscriptionId && l.msg.startsWith('webhook delivery failed'));
    assert.equal(failed.length, 2, JSON.stringify(failed));
    for (const line of failed) {
      assert.equal(line.attempt, 1);
      assert.equal(line.status_code, 500);
      assert.equal(line.error, 'HTTP 500');
      assert.equal(line.event_type, 'payment.completed');
      assert.equal(line.host, new URL(failing.url).host);
      assert.match(line.delivery_id, /^[0-9A-Z]{26}$/);
      assert.match(line.next_attempt_at, /^\d{4}-\d\d-\d\dT/);
      assert.match(line.msg, /attempt 1 of 7: HTTP 500; next attempt at /);
    }
    const disabled = lines().filter((l) => l.level === 'warn' && l.subscription_id === subscriptionId && /disabled/.test(l.msg));
    assert.equal(disabled.length, 1);
    assert.equal(disabled[0]!.consecutive_failures, 2);
    assert.match(disabled[0]!.msg, new RegExp(`kobo webhooks enable ${subscriptionId}`));
    assert.doesNotMatch(server.output(), /hush-hush-token/);
  });

  it('backlog gauges: pending deliveries by subscription status; the oldest one\'s age follows its owner\'s clock', async () => {
    await subscribe(apiB(), failingOnce.url);
    await completedPayment(apiB());
    await failingOnce.waitFor(1);
    await waitFor(async () => (await metric('kobo_webhook_backlog_deliveries', 'subscription_status="active"')) === 1, 5_000);
    // acme's two deliveries wait (retries due in 30 s) behind a disabled subscription; globex's one is still active.
    assert.equal(await metric('kobo_webhook_backlog_deliveries', 'subscription_status="disabled"'), 2);
    const before = await metric('kobo_webhook_oldest_pending_age_seconds', 'subscription_status="active"');
    assert.ok(before !== null && before >= 0 && before < 60, String(before));
    assert.equal((await apiB()('POST', '/v1/test_helpers/clock/advance', { body: { seconds: 600 } })).status, 200);
    const advanced = await metric('kobo_webhook_oldest_pending_age_seconds', 'subscription_status="active"');
    assert.ok(advanced !== null && advanced >= 600 && advanced < 700, String(advanced));
  });
});

describe('request log and build info', () => {
  it('request log: account and key id of the key that authenticated; null without one; the secret never', async () => {
    const store = new ControlStore(server.dataDir);
    const keyId = store.findBySecret(keyA)?.id;
    store.close();
    assert.match(keyId ?? '', /^key_/);
    const keyed = await apiA()('GET', '/v1/test_helpers/clock');
    const anonymous = await apiA()('GET', '/v1/countries', { key: null });
    const refused = await apiA()('GET', '/v1/test_helpers/clock', { key: secretKey() });
    const find = async (requestId: string | null): Promise<Line> => {
      let found: Line | undefined;
      await waitFor(() => (found = lines().find((l) => l.req_id === requestId)) !== undefined, 2_000);
      return found!;
    };
    const keyedLine = await find(keyed.headers.get('x-request-id'));
    assert.equal(keyedLine.account, 'acme');
    assert.equal(keyedLine.key_id, keyId);
    for (const response of [anonymous, refused]) {
      const line = await find(response.headers.get('x-request-id'));
      assert.equal(line.account, null);
      assert.equal(line.key_id, null);
    }
    assert.doesNotMatch(server.output(), new RegExp(keyA), 'the secret is never logged');
  });

  it('kobo_build_info: 1, with package.json\'s version, this Node\'s version and the commit dist/ was built from', async () => {
    const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
    const match = /^kobo_build_info\{version="([^"]+)",node_version="([^"]+)",commit="([^"]+)"\} 1$/m.exec(text);
    assert.ok(match, text.split('\n').filter((l) => l.includes('build_info')).join('\n'));
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
    assert.equal(match[1], pkg.version);
    assert.equal(match[2], process.version);
    const commit = match[3]!;
    if (process.env.KOBO_TEST_FROM_SOURCE === '1') assert.equal(commit, 'unknown');
    else {
      assert.match(commit, /^[0-9a-f]{12}(-dirty)?$/);
      const known = spawnSync('git', ['cat-file', '-e', `${commit.slice(0, 12)}^{commit}`], { cwd: ROOT });
      assert.equal(known.status, 0, `${commit} is a commit of this repository`);
    }
  });
});

describe('start-up lines', () => {
  it('unknown KOBO_* settings → a warn line each, with the nearest known name when one is close; known ones → none', () => {
    const unknown = lines().filter((l) => l.level === 'warn' && typeof l.variable === 'string');
    assert.deepEqual(unknown.map((l) => [l.variable, l.nearest]), [['KOBO_NONSENSE_ENTIRELY_UNLIKE', null], ['KOBO_RATE_LIMT_READ_PER_MIN', 'KOBO_RATE_LIMIT_READ_PER_MIN']]);
    assert.match(unknown[1]!.msg, /^unknown setting KOBO_RATE_LIMT_READ_PER_MIN is ignored; did you mean KOBO_RATE_LIMIT_READ_PER_MIN\?$/);
  });

  it('unknownSettings / nearestName: one typo → named; PORT and HOST are not KOBO_ settings; far names → no guess', () => {
    assert.deepEqual(unknownSettings({ KOBO_SHARD: '2', KOBO_SHARDS: '2', PORT: '1', KOBO_DATADIR: 'x' }), [
      { name: 'KOBO_DATADIR', nearest: 'KOBO_DATA_DIR' },
      { name: 'KOBO_SHARD', nearest: 'KOBO_SHARDS' },
    ]);
    assert.equal(editDistance('kitten', 'sitting'), 3);
    assert.equal(nearestName('KOBO_QWERTYUIOP', ['KOBO_SHARDS', 'KOBO_DATA_DIR']), null);
  });

  it('KNOWN_VARIABLES: every KOBO_* name src/config.ts mentions is known (a new setting cannot be warned about as unknown)', () => {
    const text = fs.readFileSync(path.join(ROOT, 'src', 'config.ts'), 'utf8');
    const mentioned = new Set(text.match(/KOBO_[A-Z0-9_]*[A-Z0-9]/g));
    assert.ok(mentioned.size > 30, 'the scan finds the settings');
    assert.deepEqual([...mentioned].filter((name) => !KNOWN_VARIABLES.includes(name)), []);
    assert.deepEqual(unknownSettings(Object.fromEntries(KNOWN_VARIABLES.map((name) => [name, '1']))), []);
  });

  it('connectors: the loaded ones are listed at start with their rails', () => {
    const line = lines().find((l) => Array.isArray(l.connectors));
    assert.ok(line, server.output());
    assert.deepEqual(line.connectors, [{ name: 'ng-bank', rails: ['payout', 'resolve'] }]);
    assert.equal(line.msg, 'connectors loaded: ng-bank (payout, resolve)');
  });
});

/** Runs the server until it listens (or exits), keeping stdout and stderr apart. */
async function startApart(env: Record<string, string>): Promise<{ stdout: () => string; stderr: () => string; port: number | null; stop: () => Promise<void> }> {
  const child = spawn(process.execPath, entryArgs('main'), {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', KOBO_SHARDS: '1', KOBO_API_KEYS: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const port = await Promise.race([
    waitFor(() => /listening on http:\/\/127\.0\.0\.1:\d+/.test(stdout), 30_000).then(() => Number(/127\.0\.0\.1:(\d+)/.exec(stdout)![1])),
    exited.then(() => null),
  ]);
  return {
    stdout: () => stdout,
    stderr: () => stderr,
    port,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

describe('first start and a missing connectors file', () => {
  it('first start without keys: the new sandbox secret goes to stderr only; every stdout line is JSON and none holds it; the secret works', { timeout: 60_000 }, async () => {
    const run = await startApart({ KOBO_DATA_DIR: tempDataDir('kobo-first') });
    try {
      assert.ok(run.port !== null, run.stderr());
      // stderr and stdout are two pipes: the secret may arrive after the listening line.
      await waitFor(() => /sandbox secret key/.test(run.stderr()), 5_000);
      const match = /sandbox secret key \(shown once, store it now\): (sk_test_\S+)/.exec(run.stderr());
      assert.ok(match, run.stderr());
      const secret = match[1]!;
      await new Promise((resolve) => setTimeout(resolve, 300));
      for (const text of run.stdout().split('\n').filter((l) => l !== '')) JSON.parse(text);
      assert.doesNotMatch(run.stdout(), /sk_test_|sandbox secret/);
      const clock = await client(`http://127.0.0.1:${run.port}`, secret)('GET', '/v1/test_helpers/clock');
      assert.equal(clock.status, 200);
    } finally {
      await run.stop();
    }
  });

  it('KOBO_CONNECTORS_FILE naming no file → one line saying it does not exist (not "cannot be read as JSON"), exit 78', { timeout: 60_000 }, async () => {
    const missing = path.join(tempDataDir('kobo-noconn'), 'connectors.json');
    const run = await startApart({ KOBO_DATA_DIR: tempDataDir('kobo-noconn-data'), KOBO_CONNECTORS_FILE: missing });
    await run.stop();
    assert.equal(run.port, null);
    assert.equal(run.stderr(), `kobo: config: KOBO_CONNECTORS_FILE ${missing} does not exist\n`);
  });
});
