// Crash test: kill -9 during concurrent money-moving load, restart on the same data dir, and prove that
// every acknowledged request is still there, every idempotency key replays its response, in-flight rail
// work resumes, and `kobo verify` passes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, secretKey, startServer, uniqueEmail, uniquePhone, type TestServer } from '../helpers/server.ts';
import { kobo } from '../helpers/cli.ts';
import { mixedRequest } from '../helpers/load.ts';

interface Acked {
  method: string;
  path: string;
  key: string;
  body: unknown;
  status: number;
  response: any;
}

const LOAD_WORKERS = 6;
const LOAD_MS_MAX = 1_500;

async function setup(api: ReturnType<typeof client>, customers: number) {
  const made: Array<{ id: string; walletId: string; fundedMinor: number }> = [];
  for (let i = 0; i < customers; i += 1) {
    const c = await api('POST', '/v1/customers', { idempotencyKey: idem('c'), body: { name: `Crash ${i}`, email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
    assert.equal(c.status, 201);
    const p = await api('POST', '/v1/payments', { idempotencyKey: idem('fund'), body: { customer_id: c.body.data.id, amount_minor: 5_000_000, currency: 'NGN', method: 'bank_transfer' } });
    assert.equal(p.status, 201);
    assert.equal((await api('POST', `/v1/test_helpers/payments/${p.body.data.id}/settle`)).status, 200);
    made.push({ id: c.body.data.id, walletId: c.body.data.wallets[0].id, fundedMinor: p.body.data.net_amount_minor });
  }
  return made;
}


/** Shards on worker threads (a machine with cores to spare), and inline on the main thread (one CPU). */
for (const mode of ['threads', 'inline'] as const) {
  test(`crash (${mode} shards): kill -9 under load → acknowledged writes survive, keys replay, verify passes`, { timeout: 120_000 }, () => crashUnderLoad(mode));
}

async function crashUnderLoad(mode: 'threads' | 'inline'): Promise<void> {
  const key = secretKey();
  const env = { KOBO_SHARD_MODE: mode };
  let server: TestServer = await startServer({ keys: [`${key}@crash`], env });
  const dataDir = server.dataDir;
  let api = client(server.baseUrl, key);
  const customers = await setup(api, 8);
  const acked: Acked[] = [];
  // Requests sent but not answered before the kill: committed or not, nobody knows yet.
  const unanswered: Array<Omit<Acked, 'status' | 'response'>> = [];
  let killed = false;
  let sent = 0;
  const started = Date.now();
  const worker = async (w: number): Promise<void> => {
    for (let n = w; !killed && Date.now() - started < LOAD_MS_MAX * 2; n += LOAD_WORKERS) {
      const request = mixedRequest(customers, n);
      const k = idem(`load${w}`);
      sent += 1;
      try {
        const r = await api(request.method, request.path, { idempotencyKey: k, body: request.body });
        acked.push({ ...request, key: k, status: r.status, response: r.body });
      } catch {
        unanswered.push({ ...request, key: k }); // the server is gone: this request was never acknowledged
        return;
      }
    }
  };
  const load = Promise.all(Array.from({ length: LOAD_WORKERS }, (_, w) => worker(w)));
  await new Promise((resolve) => setTimeout(resolve, LOAD_MS_MAX / 2));
  killed = true;
  await server.kill();
  await load;
  assert.ok(acked.length >= 20, `load produced only ${acked.length} acknowledged requests`);
  assert.ok(sent > acked.length - 1);

  const crashedVerify = kobo(dataDir, 'verify');
  assert.equal(crashedVerify.status, 0, `verify after the crash failed:\n${crashedVerify.stdout}\n${crashedVerify.stderr}`);

  server = await startServer({ keys: [`${key}@crash`], dataDir, env });
  api = client(server.baseUrl, key);
  try {
    for (const a of acked) {
      const again = await api(a.method, a.path, { idempotencyKey: a.key, body: a.body });
      assert.equal(again.status, a.status, `replay of ${a.key} changed status`);
      if (a.status < 300) assert.deepEqual(again.body, a.response, `replay of ${a.key} changed its body`);
      else assert.equal(again.body.error.code, a.response.error.code);
      if (a.status === 201) {
        const id = a.response.data.id as string;
        const resource = a.path === '/v1/payments' ? 'payments' : a.path === '/v1/transactions' ? 'transactions' : 'customers';
        assert.equal((await api('GET', `/v1/${resource}/${id}`)).status, 200, `${resource} ${id} lost`);
      }
    }
    // A client retries what was never answered, with the same key: each runs at most once in all.
    for (const u of unanswered) {
      const r = await api(u.method, u.path, { idempotencyKey: u.key, body: u.body });
      const again = await api(u.method, u.path, { idempotencyKey: u.key, body: u.body });
      assert.deepEqual(again.body, r.body, `retried key ${u.key} replays`);
      acked.push({ ...u, status: r.status, response: r.body });
    }
    // Wallet payments caught in flight resume: the rail settles them after the restart.
    const walletPayments = acked.filter((a) => a.status === 201 && a.path === '/v1/payments' && (a.body as { method: string }).method === 'wallet');
    assert.ok(walletPayments.length > 0);
    const deadline = Date.now() + 10_000;
    for (const p of walletPayments) {
      let status = '';
      while (Date.now() < deadline) {
        status = (await api('GET', `/v1/payments/${p.response.data.id}`)).body.data.status;
        if (status === 'completed') break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      assert.equal(status, 'completed', `wallet payment ${p.response.data.id} did not settle after restart`);
    }
    // Balances: funding minus completed wallet payments, nothing more, nothing less.
    for (const c of customers) {
      const wallet = (await api('GET', `/v1/wallets/${c.walletId}`)).body.data;
      const spent = walletPayments.filter((p) => (p.body as { customer_id: string }).customer_id === c.id).reduce((s, p) => s + (p.body as { amount_minor: number }).amount_minor, 0);
      assert.equal(wallet.balance_minor, c.fundedMinor - spent, `wallet ${c.walletId} balance`);
      assert.equal(wallet.held_minor, 0);
    }
  } finally {
    await server.stop();
  }
  const finalVerify = kobo(dataDir, 'verify');
  assert.equal(finalVerify.status, 0, `verify after restart failed:\n${finalVerify.stdout}\n${finalVerify.stderr}`);
  assert.match(finalVerify.stdout, /ok: no violations/);
}
