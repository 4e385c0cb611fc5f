// webhooks.db moves subscriptions and deliveries only as their machines' tables say: a failure past
// the threshold disables, a success resets the count, an attempt on a finished delivery moves nothing.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { WebhookStore, type AttemptResult } from '../../src/webhooks/store.ts';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kobo-webhook-store-'));
const store = new WebhookStore(dir);
after(() => {
  store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const AT_MS = 1_795_000_000_000;
const owner = 'test:acct';
const event = (id: string) => ({ id, owner, type: 'payment.completed' as const, key: `payment.completed:${id}`, occurredAtMs: AT_MS, data: {} });

function attempt(deliveryId: string, subscriptionId: string, n: number, ok: boolean, nextAttemptAtMs: number | null): AttemptResult {
  return { deliveryId, subscriptionId, attempt: { n, atMs: AT_MS + n, statusCode: ok ? 200 : 500, durationMs: 1, error: ok ? null : 'HTTP 500', ok }, nextAttemptAtMs, disableAfter: 2 };
}

describe('webhook store: statuses through the machines', () => {
  it('failures: pending while attempts are left, failed after; subscription disabled once failures pass 2', () => {
    const sub = store.createSubscription({ owner, url: 'https://example.test/hook', events: ['payment.completed'], secret: 'whsec_x', nowMs: AT_MS });
    assert.equal(store.ingest([event('e1')], () => AT_MS), 1);
    const [delivery] = store.due(10);
    store.record([attempt(delivery!.id, sub.id, 1, false, AT_MS + 60_000)]);
    assert.equal(store.delivery(delivery!.id)!.status, 'pending');
    assert.equal(store.delivery(delivery!.id)!.nextAttemptAtMs, AT_MS + 60_000);
    store.record([attempt(delivery!.id, sub.id, 2, false, null)]);
    assert.equal(store.delivery(delivery!.id)!.status, 'failed');
    assert.equal(store.delivery(delivery!.id)!.nextAttemptAtMs, null);
    assert.deepEqual([store.subscription(sub.id)!.status, store.subscription(sub.id)!.consecutiveFailures], ['active', 2]);
    // An attempt recorded for a finished delivery is logged, but the delivery keeps its outcome.
    store.record([attempt(delivery!.id, sub.id, 3, true, null)]);
    assert.equal(store.delivery(delivery!.id)!.status, 'failed');
    assert.equal(store.attemptsOf(delivery!.id).length, 3);
    assert.deepEqual([store.subscription(sub.id)!.status, store.subscription(sub.id)!.consecutiveFailures], ['active', 0]);
    store.record([attempt(delivery!.id, sub.id, 4, false, null), attempt(delivery!.id, sub.id, 5, false, null)]);
    assert.equal(store.subscription(sub.id)!.status, 'active');
    store.record([attempt(delivery!.id, sub.id, 6, false, null)]);
    assert.deepEqual([store.subscription(sub.id)!.status, store.subscription(sub.id)!.consecutiveFailures], ['disabled', 3]);
  });

  it('enable: disabled → active with failures reset; enabling an active one resets its failures', () => {
    const sub = store.createSubscription({ owner, url: 'https://example.test/other', events: ['payment.completed'], secret: 'whsec_y', nowMs: AT_MS });
    assert.equal(store.setStatus(sub.id, 'disabled', AT_MS), true);
    assert.equal(store.subscription(sub.id)!.status, 'disabled');
    assert.equal(store.setStatus(sub.id, 'active', AT_MS), true);
    assert.deepEqual([store.subscription(sub.id)!.status, store.subscription(sub.id)!.consecutiveFailures], ['active', 0]);
    assert.equal(store.setStatus('no-such-id', 'active', AT_MS), false);
  });
});
