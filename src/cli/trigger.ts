// `kobo trigger EVENT`: makes the real sandbox objects that cause an event (a customer, a collection
// settled by the test helper, a beneficiary and a transfer, a service quote and order) through a
// running server's API, waits for the outcome, and returns what it made. Runs as its own process.
// Invariant: only the public API with the given key is used (sandbox keys: the test helpers and magic
// values); `--override field=value` sets a field of the request that causes the event.
import { randomBytes } from 'node:crypto';

export const TRIGGER_EVENTS = ['payment.completed', 'transfer.completed', 'transfer.failed', 'service_order.completed', 'service_order.failed'] as const;
export type TriggerEvent = (typeof TRIGGER_EVENTS)[number];

/** How long the outcome (a transfer's payout, an order's fulfilment) is waited for. */
const OUTCOME_WAIT_MS_MAX = 15_000;
const FUNDING_MINOR = 5_000_000;

export interface TriggerOptions {
  apiUrl: string;
  key: string;
  /** `field=value` pairs; a value that parses as JSON (a number, true) is sent as that. */
  overrides: readonly string[];
}

type Json = Record<string, unknown>;

/** The overrides as fields, or why one is malformed. */
export function parseOverrides(pairs: readonly string[]): Json {
  const fields: Json = {};
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    if (at <= 0) throw new Error(`--override ${pair}: expected field=value`);
    const raw = pair.slice(at + 1);
    let value: unknown = raw;
    try {
      value = JSON.parse(raw);
    } catch {
      // A plain string (an id, a currency, a phone number).
    }
    fields[pair.slice(0, at)] = value;
  }
  return fields;
}

export async function trigger(event: TriggerEvent, options: TriggerOptions): Promise<Json> {
  const overrides = parseOverrides(options.overrides);
  const call = async (method: 'GET' | 'POST', path: string, body?: Json): Promise<Json> => {
    const headers: Record<string, string> = { authorization: `Bearer ${options.key}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (method === 'POST') headers['idempotency-key'] = `trigger-${randomBytes(12).toString('hex')}`;
    const response = await fetch(new URL(path, options.apiUrl), { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    const answer = (await response.json()) as { data?: Json; error?: { code: string; message: string } };
    if (!response.ok || answer.data === undefined) throw new Error(`${method} ${path}: ${response.status} ${answer.error?.code ?? ''} ${answer.error?.message ?? ''}`.trim());
    return answer.data;
  };
  const settled = async (path: string, isFinal: (data: Json) => boolean): Promise<Json> => {
    const deadline = Date.now() + OUTCOME_WAIT_MS_MAX;
    for (;;) {
      const data = await call('GET', path);
      if (isFinal(data) || Date.now() > deadline) return data;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  const made: Json = {};
  const customerId = typeof overrides.customer_id === 'string' ? overrides.customer_id : await newCustomer();
  async function newCustomer(): Promise<string> {
    const phone = `+23480${String(30_000_000 + Math.floor(Math.random() * 69_999_999)).padStart(8, '0')}`;
    made.customer = await call('POST', '/v1/customers', { name: 'Trigger Test', email: `trigger-${randomBytes(6).toString('hex')}@example.com`, phone, country_code: 'NG' });
    return (made.customer as { id: string }).id;
  }
  const collect = async (fields: Json): Promise<Json> => {
    const payment = await call('POST', '/v1/payments', { customer_id: customerId, amount_minor: FUNDING_MINOR, currency: 'NGN', method: 'bank_transfer', ...fields });
    return call('POST', `/v1/test_helpers/payments/${String(payment.id)}/settle`);
  };
  if (event === 'payment.completed') {
    made.payment = await collect(overrides);
    return made;
  }
  made.funding = await collect({});
  if (event === 'transfer.completed' || event === 'transfer.failed') {
    // An account number ending 9999 makes the sandbox payout rail fail the transfer.
    made.beneficiary = await call('POST', '/v1/beneficiaries', { customer_id: customerId, type: 'bank_account', bank_code: '058', account_number: event === 'transfer.failed' ? '0123459999' : '0123456789', currency: 'NGN' });
    const transfer = await call('POST', '/v1/transfers', { customer_id: customerId, beneficiary_id: (made.beneficiary as { id: string }).id, amount_minor: 10_000, currency: 'NGN', ...overrides });
    made.transfer = await settled(`/v1/transfers/${String(transfer.id)}`, (t) => t.status === 'completed' || t.status === 'failed');
    return made;
  }
  // A phone ending 0000 makes the sandbox fulfilment rail fail the purchase.
  const phone = event === 'service_order.failed' ? '+2348031230000' : '+2348031234567';
  const request: Json = { customer_id: customerId, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 50_000, currency: 'NGN', payment_method: 'wallet', phone, operator_code: 'MTN', ...overrides };
  const { operator_code: _operator, ...quoteRequest } = request;
  made.quote = await call('POST', '/v1/services/quote', quoteRequest);
  const placed = await call('POST', '/v1/services/orders', { ...request, quote_id: (made.quote as { quote_id: string }).quote_id });
  const orderId = (placed.order as { id: string }).id;
  made.order = await settled(`/v1/services/orders/${orderId}`, (o) => o.status === 'completed' || o.status === 'failed');
  return made;
}
