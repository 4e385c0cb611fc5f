// The kobo side of the HTTP bench's setup, over kobo's own API: a small JSON client and the customers,
// funded wallets and beneficiaries every scenario uses. Bench process only; the server is 127.0.0.1.
import { randomBytes } from 'node:crypto';

export const CUSTOMERS = 16;
/** A wallet payment's amount in the post scenarios (NGN 1.00). */
export const PAYMENT_MINOR = 100;
export const FUNDING_MINOR = 500_000_000;

export interface ApiResponse {
  status: number;
  body: unknown;
}

export type Api = (method: string, urlPath: string, options?: { body?: unknown; idempotencyKey?: string }) => Promise<ApiResponse>;

export function api(baseUrl: string, secret: string): Api {
  return async (method, urlPath, options = {}) => {
    const headers: Record<string, string> = { authorization: `Bearer ${secret}` };
    if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
    let body: string | undefined;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] = 'application/json';
    }
    const response = await fetch(baseUrl + urlPath, { method, headers, body, signal: AbortSignal.timeout(30_000) });
    const text = await response.text();
    return { status: response.status, body: text === '' ? null : (JSON.parse(text) as unknown) };
  };
}

/** The `data` of a response with the expected status; the caller names the shape it relies on. */
export function expect<T>(what: string, response: ApiResponse, status: number): T {
  if (response.status !== status) throw new Error(`${what}: expected ${status}, got ${response.status} ${JSON.stringify(response.body)}`);
  return (response.body as { data: T }).data;
}

/** Creates customers on tier_3 (tiers.json: NGN 1e9 per transaction, 5e9 a day) with a well-funded wallet. */
export async function seed(call: Api): Promise<Array<{ customerId: string; walletId: string; beneficiaryId: string }>> {
  const seeded: Array<{ customerId: string; walletId: string; beneficiaryId: string }> = [];
  const run = randomBytes(4).toString('hex');
  for (let i = 0; i < CUSTOMERS; i += 1) {
    const customer = expect<{ id: string; wallets: Array<{ id: string; currency: string }> }>('create customer', await call('POST', '/v1/customers', {
      idempotencyKey: `seed-${run}-c${i}`,
      body: { name: `Bench ${i}`, email: `bench-${run}-${i}@example.com`, phone: `+23480${30_000_000 + i}`, country_code: 'NG' },
    }), 201);
    expect('tier_3', await call('PATCH', `/v1/customers/${customer.id}`, { body: { tier: 'tier_3' } }), 200);
    const payment = expect<{ id: string }>('fund', await call('POST', '/v1/payments', {
      idempotencyKey: `seed-${run}-f${i}`,
      body: { customer_id: customer.id, amount_minor: FUNDING_MINOR, currency: 'NGN', method: 'bank_transfer' },
    }), 201);
    expect('settle', await call('POST', `/v1/test_helpers/payments/${payment.id}/settle`), 200);
    const walletId = customer.wallets.find((w) => w.currency === 'NGN')!.id;
    const wallet = expect<{ available_minor: number }>('wallet', await call('GET', `/v1/wallets/${walletId}`), 200);
    if (wallet.available_minor < FUNDING_MINOR / 2) throw new Error(`wallet ${walletId} not funded: ${JSON.stringify(wallet)}`);
    const beneficiary = expect<{ id: string }>('beneficiary', await call('POST', '/v1/beneficiaries', {
      idempotencyKey: `seed-${run}-b${i}`,
      body: { customer_id: customer.id, type: 'bank_account', bank_code: '058', account_number: `01234${String(10_000 + i).slice(-5)}`, currency: 'NGN' },
    }), 201);
    seeded.push({ customerId: customer.id, walletId, beneficiaryId: beneficiary.id });
  }
  // A wallet payment end to end, before any load: 201 and processing, then settled by the rail.
  const probe = expect<{ status: string }>('probe payment', await call('POST', '/v1/payments', {
    idempotencyKey: `seed-${run}-probe`,
    body: { customer_id: seeded[0]!.customerId, amount_minor: PAYMENT_MINOR, currency: 'NGN', method: 'wallet' },
  }), 201);
  if (probe.status !== 'processing' && probe.status !== 'completed') throw new Error(`probe payment is ${probe.status}`);
  return seeded;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const SETTLE_WAIT_MS_MAX = 60_000;

/**
 * The wallets' total balance once the rail has settled every wallet payment: polls until the total and the
 * held amounts stop moving (a hold is posted KOBO_RAIL_LATENCY_MS after its payment, or later under load).
 */
export async function settledBalanceMinor(call: Api, walletIds: string[]): Promise<{ totalMinor: number; waitedMs: number }> {
  const started = Date.now();
  let previous = Number.NaN;
  for (;;) {
    let total = 0;
    let held = 0;
    for (const id of walletIds) {
      const wallet = expect<{ balance_minor: number; held_minor: number }>('wallet', await call('GET', `/v1/wallets/${id}`), 200);
      total += wallet.balance_minor;
      held += wallet.held_minor;
    }
    if (held === 0 && total === previous) return { totalMinor: total, waitedMs: Date.now() - started };
    if (Date.now() - started > SETTLE_WAIT_MS_MAX) throw new Error(`wallet payments still unsettled after ${SETTLE_WAIT_MS_MAX} ms (held ${held})`);
    previous = total;
    await sleep(250);
  }
}
