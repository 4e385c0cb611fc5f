// A wallet transfer between partitions on different shards is two durable steps (sender's hold, then
// the receiver's credit; then the sender posts). Kill -9 before and between the steps: after restart
// the transfer completes, the receiver is credited exactly once, and `kobo verify` passes throughout.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, secretKey, startServer, uniqueEmail, uniquePhone, type TestServer } from '../helpers/server.ts';
import { partitionOfId } from '../../src/ids.ts';
import { kobo } from '../helpers/cli.ts';
import { until } from '../helpers/wait.ts';

const key = secretKey();
const keys = [`${key}@xp`];
const AMOUNT_MINOR = 250_000;

type Api = ReturnType<typeof client>;

async function customer(api: Api, fundMinor: number): Promise<{ id: string; walletId: string; balance: number }> {
  const c = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: { name: 'Cross', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
  let balance = 0;
  if (fundMinor > 0) {
    const p = await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: c.body.data.id, amount_minor: fundMinor, currency: 'NGN', method: 'bank_transfer' } });
    assert.equal((await api('POST', `/v1/test_helpers/payments/${p.body.data.id}/settle`)).status, 200);
    balance = p.body.data.net_amount_minor;
  }
  return { id: c.body.data.id, walletId: c.body.data.wallets[0].id, balance };
}


async function scenario(killAt: 'before-credit' | 'between-steps'): Promise<void> {
  // A slow rail widens the windows: the submit waits 1.5 s, and so does the sender's confirmation.
  let server: TestServer = await startServer({ keys, env: { KOBO_RAIL_LATENCY_MS: '1500' } });
  let api = client(server.baseUrl, key);
  const sender = await customer(api, 1_000_000);
  let receiver = await customer(api, 0);
  while (partitionOfId(receiver.id) % 2 === partitionOfId(sender.id) % 2) receiver = await customer(api, 0);
  const b = (await api('POST', '/v1/beneficiaries', { idempotencyKey: idem(), body: { customer_id: sender.id, type: 'wallet', account_number: receiver.walletId, currency: 'NGN' } })).body.data;
  const t = await api('POST', '/v1/transfers', { idempotencyKey: idem(), body: { customer_id: sender.id, beneficiary_id: b.id, amount_minor: AMOUNT_MINOR, currency: 'NGN' } });
  assert.equal(t.status, 201);
  if (killAt === 'between-steps') {
    await until(() => api('GET', `/v1/wallets/${receiver.walletId}`).then((r) => r.body.data.balance_minor as number), (v) => v === AMOUNT_MINOR, 'the credit', 10_000);
    assert.equal((await api('GET', `/v1/transfers/${t.body.data.id}`)).body.data.status, 'processing', 'the sender has not posted yet');
  }
  await server.kill();

  const crashed = kobo(server.dataDir, 'verify');
  assert.equal(crashed.status, 0, `verify on the crashed data dir:\n${crashed.stdout}\n${crashed.stderr}`);

  server = await startServer({ keys, dataDir: server.dataDir });
  api = client(server.baseUrl, key);
  try {
    const done = await until(() => api('GET', `/v1/transfers/${t.body.data.id}`).then((r) => r.body.data), (d) => d.status === 'completed', 'completion', 10_000);
    assert.equal(done.status, 'completed');
    assert.equal((await api('GET', `/v1/wallets/${receiver.walletId}`)).body.data.balance_minor, AMOUNT_MINOR, 'credited exactly once');
    const senderWallet = (await api('GET', `/v1/wallets/${sender.walletId}`)).body.data;
    assert.equal(senderWallet.balance_minor, sender.balance - AMOUNT_MINOR);
    assert.equal(senderWallet.held_minor, 0);
  } finally {
    await server.stop();
  }
  const verify = kobo(server.dataDir, 'verify');
  assert.equal(verify.status, 0, verify.stderr);
}

test('crash: kill -9 after the sender’s hold, before the receiver’s credit → completes once after restart', { timeout: 90_000 }, () => scenario('before-credit'));
test('crash: kill -9 between the receiver’s credit and the sender’s post → completes once after restart', { timeout: 90_000 }, () => scenario('between-steps'));
