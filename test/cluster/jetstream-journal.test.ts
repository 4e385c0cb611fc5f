// The replicated journal against a real nats-server cluster and a real shard file: a sync answers only
// after the PubAck and the fsync; a message already stored by an earlier attempt counts as ours; a
// foreign message at our sequence, or a lapsed lease, fails the sync (the shard stops).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { jetstream, StorageType, type JetStreamManager } from '@nats-io/jetstream';
import { startNatsCluster, natsServerBinary, type NatsCluster } from '../helpers/nats.ts';
import { ShardStore } from '../../src/store/shard-store.ts';
import { SqliteJournal } from '../../src/journal/journal.ts';
import { JetStreamJournal } from '../../src/journal/jetstream-journal.ts';
import { connectJetStream, epochHeaders, msgIdOf, rowHeaders, rowOf, streamOf, subjectOf } from '../../src/cluster/streams.ts';

const skip = natsServerBinary() === null ? 'nats-server is not installed' : false;
let nats: NatsCluster;
let nc: NatsConnection;
let jsm: JetStreamManager;
let shard = 0;

before(async () => {
  if (skip !== false) return;
  nats = await startNatsCluster(3);
  ({ nc, jsm } = await connectJetStream(nats.urls, 'journal-test'));
});

after(async () => {
  if (skip !== false) return;
  await nc?.close(); // undefined when the cluster never started: the hook must still stop what did
  await nats?.stop();
});

/** A fresh stream and shard file; the journal's fence is the stream's last sequence after `prefill`. */
async function setup(leaseUntilMs: number, prefill: (subject: string) => Promise<void> = async () => {}, holdMs = 0): Promise<{ store: ShardStore; journal: JetStreamJournal; shard: number; lease: Float64Array; tails: Float64Array }> {
  shard += 1;
  await jsm.streams.add({ name: streamOf(shard), subjects: [subjectOf(shard)], num_replicas: 3, storage: StorageType.File });
  await prefill(subjectOf(shard));
  const fence = (await jsm.streams.info(streamOf(shard))).state.last_seq;
  const store = new ShardStore(path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'kobo-jsj-')), 'shard-0.db'), { deferredSync: true });
  const lease = new SharedArrayBuffer(8);
  new Float64Array(lease)[0] = leaseUntilMs;
  // The tails of shard `shard` are slots 2·shard (verified) and 2·shard + 1 (shipped).
  const tails = new SharedArrayBuffer(8 * 2 * (shard + 1));
  return { store, journal: new JetStreamJournal(new SqliteJournal(store), shard, { servers: nats.urls, epoch: 7, fence, lease, holdMs, tails }), shard, lease: new Float64Array(lease), tails: new Float64Array(tails) };
}

function synced(journal: JetStreamJournal): Promise<Error | null> {
  return new Promise((resolve) => journal.sync(resolve));
}

test('JetStreamJournal: rows appended → one message each, in order, msg id shard:epoch:batch, the row exactly; sync answers once acknowledged', { skip, timeout: 60_000 }, async () => {
  const { store, journal, shard: s } = await setup(Date.now() + 60_000);
  for (let i = 0; i < 5; i += 1) store.appendBatch([{ partition: 0, body: JSON.stringify([{ t: 'x', i }]) }, { partition: 2, body: '[]' }]);
  assert.equal(await synced(journal), null);
  const info = await jsm.streams.info(streamOf(s));
  assert.equal(info.state.messages, 5);
  for (let seq = 1; seq <= 5; seq += 1) {
    const m = (await jsm.streams.getMessage(streamOf(s), { seq }))!;
    assert.equal(m.header.get('Nats-Msg-Id'), msgIdOf(s, 7, seq));
    const row = rowOf(m.header, m.data)!;
    assert.equal(row.lsnFirst, 1 + (seq - 1) * 2);
    assert.equal(row.n, 2);
    assert.deepEqual(store.rowAt(row.lsnFirst), { n: 2, batch: seq, crc: row.crc });
  }
  await journal.close();
  store.close();
});

