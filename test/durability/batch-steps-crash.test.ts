// Crash at every step of a batch: the server kills itself (SIGKILL, through KOBO_TEST_CRASH_AT) right
// after a named step — the log row appended but not synced, synced but no reply sent, replies handed
// over, derived rows written, a snapshot image written, log segments truncated — under concurrent load.
// After a restart every acknowledged request replays its exact reply, its resource reads back, a retried
// unanswered request runs at most once, and `kobo verify` finds the ledger and every row sound.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, secretKey, startServer, uniqueEmail, uniquePhone, type TestServer } from '../helpers/server.ts';
import { kobo } from '../helpers/cli.ts';
import { mixedRequest } from '../helpers/load.ts';
import { CRASH_POINTS, type CrashPoint } from '../../src/shard/crash-points.ts';

interface Sent {
  method: string;
  path: string;
  key: string;
  body: unknown;
}

interface Acked extends Sent {
  status: number;
  response: any;
}

const LOAD_WORKERS = 4;
/** The load stops by itself after this long, crash or not (a point never reached fails the test). */
const LOAD_MS_MAX = 8_000;
/**
 * Which passage of each point kills: late enough that earlier batches, images and truncations are behind
 * it, and that at least ten requests were answered (a batch may hold one request, and the restart's own
 * batches pass the point too: at 12 a run once had only 9 answers).
 */
const PASSAGE: Record<CrashPoint, number> = {
  'log.appended': 20,
  'log.synced': 20,
  'replies.sent': 20,
  // Derived rows go into the derived file a chunk a turn, about once a batch (#22): counted like the log's steps.
  'derived.written': 25,
  'snapshot.written': 3,
  'log.truncated': 2,
};
/** Small cadences so that images, derived writes and truncations all happen within a second of load. */
const CADENCE_ENV = { KOBO_SNAPSHOT_EVERY_RECORDS: '25', KOBO_WAL_RETAIN_RECORDS: '0', KOBO_WAL_SEGMENT_RECORDS: '16' };


async function fundedCustomers(api: ReturnType<typeof client>, count: number): Promise<Array<{ id: string }>> {
  const made: Array<{ id: string }> = [];
  for (let i = 0; i < count; i += 1) {
    const c = await api('POST', '/v1/customers', { idempotencyKey: idem('c'), body: { name: `Batch ${i}`, email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
    assert.equal(c.status, 201);
    const p = await api('POST', '/v1/payments', { idempotencyKey: idem('fund'), body: { customer_id: c.body.data.id, amount_minor: 5_000_000, currency: 'NGN', method: 'bank_transfer' } });
    assert.equal(p.status, 201);
    assert.equal((await api('POST', `/v1/test_helpers/payments/${p.body.data.id}/settle`)).status, 200);
    made.push({ id: c.body.data.id });
  }
  return made;
}

const RESOURCE: Record<string, string> = { '/v1/payments': 'payments', '/v1/transactions': 'transactions', '/v1/customers': 'customers' };

async function crashAtStep(point: CrashPoint, mode: 'threads' | 'inline'): Promise<void> {
  const key = secretKey();
  const keys = [`${key}@steps`];
  // The customers are made before the crash point is armed: a clean start, then a restart armed.
  let server: TestServer = await startServer({ keys, env: { KOBO_SHARD_MODE: mode, ...CADENCE_ENV } });
  const dataDir = server.dataDir;
  const customers = await fundedCustomers(client(server.baseUrl, key), 4);
  await server.stop();
  server = await startServer({ keys, dataDir, env: { KOBO_SHARD_MODE: mode, ...CADENCE_ENV, KOBO_TEST_CRASH_AT: `${point}:${PASSAGE[point]}` } });
  const api = client(server.baseUrl, key);
  const acked: Acked[] = [];
  const unanswered: Sent[] = [];
  const started = Date.now();
  const worker = async (w: number): Promise<void> => {
    for (let n = w; Date.now() - started < LOAD_MS_MAX; n += LOAD_WORKERS) {
      const sent = { ...mixedRequest(customers, n, 'Step'), key: idem(`step${w}`) };
      try {
        const r = await api(sent.method, sent.path, { idempotencyKey: sent.key, body: sent.body });
        acked.push({ ...sent, status: r.status, response: r.body });
      } catch {
        unanswered.push(sent); // the server is gone: never acknowledged
        return;
      }
    }
  };
  await Promise.all(Array.from({ length: LOAD_WORKERS }, (_, w) => worker(w)));
  await server.kill();
  assert.equal(server.child.signalCode, 'SIGKILL', `the server did not die at ${point}:\n${server.output().slice(-2_000)}`);
  assert.ok(Date.now() - started < LOAD_MS_MAX, `${point} was never reached within ${LOAD_MS_MAX} ms of load`);
  assert.ok(acked.length >= 10, `only ${acked.length} requests were acknowledged before ${point}`);

  const crashedVerify = kobo(dataDir, 'verify');
  assert.equal(crashedVerify.status, 0, `verify after a crash at ${point} failed:\n${crashedVerify.stdout}\n${crashedVerify.stderr}`);

  server = await startServer({ keys, dataDir, env: { KOBO_SHARD_MODE: mode, ...CADENCE_ENV } });
  const again = client(server.baseUrl, key);
  try {
    for (const a of acked) {
      const replay = await again(a.method, a.path, { idempotencyKey: a.key, body: a.body });
      assert.equal(replay.status, a.status, `${point}: replay of ${a.key} changed status`);
      if (a.status < 300) assert.deepEqual(replay.body, a.response, `${point}: replay of ${a.key} changed its body`);
      else assert.equal(replay.body.error.code, a.response.error.code);
      if (a.status === 201) {
        const id = a.response.data.id as string;
        assert.equal((await again('GET', `/v1/${RESOURCE[a.path]}/${id}`)).status, 200, `${point}: ${a.path} ${id} lost`);
      }
    }
    for (const u of unanswered) {
      const first = await again(u.method, u.path, { idempotencyKey: u.key, body: u.body });
      const second = await again(u.method, u.path, { idempotencyKey: u.key, body: u.body });
      assert.equal(second.status, first.status);
      assert.deepEqual(second.body, first.body, `${point}: a retried unanswered key ran twice`);
    }
  } finally {
    await server.stop();
  }
  const finalVerify = kobo(dataDir, 'verify');
  assert.equal(finalVerify.status, 0, `verify after restart (${point}) failed:\n${finalVerify.stdout}\n${finalVerify.stderr}`);
  assert.match(finalVerify.stdout, /ok: no violations/);
}

for (const point of CRASH_POINTS) {
  // Threads for the steps where a reply crosses from a worker to the main thread; inline for all.
  const modes = point === 'log.synced' || point === 'replies.sent' ? (['threads', 'inline'] as const) : (['inline'] as const);
  for (const mode of modes) {
    test(`crash at ${point} (${mode} shards): kill -9 at that step of a batch → nothing acknowledged lost, keys replay, verify clean`, { timeout: 90_000 }, () => crashAtStep(point, mode));
  }
}

test('KOBO_TEST_CRASH_AT: a malformed value → start-up refused with one line naming the points', async () => {
  await assert.rejects(startServer({ env: { KOBO_TEST_CRASH_AT: 'log.appended' } }), /KOBO_TEST_CRASH_AT must be <point>:<n>.*log\.appended/);
  await assert.rejects(startServer({ env: { KOBO_TEST_CRASH_AT: 'disk.full:3' } }), /KOBO_TEST_CRASH_AT must be/);
});
