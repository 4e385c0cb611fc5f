// `kobo snapshot` of a running two-shard server while wallet transfers cross between the shards: each
// backup, restored into an empty data dir, passes `kobo verify` (no money made or lost between
// partitions), because the backup reads every shard file at one cut the server holds for it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { ROOT, client, idem, secretKey, startServer, tempDataDir, uniqueEmail, uniquePhone } from '../helpers/server.ts';
import { entryArgs } from '../helpers/build.ts';
import { kobo } from '../helpers/cli.ts';
import { partitionOfId } from '../../src/ids.ts';
import { ControlStore } from '../../src/store/control-store.ts';

const key = secretKey();
const BACKUPS = 3;
const WORKERS = 8;
const LOAD_MS_MAX = 60_000;

/** The CLI without blocking this process, so the load goes on while the backup is taken. */
function koboAsync(dataDir: string, ...args: string[]): Promise<{ status: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...entryArgs('kobo'), ...args], { cwd: ROOT, env: { ...process.env, KOBO_DATA_DIR: dataDir } });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('exit', (status) => resolve({ status, output }));
  });
}

test('online snapshots under cross-shard wallet transfers restore to data dirs that verify', { timeout: 180_000 }, async () => {
  const server = await startServer({ keys: [key], shards: 2, env: { KOBO_RAIL_LATENCY_MS: '5', KOBO_RATE_LIMIT_WRITE_PER_MIN: '1000000' } });
  const api = client(server.baseUrl, key);
  try {
    const customers: Array<{ id: string; walletId: string; shard: number }> = [];
    while (customers.filter((c) => c.shard === 0).length < 2 || customers.filter((c) => c.shard === 1).length < 2) {
      const c = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: { name: 'Cut', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
      assert.equal(c.status, 201, JSON.stringify(c.body));
      const p = await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: c.body.data.id, amount_minor: 5_000_000, currency: 'NGN', method: 'bank_transfer' } });
      assert.equal((await api('POST', `/v1/test_helpers/payments/${p.body.data.id}/settle`)).status, 200);
      customers.push({ id: c.body.data.id, walletId: c.body.data.wallets[0].id, shard: partitionOfId(c.body.data.id) % 2 });
    }
    // Every customer pays one on the other shard.
    const routes = await Promise.all(customers.map(async (from) => {
      const to = customers.find((c) => c.shard !== from.shard)!;
      const b = await api('POST', '/v1/beneficiaries', { idempotencyKey: idem(), body: { customer_id: from.id, type: 'wallet', account_number: to.walletId, currency: 'NGN' } });
      assert.equal(b.status, 201, JSON.stringify(b.body));
      return { from, beneficiaryId: b.body.data.id as string };
    }));
    let loading = true;
    let transfers = 0;
    const deadline = Date.now() + LOAD_MS_MAX;
    const load = Array.from({ length: WORKERS }, async (_, w) => {
      for (let i = 0; loading && Date.now() < deadline; i += 1) {
        const route = routes[(w + i) % routes.length]!;
        const t = await api('POST', '/v1/transfers', { idempotencyKey: idem('cut'), body: { customer_id: route.from.id, beneficiary_id: route.beneficiaryId, amount_minor: 100 + (i % 50), currency: 'NGN' } });
        if (t.status === 201) transfers += 1;
      }
    });
    try {
      await new Promise((resolve) => setTimeout(resolve, 500));
      for (let n = 1; n <= BACKUPS; n += 1) {
        const file = path.join(tempDataDir('cut-backup'), `b${n}.kobo`);
        const snap = await koboAsync(server.dataDir, 'snapshot', '--out', file);
        assert.equal(snap.status, 0, snap.output);
        const restored = path.join(tempDataDir('cut-restored'), 'data');
        const restore = kobo(restored, 'restore', file);
        assert.equal(restore.status, 0, restore.stderr + restore.stdout);
        const verify = kobo(restored, 'verify');
        assert.equal(verify.status, 0, `backup ${n} (after ${transfers} transfers) restored:\n${verify.stdout}\n${verify.stderr}`);
      }
    } finally {
      loading = false;
      await Promise.all(load);
    }
    assert.ok(transfers > 50, `cross-shard transfers ran during the backups (${transfers})`);
  } finally {
    await server.stop();
  }
  const verify = kobo(server.dataDir, 'verify');
  assert.equal(verify.status, 0, verify.stderr);
});

test('a hold asked long ago (its backup gave up, e.g. across a restart) is refused as stale; a fresh one is granted and released once', { timeout: 60_000 }, async () => {
  const server = await startServer({ keys: [key], shards: 2 });
  try {
    const control = new ControlStore(server.dataDir);
    try {
      const result = async (id: string): Promise<string | null> => {
        for (const deadline = Date.now() + 10_000; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 50))) {
          const action = control.action(id);
          if (action?.doneAtMs != null) return action.result;
        }
        return null;
      };
      const stale = control.queueAction({ kind: 'forwards.hold', target: 'old-backup', payload: { holdMs: 10_000 } }, Date.now() - 60_000);
      assert.match((await result(stale)) ?? '', /^STALE/);
      const fresh = control.queueAction({ kind: 'forwards.hold', target: 'new-backup', payload: { holdMs: 10_000 } }, Date.now());
      assert.equal(await result(fresh), 'ok');
      const released = control.queueAction({ kind: 'forwards.release', target: 'new-backup', payload: {} }, Date.now());
      assert.equal(await result(released), 'ok');
      const again = control.queueAction({ kind: 'forwards.release', target: 'new-backup', payload: {} }, Date.now());
      assert.match((await result(again)) ?? '', /^NOT_HELD/);
    } finally {
      control.close();
    }
  } finally {
    await server.stop();
  }
});
