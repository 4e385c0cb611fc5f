// Load for cluster tests: a fixture (funded sender, beneficiary, payers), a mix of payments, wallet
// transfers and service orders driven through chosen nodes, and the replay that finds every
// acknowledged request again. Test-side only. Invariant: every 2xx a writer saw is recorded.
import assert from 'node:assert/strict';
import { client, idem, uniqueEmail, uniquePhone } from './server.ts';

export type Api = ReturnType<typeof client>;

export interface Acked {
  path: string;
  idempotencyKey: string;
  body: unknown;
  status: number;
  reply: unknown;
  /** How long the request took, from its send to its answer. */
  ms: number;
}

export interface Fixture {
  sender: { id: string };
  beneficiary: string;
  payers: string[];
}

async function customer(api: Api): Promise<{ id: string }> {
  const r = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: { name: 'Node', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body.data;
}

export async function fixture(api: Api): Promise<Fixture> {
  const sender = await customer(api);
  // tier_3 and NGN 5,000,000.00: a fast machine's load never runs the sender dry or past its daily limit.
  assert.equal((await api('PATCH', `/v1/customers/${sender.id}`, { body: { tier: 'tier_3' } })).status, 200);
  const p = await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: sender.id, amount_minor: 500_000_000, currency: 'NGN', method: 'bank_transfer' } });
  assert.equal(p.status, 201, JSON.stringify(p.body));
  assert.equal((await api('POST', `/v1/test_helpers/payments/${p.body.data.id}/settle`)).status, 200);
  const receiver = await customer(api);
  const walletId = (await api('GET', `/v1/customers/${receiver.id}`)).body.data.wallets[0].id;
  const b = await api('POST', '/v1/beneficiaries', { idempotencyKey: idem(), body: { customer_id: sender.id, type: 'wallet', account_number: walletId, currency: 'NGN' } });
  assert.equal(b.status, 201, JSON.stringify(b.body));
  const payers = [await customer(api), await customer(api)].map((c) => c.id);
  return { sender, beneficiary: b.body.data.id, payers };
}

/** The i-th request of the mix: a payment, a wallet transfer, or a service order paid from the wallet. */
function requestOf(f: Fixture, i: number): { path: string; body: unknown } {
  switch (i % 3) {
    case 0:
      return { path: '/v1/payments', body: { customer_id: f.payers[i % 2], amount_minor: 10_000 + i, currency: 'NGN', method: 'bank_transfer' } };
    case 1:
      return { path: '/v1/transfers', body: { customer_id: f.sender.id, beneficiary_id: f.beneficiary, amount_minor: 100, currency: 'NGN' } };
    default:
      return { path: '/v1/services/orders', body: { customer_id: f.sender.id, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 10_000, currency: 'NGN', payment_method: 'wallet', phone: '+2348031234567' } };
  }
}

/** Concurrent writers through the nodes `apis()` until `running()` is false; every 2xx is recorded. */
export async function load(apis: () => Api[], f: Fixture, running: () => boolean, acked: Acked[], errors: string[], writers = 6): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: writers }, async () => {
      while (running()) {
        const i = next++;
        const list = apis();
        const via = i % list.length;
        const api = list[via]!;
        const { path, body } = requestOf(f, i);
        const idempotencyKey = idem();
        const sentAt = Date.now();
        try {
          const r = await api('POST', path, { idempotencyKey, body });
          if (r.status >= 200 && r.status < 300) acked.push({ path, idempotencyKey, body, status: r.status, reply: r.body, ms: Date.now() - sentAt });
          else errors.push(`${r.status} ${JSON.stringify(r.body).slice(0, 120)} (via the ${via}th node listed)`);
        } catch (error) {
          errors.push(`fetch: ${(error as Error).message} (via the ${via}th node listed)`);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      }
    }),
  );
}

/** Every acknowledged request, replayed with its key through `api`: the same status and body, at the first try. */
export async function replayAll(api: Api, acked: readonly Acked[]): Promise<void> {
  for (let i = 0; i < acked.length; i += 8) {
    await Promise.all(
      acked.slice(i, i + 8).map(async (a) => {
        const again = await api('POST', a.path, { idempotencyKey: a.idempotencyKey, body: a.body });
        assert.equal(again.status, a.status, `replay of ${a.path} ${a.idempotencyKey}: ${JSON.stringify(again.body)}`);
        assert.deepEqual(again.body, a.reply, `replay of ${a.path} ${a.idempotencyKey}`);
      }),
    );
  }
}

export function processGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return false;
  } catch {
    return true;
  }
}
