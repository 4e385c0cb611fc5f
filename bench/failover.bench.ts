// Failover time after a long log: three nats-servers and three kobo nodes on 127.0.0.1, durable POST
// /v1/payments by wrk at the owner for --load seconds (no cluster images: the whole log is "since the
// last image"), then kill -9 of the owner; measured until a write through a survivor is 201 again, and
// the new owner's recovery. Once with followers imaging their copies (KOBO_CLUSTER_COPY_IMAGE_SECONDS)
// and once without. Run: npx tsx bench/failover.bench.ts [--load 30] [--copy-image-seconds 10]
// Needs wrk, taskset and nats-server. Every process it starts is killed by PID in a finally.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { flag, machine, table, writeResult } from './lib/report.ts';
import { postScript, runWrk } from './lib/wrk.ts';
import { client, idem, secretKey, uniqueEmail, uniquePhone } from '../test/helpers/server.ts';
import { startKoboCluster } from '../test/helpers/cluster.ts';

const LOAD_S = Number(flag('load', '30'));
const COPY_IMAGE_S = Number(flag('copy-image-seconds', '10'));
/** How long the survivors may take to be current (and, with copy images, imaged) after the load. */
const SETTLE_MS_MAX = 180_000;
/** How long writes may stay refused after the kill before the run gives up. */
const FAILOVER_MS_MAX = 120_000;
if (!(LOAD_S > 0 && LOAD_S <= 300) || !(COPY_IMAGE_S >= 1 && COPY_IMAGE_S <= 600)) throw new Error('usage: failover.bench.ts [--load 1..300] [--copy-image-seconds 1..600]');

const key = secretKey();
const keys = [`${key}@bench`];
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kobo-failover-bench-'));

interface Row {
  mode: string;
  payments: number;
  failoverMs: number;
  recoveryMs: number;
  replayed: number;
}

async function customerBody(api: ReturnType<typeof client>): Promise<string> {
  const c = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: { name: 'Bench', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
  if (c.status !== 201) throw new Error(`customer: ${c.status} ${JSON.stringify(c.body)}`);
  const tier = await api('PATCH', `/v1/customers/${c.body.data.id}`, { body: { tier: 'tier_3' } });
  if (tier.status !== 200) throw new Error(`tier_3: ${tier.status}`);
  return JSON.stringify({ customer_id: c.body.data.id, amount_minor: 10_000, currency: 'NGN', method: 'bank_transfer' });
}

async function run(mode: string, copyImageSeconds: number): Promise<Row> {
  const cluster = await startKoboCluster({
    keys,
    env: { KOBO_CLUSTER_OWNERSHIP: 'node', KOBO_RATE_LIMIT_WRITE_PER_MIN: '100000000', KOBO_RATE_LIMIT_READ_PER_MIN: '100000000', KOBO_CLUSTER_IMAGE_INTERVAL_SECONDS: '0', KOBO_CLUSTER_COPY_IMAGE_SECONDS: String(copyImageSeconds) },
  });
  try {
    const owner = await cluster.owner();
    const ownerUrl = cluster.nodes[owner]!.server.baseUrl;
    const file = postScript(dir, { name: mode, bodies: [await customerBody(client(ownerUrl, key))], authorization: `Bearer ${key}` });
    const load = await runWrk({ url: `${ownerUrl}/v1/payments`, core: 1, threads: 1, connections: 32, durationS: LOAD_S, script: file, scriptArgs: [mode] });
    const survivors = [0, 1, 2].filter((i) => i !== owner);
    const marks = survivors.map((i) => cluster.nodes[i]!.server.output().length);
    // Survivors current: with copy images, one imaging each after the load (its line); without, a pause.
    const settleUntil = Date.now() + SETTLE_MS_MAX;
    if (copyImageSeconds > 0) {
      while (!survivors.every((i, n) => /imaged its copy/.test(cluster.nodes[i]!.server.output().slice(marks[n])))) {
        if (Date.now() > settleUntil) throw new Error('the survivors did not image their copies in time');
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    } else {
      await new Promise((resolve) => setTimeout(resolve, 5_000));
    }
    const killedAt = Date.now();
    await cluster.nodes[owner]!.server.kill();
    const api = client(cluster.nodes[survivors[0]!]!.server.baseUrl, key);
    let failoverMs = -1;
    while (Date.now() - killedAt < FAILOVER_MS_MAX) {
      const r = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: { name: 'After', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } }).catch(() => null);
      if (r !== null && r.status === 201) {
        failoverMs = Date.now() - killedAt;
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    if (failoverMs < 0) {
      for (const i of survivors) process.stderr.write(`--- ${cluster.nodes[i]!.name}\n${cluster.nodes[i]!.server.output().split('\n').filter((l) => !/"msg":"request"/.test(l)).slice(-25).join('\n')}\n`);
      throw new Error(`writes did not succeed again within ${FAILOVER_MS_MAX} ms of the kill`);
    }
    const next = await cluster.owner(10_000, owner);
    const recovered = [...cluster.nodes[next]!.server.output().matchAll(/recovered \d+ shard\(s\) in (\d+) ms \((\d+) WAL records replayed\)/g)].pop();
    return { mode, payments: load.requests - load.non2xx, failoverMs, recoveryMs: Number(recovered?.[1] ?? -1), replayed: Number(recovered?.[2] ?? -1) };
  } finally {
    await cluster.stop();
  }
}

const rows: Row[] = [];
try {
  rows.push(await run('followers do not image their copies (before)', 0));
  rows.push(await run(`followers image their copies every ${COPY_IMAGE_S} s`, COPY_IMAGE_S));
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
const out = table([
  ['mode', 'payments in the log', 'writes again after (ms)', "new owner's recovery (ms)", 'records replayed'],
  ...rows.map((r) => [r.mode, String(r.payments), String(r.failoverMs), String(r.recoveryMs), String(r.replayed)]),
]);
process.stdout.write(`kill -9 of the owner after ${LOAD_S} s of durable POST /v1/payments (32 connections), lease TTL 8 s, no cluster images\n${out}\n`);
writeResult('failover', { machine: machine(), loadS: LOAD_S, copyImageSeconds: COPY_IMAGE_S, rows });
