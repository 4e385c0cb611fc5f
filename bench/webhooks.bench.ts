// Webhook delivery bench: (1) deliveries per second from settled payments to a local receiver, end to
// end (commit → outbox → dispatcher → signed POST → 200); (2) the API's read p99 while events flow to a
// healthy receiver vs while another account's receiver is dead (accepts, never answers): the ratio
// shows whether a dead receiver slows the API. Only 127.0.0.1; bounded counts and durations.
// Run: npx tsx bench/webhooks.bench.ts
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { client, idem, secretKey, startServer, uniqueEmail, uniquePhone } from '../test/helpers/server.ts';
import { fmt, table, writeResult } from './lib/report.ts';

const EVENTS = 2_000;
const CONCURRENCY = 32;
const READ_SECONDS = 6;

async function pool<T>(items: readonly T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < items.length) await work(items[next++]!);
  }));
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

async function fastReceiver(): Promise<{ url: string; count: () => number; times: number[]; close: () => Promise<void> }> {
  const times: number[] = [];
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      times.push(performance.now());
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, count: () => times.length, times, close: () => new Promise((r) => server.close(() => r())) };
}

/** Accepts connections and never answers: every delivery to it waits for the timeout. */
async function deadReceiver(): Promise<{ url: string; close: () => Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('data', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    close: () => new Promise((r) => { for (const s of sockets) s.destroy(); server.close(() => r()); }),
  };
}

async function main(): Promise<void> {
  const keys = { a: secretKey(), b: secretKey() };
  const server = await startServer({ keys: [`${keys.a}@bench-a`, `${keys.b}@bench-b`], env: { KOBO_RAIL_LATENCY_MS: '5' } });
  const fast = await fastReceiver();
  const dead = await deadReceiver();
  try {
    const a = client(server.baseUrl, keys.a);
    const b = client(server.baseUrl, keys.b);
    const customer = async (api: typeof a): Promise<{ id: string; walletId: string }> => {
      const c = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: { name: 'Bench', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
      return { id: c.body.data.id, walletId: c.body.data.wallets[0].id };
    };
    const pendingPayments = async (api: typeof a, customerId: string, count: number): Promise<string[]> => {
      const ids: string[] = [];
      await pool(Array.from({ length: count }, (_, i) => i), CONCURRENCY, async () => {
        const p = await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: customerId, amount_minor: 10_000, currency: 'NGN', method: 'bank_transfer' } });
        if (p.status !== 201) throw new Error(`payment: ${p.status} ${JSON.stringify(p.body)}`);
        ids.push(p.body.data.id);
      });
      return ids;
    };

    // 1. Throughput: settle EVENTS payments; each settlement is one payment.completed event.
    await a('POST', '/v1/webhooks/subscriptions', { body: { url: fast.url, events: ['payment.completed'] } });
    const ca = await customer(a);
    await a('PATCH', `/v1/customers/${ca.id}`, { body: { tier: 'tier_3' } });
    const ids = await pendingPayments(a, ca.id, EVENTS);
    const t0 = performance.now();
    await pool(ids, CONCURRENCY, async (id) => {
      const r = await a('POST', `/v1/test_helpers/payments/${id}/settle`);
      if (r.status !== 200) throw new Error(`settle: ${r.status}`);
    });
    const settledMs = performance.now() - t0;
    while (fast.count() < EVENTS && performance.now() - t0 < 120_000) await new Promise((r) => setTimeout(r, 20));
    const deliveredMs = (fast.times[EVENTS - 1] ?? NaN) - t0;
    const deliveriesPerSecond = (EVENTS / deliveredMs) * 1000;

    // 2. Read p99 while events flow: healthy receiver only, then with account B's receiver dead.
    const readRun = async (label: string, withEvents: () => Promise<void>): Promise<{ label: string; p50: number; p99: number; reqs: number }> => {
      const latencies: number[] = [];
      const until = performance.now() + READ_SECONDS * 1000;
      const events = withEvents();
      await pool(Array.from({ length: 16 }, (_, i) => i), 16, async () => {
        while (performance.now() < until) {
          const s = performance.now();
          await a('GET', `/v1/wallets/${ca.walletId}`);
          latencies.push(performance.now() - s);
        }
      });
      await events;
      latencies.sort((x, y) => x - y);
      return { label, p50: percentile(latencies, 50), p99: percentile(latencies, 99), reqs: latencies.length / READ_SECONDS };
    };
    const cb = await customer(b);
    await b('PATCH', `/v1/customers/${cb.id}`, { body: { tier: 'tier_3' } });
    const idsA = await pendingPayments(a, ca.id, 300);
    const idsB = await pendingPayments(b, cb.id, 300);
    const settleSlowly = (api: typeof a, list: string[]) => async (): Promise<void> => {
      for (const id of list) {
        await api('POST', `/v1/test_helpers/payments/${id}/settle`);
        await new Promise((r) => setTimeout(r, (READ_SECONDS * 1000) / list.length / 2));
      }
    };
    const healthy = await readRun('events to a healthy receiver', settleSlowly(a, idsA.slice(0, 150)));
    await b('POST', '/v1/webhooks/subscriptions', { body: { url: dead.url, events: ['payment.completed'] } });
    const before = fast.count();
    const withDead = await readRun('+ another account’s receiver dead', async () => {
      await Promise.all([settleSlowly(a, idsA.slice(150))(), settleSlowly(b, idsB)()]);
    });
    const healthyDuringDead = fast.count() - before;

    const rows = [
      ['measure', 'value'],
      ['events settled', String(EVENTS)],
      ['settle phase (ms)', fmt(settledMs, 0)],
      ['all delivered after (ms)', fmt(deliveredMs, 0)],
      ['deliveries per second (end to end)', fmt(deliveriesPerSecond, 0)],
      [`read p50 / p99, ${healthy.label} (ms)`, `${fmt(healthy.p50)} / ${fmt(healthy.p99)}`],
      [`read p50 / p99, ${withDead.label} (ms)`, `${fmt(withDead.p50)} / ${fmt(withDead.p99)}`],
      ['p99 ratio dead / healthy', fmt(withDead.p99 / healthy.p99)],
      ['healthy receiver deliveries while the other was dead', `${healthyDuringDead} of 150`],
    ];
    process.stdout.write(`${table(rows)}\n`);
    writeResult('webhooks', { events: EVENTS, settledMs, deliveredMs, deliveriesPerSecond, healthy, withDead, healthyDuringDead });
  } finally {
    await server.stop();
    await fast.close();
    await dead.close();
  }
}

await main();
