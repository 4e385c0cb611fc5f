// Plans on quotes and listings. A quote that names a plan (the spec's plan `code` goes on quote and order
// as product_code) must name one of the operator's plans and, for a fixed-price service, its amount; the
// quote shows and binds it (another plan under the quote is QUOTE_MISMATCH). The plans listing takes
// the operator as `operator` or `operator_code`, the two names the spec uses.
import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, secretKey, startServer, uniqueEmail, type TestServer } from '../helpers/server.ts';

const key = secretKey();
let server: TestServer;
let api: ReturnType<typeof client>;

before(async () => {
  server = await startServer({ keys: [`${key}@quote-plans`] });
  api = client(server.baseUrl, key);
});
after(async () => server.stop());

/** A valid NG MTN number (0803 prefix) that avoids the sandbox's magic endings. */
const mtnPhone = (): string => `+234803${String(1_000_000 + Math.floor(Math.random() * 8_000_000)).slice(-7, -4)}${String(1_000 + Math.floor(Math.random() * 8_000))}`;

async function customer(fundMinor: number): Promise<{ id: string }> {
  const c = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: { name: 'Planner', email: uniqueEmail(), phone: mtnPhone(), country_code: 'NG' } });
  assert.equal(c.status, 201, JSON.stringify(c.body));
  const p = await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: c.body.data.id, amount_minor: fundMinor, currency: 'NGN', method: 'bank_transfer' } });
  assert.equal(p.status, 201, JSON.stringify(p.body));
  assert.equal((await api('POST', `/v1/test_helpers/payments/${p.body.data.id}/settle`)).status, 200);
  return { id: c.body.data.id };
}

async function order(body: Record<string, unknown>) {
  return api('POST', '/v1/services/orders', { idempotencyKey: idem('order'), body });
}

it('data (fixed price): a quote takes product_code, refuses an amount or operator that is not the plan\'s, and binds the plan', async () => {
  const c = await customer(2_000_000);
  const plans = (await api('GET', `/v1/services/data/plans?country=NG&operator=MTN&customer_id=${c.id}`)).body.data.items.filter((p: { amount_minor: number | null }) => p.amount_minor !== null);
  assert.ok(plans.length >= 2, JSON.stringify(plans));
  const [plan, other] = plans;
  const phone = mtnPhone();
  const quoteBody = { customer_id: c.id, country_code: 'NG', service_code: 'data', currency: 'NGN', payment_method: 'wallet', operator_code: 'MTN', phone };
  const quote = (body: Record<string, unknown>) => api('POST', '/v1/services/quote', { body: { ...quoteBody, ...body } });
  for (const bad of [
    { provider_cost_minor: plan.amount_minor + 1, product_code: plan.code },
    { provider_cost_minor: plan.amount_minor, product_code: 'no_such_plan' },
  ]) {
    const refused = await quote(bad);
    assert.equal(refused.status, 400, JSON.stringify(refused.body));
    assert.equal(refused.body.error.code, 'VALIDATION');
  }
  const glo = (await api('GET', `/v1/services/data/plans?country=NG&operator=GLO&customer_id=${c.id}`)).body.data.items.find((p: { amount_minor: number | null }) => p.amount_minor !== null);
  if (glo !== undefined) {
    const wrongOperator = await quote({ provider_cost_minor: glo.amount_minor, product_code: glo.code });
    assert.equal(wrongOperator.status, 400, JSON.stringify(wrongOperator.body));
  }
  const quoted = await quote({ provider_cost_minor: plan.amount_minor, product_code: plan.code });
  assert.equal(quoted.status, 200, JSON.stringify(quoted.body));
  assert.equal(quoted.body.data.product_code, plan.code);
  assert.equal(quoted.body.data.provider_cost_minor, plan.amount_minor);
  const base = { customer_id: c.id, country_code: 'NG', service_code: 'data', currency: 'NGN', payment_method: 'wallet', operator_code: 'MTN', phone, quote_id: quoted.body.data.quote_id };
  // Another plan under the quote: QUOTE_MISMATCH (the quote binds its plan as well as its amount).
  const swapped = await order({ ...base, provider_cost_minor: other.amount_minor, product_code: other.code });
  assert.equal(swapped.status, 409, JSON.stringify(swapped.body));
  assert.equal(swapped.body.error.code, 'QUOTE_MISMATCH');
  const created = await order({ ...base, provider_cost_minor: plan.amount_minor, product_code: plan.code });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  assert.equal(created.body.data.order.product_code, plan.code);
  assert.equal(created.body.data.order.customer_amount_minor, quoted.body.data.customer_amount_minor);
});

it('plans: operator_code is taken like operator (the spec names it both ways); the two disagreeing → 400', async () => {
  const ng1 = (await customer(10_000)).id;
  const byAlias = await api('GET', `/v1/services/data/plans?country=NG&operator_code=MTN&customer_id=${ng1}`);
  assert.equal(byAlias.status, 200, JSON.stringify(byAlias.body));
  const byName = await api('GET', `/v1/services/data/plans?country=NG&operator=MTN&customer_id=${ng1}`);
  assert.deepEqual(byAlias.body.data, byName.body.data);
  const both = await api('GET', `/v1/services/data/plans?country=NG&operator=mtn&operator_code=MTN&customer_id=${ng1}`);
  assert.equal(both.status, 200);
  for (const bad of [`operator=MTN&operator_code=GLO`, `operator_code=VODACOM`]) {
    const refused = await api('GET', `/v1/services/data/plans?country=NG&${bad}&customer_id=${ng1}`);
    assert.equal(refused.status, 400, JSON.stringify(refused.body));
    assert.equal(refused.body.error.code, 'VALIDATION');
  }
});

it('two plans at one price (GLO 2.5 GB/2 d and 1.5 GB/7 d, both 500.00): a quote for one does not buy the other (QUOTE_MISMATCH), only its own', async () => {
  const c = await customer(2_000_000);
  const plans = (await api('GET', `/v1/services/data/plans?country=NG&operator=GLO&customer_id=${c.id}`)).body.data.items as Array<{ code: string; amount_minor: number | null }>;
  const quotedPlan = plans.find((p) => p.code === 'glo-2-5gb-2d');
  const otherPlan = plans.find((p) => p.code === 'glo-1-5gb-7d');
  assert.ok(quotedPlan !== undefined && otherPlan !== undefined && quotedPlan.amount_minor === otherPlan.amount_minor, JSON.stringify(plans));
  const phone = `+234805${String(1_000_000 + Math.floor(Math.random() * 8_000_000)).slice(-7)}`;
  const common = { customer_id: c.id, country_code: 'NG', service_code: 'data', currency: 'NGN', payment_method: 'wallet', operator_code: 'GLO', phone, provider_cost_minor: quotedPlan.amount_minor };
  const quoted = await api('POST', '/v1/services/quote', { body: { ...common, product_code: quotedPlan.code } });
  assert.equal(quoted.status, 200, JSON.stringify(quoted.body));
  const other = await order({ ...common, quote_id: quoted.body.data.quote_id, product_code: otherPlan.code });
  assert.equal(other.status, 409, JSON.stringify(other.body));
  assert.equal(other.body.error.code, 'QUOTE_MISMATCH');
  const own = await order({ ...common, quote_id: quoted.body.data.quote_id, product_code: quotedPlan.code });
  assert.equal(own.status, 201, JSON.stringify(own.body));
  assert.equal(own.body.data.order.product_code, quotedPlan.code);
});
