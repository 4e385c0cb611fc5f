// Test data for the console's tests: an account with customers, funded wallets, an order held for
// manual fulfilment, a webhook subscription with deliveries, and a customer-scoped key. Over HTTP only.
import assert from 'node:assert/strict';
import { client, idem, uniqueEmail } from '../helpers/server.ts';
import { until } from '../helpers/wait.ts';

type Api = ReturnType<typeof client>;

let phoneSeq = 0;
/** A Nigerian MTN number; the last four digits choose the sandbox's answer (0004: manual fulfilment). */
export function mtnPhone(ending?: string): string {
  phoneSeq += 1;
  const tail = ending ?? String(1_000 + ((phoneSeq * 37 + Math.floor(Math.random() * 5_000)) % 8_000)).padStart(4, '0');
  return `+234803${String(100 + Math.floor(Math.random() * 800)).padStart(3, '0')}${tail}`;
}

export async function fundedCustomer(api: Api, name: string, fundMinor: number): Promise<{ id: string; walletId: string; email: string; phone: string }> {
  const email = uniqueEmail();
  const phone = mtnPhone();
  const c = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: { name, email, phone, country_code: 'NG' } });
  assert.equal(c.status, 201, JSON.stringify(c.body));
  const p = await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: c.body.data.id, amount_minor: fundMinor, currency: 'NGN', method: 'bank_transfer' } });
  assert.equal(p.status, 201, JSON.stringify(p.body));
  assert.equal((await api('POST', `/v1/test_helpers/payments/${p.body.data.id}/settle`)).status, 200);
  return { id: c.body.data.id, walletId: c.body.data.wallets[0].id, email, phone };
}

/** A wallet-paid airtime order whose phone ends in `ending`, once it reaches `status`. */
export async function orderReaching(api: Api, customerId: string, ending: string, status: string): Promise<string> {
  const created = await api('POST', '/v1/services/orders', { idempotencyKey: idem('order'), body: { customer_id: customerId, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 50_000, currency: 'NGN', payment_method: 'wallet', phone: mtnPhone(ending) } });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const id = created.body.data.order.id as string;
  await until(() => api('GET', `/v1/services/orders/${id}/status`).then((r) => r.body.data), (s) => s.status === status, status, 10_000);
  return id;
}