test('JetStreamJournal: a row whose message an earlier attempt already stored → acknowledged as ours (2.9.10 answers 10071), later rows go on', { skip, timeout: 60_000 }, async () => {
  const { store, journal, shard: s } = await setup(Date.now() + 60_000);
  // The row's message is stored before the journal sends it, as an attempt whose PubAck was lost leaves it.
  const rows: Array<{ body: Buffer; crc: number }> = [];
  store.onRow = (r) => rows.push(r);
  store.appendBatch([{ partition: 0, body: '[{"t":"a"}]' }]);
  const js = jetstream(nc);
  const id = msgIdOf(s, 7, 1);
  await js.publish(subjectOf(s), rows[0]!.body, { msgID: id, headers: rowHeaders({ lsnFirst: 1, n: 1, batch: 1, body: rows[0]!.body, crc: rows[0]!.crc }, id) });
  journal.append({ lsnFirst: 1, n: 1, batch: 1, body: rows[0]!.body, crc: rows[0]!.crc });
  store.onRow = (r) => void journal.append(r);
  store.appendBatch([{ partition: 0, body: '[{"t":"b"}]' }]);
  assert.equal(await synced(journal), null);
  const info = await jsm.streams.info(streamOf(s));
  assert.equal(info.state.last_seq, 2, 'the first row is stored once');
  assert.equal((await jsm.streams.getMessage(streamOf(s), { seq: 2 }))!.header.get('Nats-Msg-Id'), msgIdOf(s, 7, 2));
  await journal.close();
  store.close();
});

test('JetStreamJournal: another owner appended at our sequence → the sync fails (the shard is lost), nothing acknowledged', { skip, timeout: 60_000 }, async () => {
  const { store, journal, shard: s } = await setup(Date.now() + 60_000);
  // A new owner's epoch marker lands first.
  const id = msgIdOf(s, 8, 0);
  await jetstream(nc).publish(subjectOf(s), new Uint8Array(0), { msgID: id, headers: epochHeaders(8, id), expect: { lastSequence: 0 } });
  store.appendBatch([{ partition: 0, body: '[{"t":"late"}]' }]);
  const error = await synced(journal);
  assert.ok(error !== null);
  assert.match(error.message, /another node owns/);
  assert.equal((await jsm.streams.info(streamOf(s))).state.messages, 1, 'the stale row did not land');
  await journal.close();
  store.close();
});

test('JetStreamJournal: a new owner\'s marker takes the place of the first of two pipelined rows → the second is refused too (fenced on the first\'s msg id), the stream holds only the marker', { skip, timeout: 60_000 }, async () => {
  const { store, journal, shard: s } = await setup(Date.now() + 60_000);
  // The marker lands at sequence 1 while both rows are still to be sent: row 1 expects sequence 0 and is
  // refused; row 2 expects sequence 1, which the marker now is, and would land after it on a sequence
  // fence alone.
  const id = msgIdOf(s, 8, 0);
  await jetstream(nc).publish(subjectOf(s), new Uint8Array(0), { msgID: id, headers: epochHeaders(8, id), expect: { lastSequence: 0 } });
  try {
    store.appendBatch([{ partition: 0, body: '[{"t":"stale","i":1}]' }]);
    store.appendBatch([{ partition: 0, body: '[{"t":"stale","i":2}]' }]);
    const error = await synced(journal);
    assert.ok(error !== null);
    assert.match(error.message, /another node owns/);
    // Give a wrongly accepted second row time to show.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const info = await jsm.streams.info(streamOf(s));
    assert.equal(info.state.messages, 1, 'no stale row landed after the marker');
    assert.equal((await jsm.streams.getMessage(streamOf(s), { seq: info.state.last_seq }))!.header.get('Nats-Msg-Id'), id);
  } finally {
    // Closed on failure too: an open journal keeps its connection, and the test file would never end.
    await journal.close();
    store.close();
  }
});

test('JetStreamJournal: the lease lapsed, within its hold → the sync waits, and answers once the lease holds again; the verified and shipped tails are the row\'s sequence', { skip, timeout: 60_000 }, async () => {
  const { store, journal, shard: s, lease, tails } = await setup(Date.now() - 1, async () => {}, 30_000);
  store.appendBatch([{ partition: 0, body: '[{"t":"x"}]' }]);
  let answer: Error | null | undefined;
  journal.sync((error) => (answer = error));
  for (let i = 0; i < 100 && (await jsm.streams.info(streamOf(s))).state.messages < 1; i += 1) await new Promise((resolve) => setTimeout(resolve, 50));
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.equal(answer, undefined, 'no answer while the lease has lapsed');
  assert.equal(tails[2 * s], 1, 'verified through the row');
  assert.equal(tails[2 * s + 1], 1, 'shipped through the row');
  lease[0] = Date.now() + 60_000;
  for (let i = 0; i < 100 && answer === undefined; i += 1) await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(answer, null);
  await journal.close();
  store.close();
});

test('JetStreamJournal: the lease has run out and its hold with it → the sync fails even though the row is stored', { skip, timeout: 60_000 }, async () => {
  const { store, journal } = await setup(Date.now() - 1);
  store.appendBatch([{ partition: 0, body: '[{"t":"x"}]' }]);
  const error = await synced(journal);
  assert.ok(error !== null);
  assert.match(error.message, /lease/);
  await journal.close();
  store.close();
});

