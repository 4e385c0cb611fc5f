// The owner lease against a real nats-server cluster: a key that lapsed (its TTL passed without a
// renewal, as during the bucket's election) is created again and counts only once every stream ends at
// a sequence the owner verified as its own; another writer on a stream, or another node's claim, loses it.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { NatsConnection } from '@nats-io/transport-node';
import { Empty } from '@nats-io/transport-node';
import { jetstream, StorageType, type JetStreamManager } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { startNatsCluster, natsServerBinary, type NatsCluster } from '../helpers/nats.ts';
import { waitFor } from '../helpers/wait.ts';
import { LeaseKeeper } from '../../src/cluster/lease-keeper.ts';
import { ensureControlStream } from '../../src/cluster/control-log.ts';
import type { TailsAnswer } from '../../src/cluster/owner-child.ts';
import { connectJetStream, CONTROL_STREAM, LEASE_BUCKET, OWNER_KEY, streamOf, subjectOf } from '../../src/cluster/streams.ts';

const skip = natsServerBinary() === null ? 'nats-server is not installed' : false;
/** The bucket's TTL: short, so that a test can let the key lapse. */
const LEASE_MS = 2_000;
let nats: NatsCluster;
let nc: NatsConnection;
let jsm: JetStreamManager;
let kv: KV;

before(async () => {
  if (skip !== false) return;
  nats = await startNatsCluster(3);
  ({ nc, jsm } = await connectJetStream(nats.urls, 'lease-test'));
  await jsm.streams.add({ name: streamOf(0), subjects: [subjectOf(0)], num_replicas: 3, storage: StorageType.File });
  await ensureControlStream(jsm, 3);
  kv = await new Kvm(nc).create(LEASE_BUCKET, { replicas: 3, ttl: LEASE_MS, history: 1 });
});

after(async () => {
  if (skip !== false) return;
  await nc?.close();
  await nats?.stop();
});

