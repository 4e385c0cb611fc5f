// A node's copy of a shard's log kept from the stream (ShardFollower), against a real nats-server
// cluster and real shard files: rows arrive exactly as shipped; a former owner's copy that holds rows
// the stream never got has them cut (with images taken after them) when it catches up.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { jetstream, StorageType, type JetStreamManager } from '@nats-io/jetstream';
import { startNatsCluster, natsServerBinary, type NatsCluster } from '../helpers/nats.ts';
import { ShardStore } from '../../src/store/shard-store.ts';
import { ShardFollower } from '../../src/cluster/follower.ts';
import { connectJetStream, epochHeaders, msgIdOf, rowHeaders, streamOf, subjectOf } from '../../src/cluster/streams.ts';
import { shardFile } from '../../src/shard/layout.ts';
import { snapshotRow } from '../../src/store/snapshot.ts';
import { truncateCovered } from '../../src/store/truncate-covered.ts';
import type { EncodedRow } from '../../src/journal/log-segments.ts';

const skip = natsServerBinary() === null ? 'nats-server is not installed' : false;
let nats: NatsCluster;
let nc: NatsConnection;
let jsm: JetStreamManager;
let shard = 100;

before(async () => {
  if (skip !== false) return;
  nats = await startNatsCluster(3);
  ({ nc, jsm } = await connectJetStream(nats.urls, 'follower-test'));
});

after(async () => {
  if (skip !== false) return;
  await nc?.close(); // undefined when the cluster never started: the hook must still stop what did
  await nats?.stop();
});

/** A shard file in a fresh data dir that records the rows it appends. */
function owner(dir: string, s: number): { store: ShardStore; rows: EncodedRow[] } {
  const store = new ShardStore(path.join(dir, shardFile(s)));
  const rows: EncodedRow[] = [];
  store.onRow = (row) => rows.push(row);
  return { store, rows };
}

async function publish(s: number, rows: readonly EncodedRow[], epoch = 1): Promise<number> {
  const js = jetstream(nc);
  let seq = 0;
  for (const row of rows) {
    const id = msgIdOf(s, epoch, row.batch);
    seq = (await js.publish(subjectOf(s), row.body, { msgID: id, headers: rowHeaders(row, id) })).seq;
  }
  return seq;
}

function logOf(store: ShardStore): string[] {
  return [...store.walAfter(0)].map((e) => `${e.lsn}:${e.partition}:${e.batch}:${e.body}:${e.ok}`);
}

test('ShardFollower: a fresh copy follows the stream → the same log rows, LSNs, batches and checksums; epoch markers skipped; position kept across a reopen', { skip, timeout: 60_000 }, async () => {
  shard += 1;
  await jsm.streams.add({ name: streamOf(shard), subjects: [subjectOf(shard)], num_replicas: 3, storage: StorageType.File });
  const source = owner(fs.mkdtempSync(path.join(os.tmpdir(), 'kobo-src-')), shard);
  const marker = msgIdOf(shard, 1, 0);
  await jetstream(nc).publish(subjectOf(shard), new Uint8Array(0), { msgID: marker, headers: epochHeaders(1, marker) });
  for (let i = 0; i < 30; i += 1) source.store.appendBatch([{ partition: i % 4, body: JSON.stringify([{ t: 'r', i }]) }, { partition: 1, body: '[]' }]);
  const last = await publish(shard, source.rows);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kobo-copy-'));
  let follower = new ShardFollower(shard, dir, jetstream(nc));
  await follower.catchUp(last);
  assert.equal(follower.position, last);
  follower.close();
  const copy = new ShardStore(path.join(dir, shardFile(shard)));
  assert.deepEqual(logOf(copy), logOf(source.store));
  for (const row of source.rows) assert.deepEqual(copy.rowAt(row.lsnFirst), { n: row.n, batch: row.batch, crc: row.crc });
  copy.close();
  // Reopened, it resumes from its position: the rows published since are applied once.
  for (let i = 0; i < 5; i += 1) source.store.appendBatch([{ partition: 3, body: JSON.stringify([{ t: 'more', i }]) }]);
  const more = await publish(shard, source.rows.slice(30));
  follower = new ShardFollower(shard, dir, jetstream(nc));
  assert.equal(follower.position, last);
  await follower.catchUp(more);
  follower.close();
  const again = new ShardStore(path.join(dir, shardFile(shard)));
  assert.deepEqual(logOf(again), logOf(source.store));
  again.close();
  source.store.close();
});

