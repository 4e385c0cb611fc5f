// A full disk under load: the shard stops the process (exit 70) with one fatal line that says the disk is
// full, at every log level but silent, and every payment acknowledged before it is there after a restart
// on a disk with room. Needs a small tmpfs (mount, as root); skipped where this sandbox cannot mount one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { client, idem, secretKey, startServer, tempDataDir, uniqueEmail, uniquePhone } from '../helpers/server.ts';

function mountSmallTmpfs(dir: string, size: string): boolean {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

test('disk full under load → exit 70 with a fatal "disk is full" line at KOBO_LOG_LEVEL=warn; every acknowledged payment survives', { timeout: 120_000 }, async (t) => {
  const mnt = tempDataDir('kobo-small-disk');
  if (!mountSmallTmpfs(mnt, '3m')) {
    t.skip('cannot mount a tmpfs here');
    return;
  }
  try {
    const key = secretKey();
    const dataDir = path.join(mnt, 'data');
    const server = await startServer({ keys: [key], dataDir, shards: 1, env: { KOBO_LOG_LEVEL: 'warn', KOBO_SNAPSHOT_INTERVAL_MS: '0', KOBO_SNAPSHOT_EVERY_RECORDS: '0' } });
    const api = client(server.baseUrl, key);
    const c = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: { name: 'Full Disk', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
    assert.equal(c.status, 201, JSON.stringify(c.body));
    const acknowledged: string[] = [];
    const exit = new Promise<number | null>((resolve) => server.child.once('exit', (code) => resolve(code)));
    let running = true;
    void exit.then(() => (running = false));
    // 3 MB fills within a few thousand payments; bounded in count either way.
    for (let i = 0; i < 20_000 && running; i += 8) {
      const batch = await Promise.allSettled(Array.from({ length: 8 }, () => api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: c.body.data.id, amount_minor: 10_000, currency: 'NGN', method: 'bank_transfer' } })));
      for (const r of batch) if (r.status === 'fulfilled' && r.value.status === 201) acknowledged.push(r.value.body.data.id);
    }
    assert.equal(await exit, 70, `exit code 70 (the output:\n${server.output().slice(-2_000)})`);
    const fatal = server.output().split('\n').filter((line) => line.includes('"level":"fatal"'));
    assert.equal(fatal.length, 1, server.output().slice(-2_000));
    assert.match(fatal[0]!, /disk holding the data dir is full/);
    assert.ok(acknowledged.length > 0, 'some payments were acknowledged before the disk filled');

    // The same files on a disk with room: everything acknowledged is there.
    const roomy = tempDataDir('kobo-after-full');
    fs.cpSync(dataDir, roomy, { recursive: true });
    const again = await startServer({ keys: [key], dataDir: roomy, shards: 1 });
    try {
      const api2 = client(again.baseUrl, key);
      for (const id of acknowledged) {
        const p = await api2('GET', `/v1/payments/${id}`);
        assert.equal(p.status, 200, `acknowledged payment ${id} is there`);
      }
    } finally {
      await again.stop();
    }
  } finally {
    try {
      execFileSync('umount', ['-l', mnt], { stdio: 'ignore' });
    } catch {
      // Left mounted (lazily unmounted on the sandbox's end): a 3 MB tmpfs under the temp dir.
    }
  }
});
