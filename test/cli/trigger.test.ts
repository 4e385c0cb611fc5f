// `kobo trigger EVENT` against a real server, one test per event it knows: the CLI runs as its own
// process, makes the sandbox objects through the API, prints them, and the event they caused is then
// in GET /v1/events. `--override` sets a field of the request that causes the event.
// Invariant checked: the printed objects are real (readable by id) and caused exactly that event.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { ROOT, client, secretKey, startServer, type TestServer } from '../helpers/server.ts';
import { entryArgs } from '../helpers/build.ts';
import { until } from '../helpers/wait.ts';

const KEY = secretKey();
let server: TestServer;
let api: ReturnType<typeof client>;

/** Runs `kobo trigger …` (async: the test's event loop stays free) and parses what it printed. */
async function trigger(...args: string[]): Promise<{ status: number | null; out: { event: string; objects: Record<string, any> } | null; stderr: string }> {
  const child = spawn(process.execPath, [...entryArgs('kobo'), 'trigger', ...args, '--api', server.baseUrl, '--key', KEY], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const status = await new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { status, out: status === 0 ? JSON.parse(stdout) : null, stderr };
}

/** The event of `type` about `transactionId`, once GET /v1/events has it. */
async function eventAbout(type: string, transactionId: string): Promise<{ id: string; data: Record<string, unknown> }> {
  const page = await until(() => api('GET', `/v1/events?type=${type}&limit=100`), (r) => (r.body.data as Array<{ data: { transaction_id: string } }>).some((e) => e.data.transaction_id === transactionId), `${type} for ${transactionId}`, 10_000);
  return (page.body.data as Array<{ id: string; data: Record<string, unknown> & { transaction_id: string } }>).find((e) => e.data.transaction_id === transactionId)!;
}

before(async () => {
  server = await startServer({ keys: [`${KEY}@acme`] });
  api = client(server.baseUrl, KEY);
});

after(async () => {
  await server?.stop();
});

describe('kobo trigger', () => {
  it('payment.completed → a customer and a settled collection; the event names its transaction', async () => {
    const run = await trigger('payment.completed');
    assert.equal(run.status, 0, run.stderr);
    const payment = run.out!.objects.payment;
    assert.equal(payment.status, 'completed');
    assert.equal((await api('GET', `/v1/payments/${payment.id}`)).body.data.status, 'completed');
    await eventAbout('payment.completed', payment.transaction_id);
  });

  it('payment.completed --override amount_minor=123456 --override customer_id=<existing> → that amount, that customer, in the event', async () => {
    const first = await trigger('payment.completed');
    const customerId = first.out!.objects.customer.id as string;
    const run = await trigger('payment.completed', '--override', 'amount_minor=123456', '--override', `customer_id=${customerId}`);
    assert.equal(run.status, 0, run.stderr);
    assert.equal(run.out!.objects.customer, undefined, 'no new customer');
    const event = await eventAbout('payment.completed', run.out!.objects.payment.transaction_id);
    assert.equal(event.data.amount_minor, 123456);
    assert.equal(event.data.customer_id, customerId);
  });

  it('transfer.completed → a funded customer, a beneficiary and a completed transfer; the event names its transaction', async () => {
    const run = await trigger('transfer.completed');
    assert.equal(run.status, 0, run.stderr);
    const transfer = run.out!.objects.transfer;
    assert.equal(transfer.status, 'completed');
    await eventAbout('transfer.completed', transfer.transaction_id);
  });

  it('transfer.failed → a transfer to an account the sandbox payout rail fails; the event names its transaction', async () => {
    const run = await trigger('transfer.failed', '--override', 'amount_minor=25000');
    assert.equal(run.status, 0, run.stderr);
    const transfer = run.out!.objects.transfer;
    assert.equal(transfer.status, 'failed');
    assert.equal(transfer.amount_minor, 25_000);
    await eventAbout('transfer.failed', transfer.transaction_id);
  });

  it('service_order.completed → a quote and an airtime order delivered; the event names its transaction', async () => {
    const run = await trigger('service_order.completed');
    assert.equal(run.status, 0, run.stderr);
    const order = run.out!.objects.order;
    assert.equal(order.status, 'completed');
    const event = await eventAbout('service_order.completed', order.transaction_id);
    assert.equal(event.data.order_id, order.id);
  });

  it('service_order.failed → an order to a number the sandbox fulfilment rail fails; the event names its transaction', async () => {
    const run = await trigger('service_order.failed');
    assert.equal(run.status, 0, run.stderr);
    const order = run.out!.objects.order;
    assert.equal(order.status, 'failed');
    const event = await eventAbout('service_order.failed', order.transaction_id);
    assert.equal(event.data.order_id, order.id);
  });

  it('an unknown event, or an override that is not field=value → exit 1 with one line saying so, nothing made', async () => {
    const before = (await api('GET', '/v1/customers?limit=100')).body.data.length;
    const unknown = await trigger('payment.settled');
    assert.equal(unknown.status, 1);
    assert.match(unknown.stderr, /unknown event payment\.settled/);
    const malformed = await trigger('payment.completed', '--override', 'amount_minor');
    assert.equal(malformed.status, 1);
    assert.match(malformed.stderr, /expected field=value/);
    assert.equal((await api('GET', '/v1/customers?limit=100')).body.data.length, before);
  });
});