test('ShardFollower: a former owner\'s copy with rows the stream never got → catching up cuts them (and an image taken after them) and applies the stream\'s rows in their place', { skip, timeout: 60_000 }, async () => {
  shard += 1;
  await jsm.streams.add({ name: streamOf(shard), subjects: [subjectOf(shard)], num_replicas: 3, storage: StorageType.File });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kobo-former-'));
  // The former owner: 10 rows replicated, then 3 that never reached the stream, and an image at LSN 12.
  const former = owner(dir, shard);
  for (let i = 0; i < 13; i += 1) former.store.appendBatch([{ partition: 0, body: JSON.stringify([{ t: 'old', i }]) }]);
  await publish(shard, former.rows.slice(0, 10));
  former.store.writeSnapshot(snapshotRow({ partition: 0, lsn: 12, takenAtMs: Date.now(), body: Buffer.from('image') }));
  former.store.close();
  // The new owner continues the stream from LSN 11 with rows of its own.
  const next = owner(fs.mkdtempSync(path.join(os.tmpdir(), 'kobo-next-')), shard);
  next.store.appendShipped(former.rows.slice(0, 10));
  for (let i = 0; i < 4; i += 1) next.store.appendBatch([{ partition: 0, body: JSON.stringify([{ t: 'new', i }]) }]);
  const marker = msgIdOf(shard, 2, 0);
  await jetstream(nc).publish(subjectOf(shard), new Uint8Array(0), { msgID: marker, headers: epochHeaders(2, marker) });
  const last = await publish(shard, next.rows, 2);
  const follower = new ShardFollower(shard, dir, jetstream(nc));
  await follower.catchUp(last);
  follower.close();
  const copy = new ShardStore(path.join(dir, shardFile(shard)));
  assert.deepEqual(logOf(copy), logOf(next.store));
  assert.equal(logOf(copy).filter((line) => line.includes('"t":"old"')).length, 10);
  assert.deepEqual(copy.snapshotsOf(0), [], 'the image taken after the cut tail is gone');
  assert.equal(copy.lsnNext, 15);
  copy.close();
  next.store.close();
});

test('ShardFollower: paused while another process truncates its file (as kobo cluster image-copy does) → its next use reopens the file: rows the stream delivers again, archived or live, are kept, nothing is cut', { skip, timeout: 60_000 }, async () => {
  shard += 1;
  await jsm.streams.add({ name: streamOf(shard), subjects: [subjectOf(shard)], num_replicas: 3, storage: StorageType.File });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kobo-paused-'));
  // A former owner's copy: 30 rows in segments of 5, all of them in the stream, no stream position yet.
  const former = new ShardStore(path.join(dir, shardFile(shard)), { walSegmentRecords: 5 });
  const rows: EncodedRow[] = [];
  former.onRow = (row) => rows.push(row);
  for (let i = 0; i < 30; i += 1) former.appendBatch([{ partition: 0, body: JSON.stringify([{ t: 'r', i }]) }]);
  former.close();
  const last = await publish(shard, rows);
  const follower = new ShardFollower(shard, dir, jetstream(nc), { walSegmentRecords: 5 });
  assert.equal(follower.nextLsn, 31, 'the follower has its file open');
  await follower.pause();
  // Meanwhile another process images partition 0 twice and truncates: LSNs 1..25 leave the live log.
  const other = new ShardStore(path.join(dir, shardFile(shard)));
  other.writeSnapshot(snapshotRow({ partition: 0, lsn: 25, takenAtMs: Date.now(), body: Buffer.from('image') }));
  other.writeSnapshot(snapshotRow({ partition: 0, lsn: 30, takenAtMs: Date.now(), body: Buffer.from('image') }));
  const truncated = await truncateCovered(other, 5);
  assert.equal(truncated.records, 25);
  other.close();
  // The stream delivers every row again (the copy's position is 0): none is cut, the position moves on.
  await follower.catchUp(last);
  assert.equal(follower.position, last);
  follower.close();
  const copy = new ShardStore(path.join(dir, shardFile(shard)), { readonly: true });
  assert.equal(copy.archivedRecords(), 25);
  assert.equal(copy.walFirstLsn(), 26);
  assert.equal(copy.lsnNext, 31);
  assert.deepEqual(logOf(copy), rows.slice(25).map((r, i) => `${r.lsnFirst}:0:${r.batch}:${JSON.stringify([{ t: 'r', i: 25 + i }])}:true`));
  assert.equal(copy.snapshotsOf(0).length, 2, 'no image was cut');
  copy.close();
});
