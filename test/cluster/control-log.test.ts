// The replicated control rows against a real nats-server cluster and real control.db/webhooks.db files:
// the owner's ControlLog publishes each change (fenced, in order) and a ControlFollower applies them
// through the same row code; a former owner's copy is rebuilt from the stream; a foreign tail or a lapsed
// lease stops the owner (fatal) without settling.
import { after, afterEach, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { NatsConnection } from '@nats-io/transport-node';
import { Empty } from '@nats-io/transport-node';
import { jetstream, type JetStreamManager } from '@nats-io/jetstream';
import { startNatsCluster, natsServerBinary, type NatsCluster } from '../helpers/nats.ts';
import { tempDataDir } from '../helpers/server.ts';
import { ControlStore } from '../../src/store/control-store.ts';
import { WebhookStore } from '../../src/webhooks/store.ts';
import { FrontIdempotencyStore } from '../../src/http/idempotency-store.ts';
import { ControlLog, ensureControlStream } from '../../src/cluster/control-log.ts';
import { ControlFollower } from '../../src/cluster/control-follower.ts';
import { connectJetStream, CONTROL_EPOCH_SUBJECT, CONTROL_SEEDED_SUBJECT, CONTROL_STREAM, controlMsgIdOf, epochHeaders } from '../../src/cluster/streams.ts';
import { allRows } from '../../src/store/replica-rows.ts';

const skip = natsServerBinary() === null ? 'nats-server is not installed' : false;
let nats: NatsCluster;
let nc: NatsConnection;
let jsm: JetStreamManager;
const open: Array<{ close(): unknown }> = [];

before(async () => {
  if (skip !== false) return;
  nats = await startNatsCluster(3);
  ({ nc, jsm } = await connectJetStream(nats.urls, 'control-log-test'));
});

afterEach(async () => {
  for (const o of open.splice(0)) await o.close();
  if (skip === false) await jsm.streams.delete(CONTROL_STREAM).catch(() => {});
});

after(async () => {
  if (skip !== false) return;
  await nc?.close(); // undefined when the cluster never started: the hook must still stop what did
  await nats?.stop();
});

/** Appends an epoch marker as a takeover does; returns its sequence (the next owner's fence). */
async function marker(epoch: number): Promise<number> {
  const id = controlMsgIdOf(epoch, 0);
  return (await jetstream(nc).publish(CONTROL_EPOCH_SUBJECT, Empty, { msgID: id, headers: epochHeaders(epoch, id) })).seq;
}

function lease(untilMs: number): SharedArrayBuffer {
  const buffer = new SharedArrayBuffer(8);
  new Float64Array(buffer)[0] = untilMs;
  return buffer;
}

async function ownerLog(epoch: number, fence: number, untilMs = Date.now() + 600_000, fatal: string[] = [], leaseBuffer = lease(untilMs), holdMs = 0): Promise<ControlLog> {
  const log = await ControlLog.open({ servers: nats.urls, epoch, fence, lease: leaseBuffer, holdMs, tails: new SharedArrayBuffer(16), tailSlot: 0, idempotencyRetentionMs: 86_400_000, onFatal: (m) => fatal.push(m) });
  open.push(log);
  return log;
}

/** The stores of one data dir (the owner's server has them reporting to `log`). */
function stores(dir: string): { control: ControlStore; webhooks: WebhookStore; front: FrontIdempotencyStore } {
  const control = new ControlStore(dir);
  const webhooks = new WebhookStore(dir);
  const front = new FrontIdempotencyStore(webhooks.db, 86_400_000);
  open.push(control, webhooks);
  return { control, webhooks, front };
}

function rowsOf(dir: string): unknown {
  const s = stores(dir);
  const sorted = (rows: unknown[]): string[] => rows.map((r) => JSON.stringify(r)).sort();
  return { control: sorted(allRows(s.control.db, 'control')), webhooks: sorted(allRows(s.webhooks.db, 'webhooks')) };
}

const notYet = (p: Promise<unknown>, ms: number): Promise<boolean> => Promise.race([p.then(() => false), new Promise<boolean>((resolve) => setTimeout(() => resolve(true), ms))]);

test('ControlLog → ControlFollower: a key (created, rotated, revoked), a clock, a subscription and a front-idempotency record → settled once stored; a follower holds the same rows and its position; a reopened follower goes on from it', { skip, timeout: 60_000 }, async () => {
  await ensureControlStream(jsm, 3);
  const fence = await marker(1);
  const log = await ownerLog(1, fence);
  const ownerDir = tempDataDir('control-owner');
  const s = stores(ownerDir);
  s.control.replica = log;
  s.webhooks.replica = log;
  s.front.replica = log;
  const key = s.control.insertKey({ secret: 'sk_test_replicated_0001', account: 'acme', nowMs: 1_000 });
  const { record: rotated } = s.control.rotate(key.id, { graceMs: 60_000, nowMs: 2_000 });
  s.control.revoke(rotated.id);
  s.control.setClockOffset('test:acme', 7_200_000);
  const sub = s.webhooks.createSubscription({ owner: 'test:acme', url: 'http://127.0.0.1:9/h', events: ['payment.completed'], secret: 'whsec_kept', nowMs: 3_000 });
  s.webhooks.setStatus(sub.id, 'disabled', 4_000);
  await s.front.run('test:acme:idem-1', 'f'.repeat(64), async () => ({ status: 200, json: '{"data":{"ok":true}}' }));
  await log.settled();
  assert.ok(log.idle());
  const info = await jsm.streams.info(CONTROL_STREAM);
  // 8 changes after the marker: a key, the rotation's new key and the old key's expiry, the revocation,
  // the clock, the subscription twice, the record.
  assert.equal(info.state.last_seq, fence + 8);

  const followerDir = tempDataDir('control-follower');
  const follower = new ControlFollower(followerDir, jetstream(nc), jsm);
  open.push(follower);
  await follower.catchUp(info.state.last_seq);
  assert.equal(follower.position, info.state.last_seq);
  follower.close();
  assert.deepEqual(rowsOf(followerDir), rowsOf(ownerDir));
  const copy = stores(followerDir);
  assert.equal(copy.control.findBySecret('sk_test_replicated_0001')?.expiresAtMs, 62_000);
  assert.equal(copy.webhooks.subscription(sub.id)?.secret, 'whsec_kept');
  assert.equal(copy.webhooks.subscription(sub.id)?.status, 'disabled');

  // One more change: a reopened follower applies it from its position (nothing else is touched).
  s.control.setClockOffset('test:acme', 9_000_000);
  await log.settled();
  const again = new ControlFollower(followerDir, jetstream(nc), jsm);
  open.push(again);
  await again.catchUp((await jsm.streams.info(CONTROL_STREAM)).state.last_seq);
  assert.deepEqual(copy.control.clockOffsets(), [['test:acme', 9_000_000]]);
});

test('ControlFollower: a former owner\'s copy (no position, a key the stream never got) and a seeded stream → the copy is rebuilt: the stray key is gone, the stream\'s rows are there', { skip, timeout: 60_000 }, async () => {
  await ensureControlStream(jsm, 3);
  const log = await ownerLog(2, await marker(2));
  const ownerDir = tempDataDir('control-owner');
  const s = stores(ownerDir);
  s.control.replica = log;
  s.control.insertKey({ secret: 'sk_test_in_the_stream', account: 'acme', nowMs: 1_000 });
  await log.seed(() => allRows(s.control.db, 'control'));
  assert.notEqual(await jsm.streams.getMessage(CONTROL_STREAM, { last_by_subj: CONTROL_SEEDED_SUBJECT }).catch(() => null), null);

  const formerDir = tempDataDir('control-former');
  const former = stores(formerDir);
  former.control.insertKey({ secret: 'sk_test_never_acknowledged', account: 'acme', nowMs: 2_000 });
  const follower = new ControlFollower(formerDir, jetstream(nc), jsm);
  open.push(follower);
  await follower.catchUp((await jsm.streams.info(CONTROL_STREAM)).state.last_seq);
  assert.equal(former.control.findBySecret('sk_test_never_acknowledged'), undefined);
  assert.equal(former.control.findBySecret('sk_test_in_the_stream')?.account, 'acme');
});

test('ControlLog: another owner fenced the stream → the next change is fatal and never settles; a lease lapsed past its hold → fatal too; lapsed within it → the change waits and settles once the lease holds again', { skip, timeout: 60_000 }, async () => {
  await ensureControlStream(jsm, 3);
  const fatal: string[] = [];
  const stale = await ownerLog(3, await marker(3), Date.now() + 600_000, fatal);
  await marker(4);
  const s = stores(tempDataDir('control-stale'));
  s.control.replica = stale;
  s.control.setClockOffset('test:acme', 1_000);
  assert.equal(await notYet(stale.settled(), 3_000), true, 'a change the stream refused never settles');
  assert.equal(fatal.length, 1);
  assert.match(fatal[0]!, /another node owns the cluster now/);

  const lapsed: string[] = [];
  const late = await ownerLog(5, await marker(5), Date.now() - 1, lapsed);
  const t = stores(tempDataDir('control-late'));
  t.control.replica = late;
  t.control.setClockOffset('test:acme', 2_000);
  assert.equal(await notYet(late.settled(), 1_000), true);
  assert.match(lapsed[0] ?? '', /within the lease and its hold/);

  // Lapsed within its hold: the change waits, and settles once the lease holds again.
  const held: string[] = [];
  const buffer = lease(Date.now() - 1);
  const waiting = await ownerLog(6, await marker(6), 0, held, buffer, 30_000);
  const u = stores(tempDataDir('control-held'));
  u.control.replica = waiting;
  u.control.setClockOffset('test:acme', 3_000);
  assert.equal(await notYet(waiting.settled(), 1_000), true, 'nothing settles while the lease has lapsed');
  new Float64Array(buffer)[0] = Date.now() + 60_000;
  assert.equal(await notYet(waiting.settled(), 3_000), false, 'settled once the lease holds again');
  assert.deepEqual(held, []);
});
