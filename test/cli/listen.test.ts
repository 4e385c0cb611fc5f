// `kobo listen --forward-to URL` against a real server: the CLI runs as its own process and reaches the
// server through a TCP relay on 127.0.0.1 that the test cuts mid-stream (every connection destroyed),
// while events keep being made. A real receiver takes the forwarded events.
// Invariant checked: every event of the account reaches the forward URL exactly once, with a valid
// signature under the secret the CLI printed, across the cut and the reconnect.
import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { spawn, type ChildProcess } from 'node:child_process';
import { ROOT, client, idem, secretKey, startServer, uniqueEmail, uniquePhone, type TestServer } from '../helpers/server.ts';
import { entryArgs } from '../helpers/build.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { until } from '../helpers/wait.ts';
import { verifyWebhook } from '../../src/webhooks/verify-webhook.ts';

const KEY = secretKey();
const KEY_OTHER = secretKey();

let server: TestServer;
let receiver: Receiver;
let relay: { port: number; cut: () => number; refuse: (on: boolean) => void; close: () => Promise<void> };
let listener: ChildProcess | undefined;

/** A TCP relay to the server whose open connections the test can destroy at once. */
async function startRelay(targetPort: number): Promise<typeof relay> {
  const sockets = new Set<net.Socket>();
  let refusing = false;
  const relayServer = net.createServer((inbound) => {
    if (refusing) {
      inbound.destroy();
      return;
    }
    const outbound = net.connect(targetPort, '127.0.0.1');
    for (const s of [inbound, outbound]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => s.destroy());
    }
    inbound.pipe(outbound).pipe(inbound);
    inbound.on('close', () => outbound.destroy());
    outbound.on('close', () => inbound.destroy());
  });
  await new Promise<void>((resolve) => relayServer.listen(0, '127.0.0.1', () => resolve()));
  return {
    port: (relayServer.address() as net.AddressInfo).port,
    refuse: (on) => {
      refusing = on;
    },
    cut: () => {
      const n = sockets.size;
      for (const s of sockets) s.destroy();
      return n;
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => relayServer.close(() => resolve()));
    },
  };
}

async function settledPayment(api: ReturnType<typeof client>, customerId: string): Promise<void> {
  const paid = await api('POST', '/v1/payments', { idempotencyKey: idem('pay'), body: { customer_id: customerId, amount_minor: 20_000, currency: 'NGN', method: 'bank_transfer' } });
  assert.equal(paid.status, 201, JSON.stringify(paid.body));
  assert.equal((await api('POST', `/v1/test_helpers/payments/${paid.body.data.id}/settle`)).status, 200);
}

before(async () => {
  server = await startServer({ keys: [`${KEY}@acme`, `${KEY_OTHER}@globex`] });
  receiver = await startReceiver();
  relay = await startRelay(server.port);
});

after(async () => {
  if (listener !== undefined && listener.exitCode === null) listener.kill('SIGKILL');
  await relay?.close();
  await receiver?.close();
  await server?.stop();
});

it('kobo listen: the connection cut mid-stream while events keep coming → each event forwarded exactly once, signed with the printed secret', async () => {
  const api = client(server.baseUrl, KEY);
  const other = client(server.baseUrl, KEY_OTHER);
  const customer = await api('POST', '/v1/customers', { idempotencyKey: idem('c'), body: { name: 'Ada Obi', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
  const stranger = await other('POST', '/v1/customers', { idempotencyKey: idem('c'), body: { name: 'Other Account', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
  listener = spawn(process.execPath, [...entryArgs('kobo'), 'listen', '--api', `http://127.0.0.1:${relay.port}`, '--key', KEY, '--forward-to', receiver.url], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  listener.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  listener.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await until(async () => output, (o) => /connected/.test(o), 'kobo listen to connect', 15_000);
  const secret = /Webhook signing secret: (whsec_[0-9a-f]+)/.exec(output)?.[1];
  assert.ok(secret !== undefined, output);

  for (let i = 0; i < 8; i += 1) await settledPayment(api, customer.body.data.id);
  await settledPayment(other, stranger.body.data.id);
  await until(async () => receiver.received.length, (n) => n >= 3, 'the first events forwarded', 10_000);
  relay.refuse(true);
  assert.ok(relay.cut() > 0, 'the stream went through the relay');
  // Made while the connection is down (the relay refuses it): only the resume can bring these.
  for (let i = 0; i < 8; i += 1) await settledPayment(api, customer.body.data.id);
  relay.refuse(false);
  await until(async () => output, (o) => /connected, resuming/.test(o), 'kobo listen to reconnect', 15_000);
  for (let i = 0; i < 4; i += 1) await settledPayment(api, customer.body.data.id);

  const events = (await api('GET', `/v1/events?customer_id=${customer.body.data.id}&limit=100`)).body.data as Array<{ id: string }>;
  assert.equal(events.length, 20);
  await until(async () => receiver.received.length, (n) => n >= 20, `20 forwarded events (output:\n${output})`, 20_000);
  await new Promise((resolve) => setTimeout(resolve, 1_000)); // a double would arrive now
  const forwarded = receiver.received.map((r) => r.body.id as string);
  assert.equal(forwarded.length, 20, `forwarded ${forwarded.length}: ${output}`);
  assert.deepEqual(new Set(forwarded), new Set(events.map((e) => e.id)));
  for (const r of receiver.received) assert.deepEqual(verifyWebhook(secret, r.raw, r.headers), { ok: true });
  // The body forwarded is the event as GET /v1/events/{id} shows it.
  const one = receiver.received[5]!;
  assert.equal(JSON.stringify((await api('GET', `/v1/events/${one.body.id}`)).body.data), one.raw);
});
