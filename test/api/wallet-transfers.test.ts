// Wallet-to-wallet transfers between customers, across partitions and shards: the sender's hold,
// the receiver's credit in its own partition, and the clearing accounts that net to zero.
import { before, after, test } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, secretKey, startServer, uniqueEmail, uniquePhone, type TestServer } from '../helpers/server.ts';
import { partitionOfId } from '../../src/ids.ts';
import { kobo } from '../helpers/cli.ts';

const key = secretKey();
let server: TestServer;
let api: ReturnType<typeof client>;

before(async () => {
  server = await startServer({ keys: [`${key}@p2p`] });
  api = client(server.baseUrl, key);
});
after(async () => server.stop());

async function customer(fundMinor: number): Promise<{ id: string; walletId: string; balance: number }> {
  const c = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: { name: `P2P ${Math.random()}`, email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
  assert.equal(c.status, 201);
  let balance = 0;
  if (fundMinor > 0) {
    const p = await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: c.body.data.id, amount_minor: fundMinor, currency: 'NGN', method: 'bank_transfer' } });
    assert.equal((await api('POST', `/v1/test_helpers/payments/${p.body.data.id}/settle`)).status, 200);
    balance = p.body.data.net_amount_minor;
  }
  return { id: c.body.data.id, walletId: c.body.data.wallets[0].id, balance };
}

/** Two customers in different partitions (and, with 2 shards, on different shards when parity differs). */
async function pairAcrossShards(): Promise<[Awaited<ReturnType<typeof customer>>, Awaited<ReturnType<typeof customer>>]> {
  const sender = await customer(1_000_000);
  for (;;) {
    const receiver = await customer(0);
    if (partitionOfId(receiver.id) % 2 !== partitionOfId(sender.id) % 2) return [sender, receiver];
  }
}

async function waitFor(path: string, done: (data: any) => boolean): Promise<any> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const data = (await api('GET', path)).body.data;
    if (done(data) || Date.now() > deadline) return data;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

test('wallet beneficiary: another customer’s wallet → 201 with the holder’s name; unknown wallet → 422 VERIFICATION_FAILED; own wallet → 400', async () => {
  const [sender, receiver] = await pairAcrossShards();
  const holder = (await api('GET', `/v1/customers/${receiver.id}`)).body.data.name;
  const ok = await api('POST', '/v1/beneficiaries', { idempotencyKey: idem(), body: { customer_id: sender.id, type: 'wallet', account_number: receiver.walletId, currency: 'NGN' } });
  assert.equal(ok.status, 201, JSON.stringify(ok.body));
  assert.equal(ok.body.data.account_name, holder);
  const unknown = await api('POST', '/v1/beneficiaries', { idempotencyKey: idem(), body: { customer_id: sender.id, type: 'wallet', account_number: '01ARZ3NDEKTSV4RRFFQ69G5FAV', currency: 'NGN' } });
  assert.equal(unknown.status, 422);
  assert.equal(unknown.body.error.code, 'VERIFICATION_FAILED');
  const wrongCurrency = await api('POST', '/v1/beneficiaries', { idempotencyKey: idem(), body: { customer_id: sender.id, type: 'wallet', account_number: receiver.walletId, currency: 'USD' } });
  assert.equal(wrongCurrency.body.error.code, 'VERIFICATION_FAILED');
  const own = await api('POST', '/v1/beneficiaries', { idempotencyKey: idem(), body: { customer_id: sender.id, type: 'wallet', account_number: sender.walletId, currency: 'NGN' } });
  assert.equal(own.status, 400);
});

test('wallet transfer across shards: sender debited once, receiver credited once with its own completed transaction; verify passes', async () => {
  const [sender, receiver] = await pairAcrossShards();
  const b = (await api('POST', '/v1/beneficiaries', { idempotencyKey: idem(), body: { customer_id: sender.id, type: 'wallet', account_number: receiver.walletId, currency: 'NGN' } })).body.data;
  const t = await api('POST', '/v1/transfers', { idempotencyKey: idem(), body: { customer_id: sender.id, beneficiary_id: b.id, amount_minor: 123_456, currency: 'NGN' } });
  assert.equal(t.status, 201, JSON.stringify(t.body));
  assert.equal(t.body.data.fee_minor, 0);
  const done = await waitFor(`/v1/transfers/${t.body.data.id}`, (d) => d.status === 'completed');
  assert.equal(done.status, 'completed');
  assert.equal((await api('GET', `/v1/wallets/${sender.walletId}`)).body.data.balance_minor, sender.balance - 123_456);
  assert.equal((await api('GET', `/v1/wallets/${receiver.walletId}`)).body.data.balance_minor, 123_456);
  const verify = kobo(server.dataDir, 'verify');
  assert.equal(verify.status, 0, verify.stderr);
});

test('wallet transfer: a quote or another currency → 400; more than the wallet holds → 422 INSUFFICIENT_FUNDS', async () => {
  const [sender, receiver] = await pairAcrossShards();
  const b = (await api('POST', '/v1/beneficiaries', { idempotencyKey: idem(), body: { customer_id: sender.id, type: 'wallet', account_number: receiver.walletId, currency: 'NGN' } })).body.data;
  const short = await api('POST', '/v1/transfers', { idempotencyKey: idem(), body: { customer_id: sender.id, beneficiary_id: b.id, amount_minor: sender.balance + 1, currency: 'NGN' } });
  assert.equal(short.body.error.code, 'INSUFFICIENT_FUNDS');
  const quote = (await api('POST', '/v1/exchange/quotes', { body: { customer_id: sender.id, from_currency: 'NGN', to_currency: 'USD', from_amount_minor: 100_000 } })).body.data;
  const withQuote = await api('POST', '/v1/transfers', { idempotencyKey: idem(), body: { customer_id: sender.id, beneficiary_id: b.id, amount_minor: 100_000, currency: 'NGN', quote_id: quote.id } });
  assert.equal(withQuote.status, 400);
});
