// A backup carries the idempotency records of the POSTs the front end answers itself (webhook
// subscriptions, the sandbox clock): after a restore, a client's retry replays instead of creating a
// second subscription or moving the clock twice. Real processes, real files, over HTTP.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { client, idem, secretKey, startServer, tempDataDir } from '../helpers/server.ts';
import { kobo } from '../helpers/cli.ts';

const key = secretKey();
const keys = [`${key}@frontidem`];

for (const mode of ['online', 'offline'] as const) {
  test(`restore (backup taken ${mode}): a retried subscription or clock advance → the stored reply, nothing made or moved twice`, { timeout: 90_000 }, async () => {
    let server = await startServer({ keys });
    const subscriptionKey = idem('sub');
    const clockKey = idem('clock');
    const subscriptionBody = { url: 'http://127.0.0.1:9/hook', events: ['payment.completed'] };
    let backupFile = '';
    let subscriptionReplay: { status: number; body: unknown };
    let clockReply: { status: number; body: unknown };
    let clockBefore: { offset_seconds: number };
    try {
      const api = client(server.baseUrl, key);
      const created = await api('POST', '/v1/webhooks/subscriptions', { idempotencyKey: subscriptionKey, body: subscriptionBody });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      // A replay never shows the signing secret again: what a retry gets is this, before and after.
      subscriptionReplay = await api('POST', '/v1/webhooks/subscriptions', { idempotencyKey: subscriptionKey, body: subscriptionBody });
      assert.equal(subscriptionReplay.status, 201);
      assert.equal((subscriptionReplay.body as { data: { id: string } }).data.id, created.body.data.id);
      clockReply = await api('POST', '/v1/test_helpers/clock/advance', { idempotencyKey: clockKey, body: { seconds: 7_200 } });
      assert.equal(clockReply.status, 200, JSON.stringify(clockReply.body));
      clockBefore = (await api('GET', '/v1/test_helpers/clock')).body.data;
      assert.equal(clockBefore.offset_seconds, 7_200);
      backupFile = path.join(tempDataDir('backup'), 'b.kobo');
      if (mode === 'online') assert.equal(kobo(server.dataDir, 'snapshot', '--out', backupFile).status, 0);
    } finally {
      await server.stop();
    }
    if (mode === 'offline') {
      const snap = kobo(server.dataDir, 'snapshot', '--out', backupFile);
      assert.equal(snap.status, 0, snap.stderr);
    }
    const restoredDir = tempDataDir('restored');
    const restored = kobo(restoredDir, 'restore', backupFile);
    assert.equal(restored.status, 0, restored.stderr);
    server = await startServer({ keys, dataDir: restoredDir });
    try {
      const api = client(server.baseUrl, key);
      const retried = await api('POST', '/v1/webhooks/subscriptions', { idempotencyKey: subscriptionKey, body: subscriptionBody });
      assert.equal(retried.status, subscriptionReplay.status);
      assert.deepEqual(retried.body, subscriptionReplay.body);
      const listed = await api('GET', '/v1/webhooks/subscriptions');
      assert.equal(listed.status, 200);
      assert.equal(listed.body.data.length, 1, 'the retry must not have made a second subscription');
      const otherBody = await api('POST', '/v1/webhooks/subscriptions', { idempotencyKey: subscriptionKey, body: { ...subscriptionBody, events: ['transfer.failed'] } });
      assert.equal(otherBody.status, 409);
      assert.equal(otherBody.body.error.code, 'IDEMPOTENCY_REPLAY');
      const clockRetried = await api('POST', '/v1/test_helpers/clock/advance', { idempotencyKey: clockKey, body: { seconds: 7_200 } });
      assert.equal(clockRetried.status, 200);
      assert.deepEqual(clockRetried.body, clockReply.body, 'the stored reply, byte for byte');
      assert.equal((await api('GET', '/v1/test_helpers/clock')).body.data.offset_seconds, clockBefore.offset_seconds, 'the clock moved once');
    } finally {
      await server.stop();
    }
    const verify = kobo(server.dataDir, 'verify');
    assert.equal(verify.status, 0, verify.stderr);
  });
}