/** Waits (bounded) until the owner key has expired: nobody renewed it for its TTL. */
async function lapsed(): Promise<void> {
  for (let i = 0; i < 100; i += 1) {
    const entry = await kv.get(OWNER_KEY);
    if (entry === null || entry.operation !== 'PUT') return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.fail('the owner key did not expire');
}

/** The streams' last sequences now (kobo-shard-0, kobo-control). */
async function lasts(): Promise<number[]> {
  return [(await jsm.streams.info(streamOf(0))).state.last_seq, (await jsm.streams.info(CONTROL_STREAM)).state.last_seq];
}

function tails(verified: number[], shipped: number[]): () => Promise<TailsAnswer> {
  return async () => ({ type: 'tails', id: 0, verified, shipped });
}

test('LeaseKeeper: the key lapsed, nobody else claimed, no stream moved → re-created and proven: the lease counts again, the epoch stays in the value; a stream with rows in flight → pending until they are verified; another writer on a stream → lost', { skip, timeout: 60_000 }, async () => {
  const lines: string[] = [];
  const keeper = new LeaseKeeper(kv, jsm, { node: 'a', url: 'http://a', leaseMs: LEASE_MS, shards: 1, log: (m) => lines.push(m) });
  assert.equal(await keeper.claim(), 'claimed');
  const epoch = keeper.revision;
  await jetstream(nc).publish(subjectOf(0), Empty); // the owner's row
  const mine = await lasts();
  assert.deepEqual(await keeper.renew(tails(mine, mine)), { kind: 'renewed' });

  await lapsed();
  const before = keeper.untilMs;
  // A row of ours is in flight: stored, shipped, not verified yet.
  await jetstream(nc).publish(subjectOf(0), Empty);
  const now = await lasts();
  assert.deepEqual(await keeper.renew(tails(mine, now)), { kind: 'pending' });
  assert.equal(keeper.untilMs, before, 'a re-created lease does not count before the proof');
  assert.ok(lines.some((l) => /re-created its lapsed lease/.test(l)));
  assert.deepEqual(await keeper.renew(tails(now, now)), { kind: 'renewed' });
  assert.ok(keeper.untilMs > Date.now(), 'the lease counts again');
  assert.notEqual(keeper.revision, epoch);
  assert.equal((await kv.get(OWNER_KEY))!.json<{ epoch: number }>().epoch, epoch, 'the value keeps the epoch');

  await lapsed();
  await jetstream(nc).publish(subjectOf(0), Empty); // another writer's
  const lost = await keeper.renew(tails(now, now));
  assert.equal(lost.kind, 'lost');
  assert.match(lost.kind === 'lost' ? lost.why : '', /kobo-shard-0 ends at \d+, past anything this owner published/);
  await keeper.handBack();
  // A KV read may be answered by a replica that has not applied the delete yet (direct get), so the key is
  // read until the DEL shows, for 1 s: under the bucket's TTL, so only an explicit delete can leave a DEL
  // marker (a key that lapses is gone and reads as 'none').
  const operation = await waitFor(async () => (await kv.get(OWNER_KEY))?.operation ?? 'none', (op) => op === 'DEL', 1_000);
  assert.equal(operation, 'DEL', 'a lost re-created key is handed back');
});

test('LeaseKeeper: the key lapsed and another node claimed it → lost, naming that node; the other node\'s key is left alone', { skip, timeout: 60_000 }, async () => {
  const a = new LeaseKeeper(kv, jsm, { node: 'a', url: 'http://a', leaseMs: LEASE_MS, shards: 1, log: () => {} });
  const b = new LeaseKeeper(kv, jsm, { node: 'b', url: 'http://b', leaseMs: LEASE_MS, shards: 1, log: () => {} });
  await lapsed();
  assert.equal(await a.claim(), 'claimed');
  assert.equal(await b.claim(), 'taken');
  await lapsed();
  assert.equal(await b.claim(), 'claimed');
  const all = await lasts();
  const renewal = await a.renew(tails(all, all));
  assert.deepEqual(renewal, { kind: 'lost', why: 'the lease is held by b' });
  await a.handBack();
  assert.equal((await kv.get(OWNER_KEY))!.json<{ node: string }>().node, 'b');
});

/**
 * The bucket as a lease keeper sees it, with every update's answer held back `holdMs` after the server
 * applied it: a call made meanwhile meets a key already at the new revision, every time. Records what each
 * delete was sent with and what the updates returned.
 */
function slowAnswers(holdMs: number): { kv: KV; updated: number[]; deletedAt: number[] } {
  const updated: number[] = [];
  const deletedAt: number[] = [];
  const slow = {
    create: (key: string, value: string) => kv.create(key, value),
    get: (key: string) => kv.get(key),
    update: async (key: string, value: string, revision: number, timeout?: number) => {
      const applied = await kv.update(key, value, revision, timeout);
      updated.push(applied);
      await new Promise((resolve) => setTimeout(resolve, holdMs));
      return applied;
    },
    delete: (key: string, options: { previousSeq: number }) => {
      deletedAt.push(options.previousSeq);
      return kv.delete(key, options);
    },
  };
  return { kv: slow as unknown as KV, updated, deletedAt };
}

test('LeaseKeeper: operations on one lease take turns → a renewal sent while another is unanswered renews, and a hand-back sent while a renewal is unanswered deletes the key at the revision that renewal left', { skip, timeout: 60_000 }, async () => {
  await lapsed();
  const bucket = slowAnswers(300);
  const keeper = new LeaseKeeper(bucket.kv, jsm, { node: 'a', url: 'http://a', leaseMs: LEASE_MS, shards: 1, log: () => {} });
  assert.equal(await keeper.claim(), 'claimed');
  // A takeover's renewal and the poll's, 50 ms apart: the second used to be sent at the revision the
  // first was replacing, fail, and take the lease for another node's.
  const first = keeper.renew(null);
  await new Promise((resolve) => setTimeout(resolve, 50));
  const second = keeper.renew(null);
  assert.deepEqual(await Promise.all([first, second]), [{ kind: 'renewed' }, { kind: 'renewed' }]);
  assert.equal(bucket.updated.length, 2);
  assert.equal(keeper.revision, bucket.updated[1], 'the lease holds the revision of the last renewal');
  // A planned stop hands the lease back while the poll's renewal is still unanswered.
  const renewing = keeper.renew(null);
  await new Promise((resolve) => setTimeout(resolve, 50));
  await keeper.handBack();
  assert.deepEqual(await renewing, { kind: 'renewed' });
  assert.deepEqual(bucket.deletedAt, [bucket.updated[2]], 'the delete was sent at the revision the renewal left');
  assert.equal(keeper.revision, 0, 'nothing is held after the hand-back');
  // Read until the DEL shows, for 1 s (under the TTL): only the hand-back's delete can leave one.
  const operation = await waitFor(async () => (await kv.get(OWNER_KEY))?.operation ?? 'none', (op) => op === 'DEL', 1_000);
  assert.equal(operation, 'DEL', 'the key was deleted, not left to its TTL');
  // A renewal asked for after the hand-back renews nothing.
  assert.deepEqual(await keeper.renew(null), { kind: 'pending' });
  assert.equal(bucket.updated.length, 3);
});
