// `kobo cluster image-shard`, the copy a per-shard image is made of, taken from a real shard file while a
// server writes it: the copy's two files stand alone (no journal beside them), name the last row they
// hold, pass `kobo verify`, and a server started on them answers every payment acknowledged before the copy.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { client, idem, secretKey, startServer, tempDataDir, uniqueEmail, uniquePhone } from '../helpers/server.ts';
import { ROOT, entryArgs } from '../helpers/build.ts';
import { kobo } from '../helpers/cli.ts';

const key = secretKey();

/** The CLI as a process of its own, awaited without blocking this event loop (the writers go on meanwhile). */
function koboAsync(dataDir: string, ...args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...entryArgs('kobo'), ...args], { cwd: ROOT, env: { ...process.env, KOBO_DATA_DIR: dataDir }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('exit', (status) => resolve({ status, stdout, stderr }));
  });
}

test('cluster image-shard: a copy of a shard taken while the server writes → two files without a journal, naming their last row; verify clean; a server on the copy answers every payment acknowledged before it', { timeout: 120_000 }, async () => {
  const server = await startServer({ keys: [`${key}@copy`], shards: 1, env: { KOBO_SNAPSHOT_INTERVAL_MS: '500' } });
  const out = path.join(tempDataDir('kobo-shard-copy'), 'copy');
  const restoredDir = tempDataDir('kobo-shard-copied');
  let copyServer: Awaited<ReturnType<typeof startServer>> | null = null;
  try {
    const api = client(server.baseUrl, key);
    const c = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: { name: 'Copied', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
    assert.equal(c.status, 201, JSON.stringify(c.body));
    const pay = async (i: number): Promise<string> => {
      const r = await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: c.body.data.id, amount_minor: 10_000 + i, currency: 'NGN', method: 'bank_transfer' } });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      return r.body.data.id as string;
    };
    const before: string[] = [];
    for (let i = 0; i < 120; i += 1) before.push(await pay(i));
    // Writers go on while the copy is taken.
    let writing = true;
    const writers = Promise.all([0, 1, 2].map(async (w) => {
      for (let i = 0; writing; i += 1) await pay(1_000 * (w + 1) + i);
    }));
    const copied = await koboAsync(server.dataDir, 'cluster', 'image-shard', '--shard', '0', '--out', out);
    writing = false;
    await writers;
    assert.equal(copied.status, 0, copied.stderr);
    const last = JSON.parse(copied.stdout.trim().split('\n').pop()!) as { lastLsn: number; lsnFirst: number; n: number; crc: number };
    assert.ok(last.lastLsn >= 120 && last.lsnFirst <= last.lastLsn && last.lsnFirst + last.n - 1 === last.lastLsn, JSON.stringify(last));
    assert.deepEqual(fs.readdirSync(out).sort(), ['shard-0-lists.db', 'shard-0.db'], 'two files, no journal beside them');
    // The two files with the layout are a data dir.
    fs.copyFileSync(path.join(server.dataDir, 'layout.json'), path.join(restoredDir, 'layout.json'));
    for (const name of fs.readdirSync(out)) fs.copyFileSync(path.join(out, name), path.join(restoredDir, name));
    const verify = kobo(restoredDir, 'verify');
    assert.equal(verify.status, 0, `${verify.stdout}\n${verify.stderr}`);
    assert.match(verify.stdout, new RegExp(`WAL LSN \\S+\\.\\.${last.lastLsn} checked`));
    copyServer = await startServer({ keys: [`${key}@copy`], shards: 1, dataDir: restoredDir });
    const onCopy = client(copyServer.baseUrl, key);
    for (const id of before) {
      const read = await onCopy('GET', `/v1/payments/${id}`);
      assert.equal(read.status, 200, `${id}: ${JSON.stringify(read.body)}`);
    }
  } finally {
    await copyServer?.kill();
    await server.kill();
  }
});
