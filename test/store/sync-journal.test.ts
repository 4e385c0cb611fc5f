// A shard file opened for pipelined commits: sqlite does not fsync at commit (synchronous NORMAL in
// WAL mode, which still syncs around checkpoints); the shard's own journal fsync covers every commit.
import { it } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { pbkdf2 } from 'node:crypto';
import { ShardStore } from '../../src/store/shard-store.ts';
import { tempDataDir } from '../helpers/server.ts';

const SYNCHRONOUS_NORMAL = 1;
const SYNCHRONOUS_FULL = 2;

it('deferredSync: commits wait for syncJournal, which fsyncs the journal and calls back; a plain open stays FULL', async () => {
  const file = path.join(tempDataDir('sync-journal'), 'shard-0.db');
  const store = new ShardStore(file, { deferredSync: true });
  assert.equal(store.db.pragma('synchronous', { simple: true }), SYNCHRONOUS_NORMAL);
  store.appendBatch([{ partition: 1, body: '[]' }, { partition: 1, body: '[]' }]);
  const error = await new Promise<Error | null>((resolve) => store.syncJournal(resolve));
  assert.equal(error, null);
  store.appendBatch([{ partition: 1, body: '[]' }]);
  assert.equal(await new Promise<Error | null>((resolve) => store.syncJournal(resolve)), null, 'the same journal fd serves the next sync');
  store.close();
  const reopened = new ShardStore(file);
  assert.equal(reopened.db.pragma('synchronous', { simple: true }), SYNCHRONOUS_FULL);
  assert.equal(reopened.walCount(), 3);
  reopened.close();
});

it('close while a journal fsync is still running → the fsync completes (no EBADF), then its fd is closed', async () => {
  const store = new ShardStore(path.join(tempDataDir('sync-journal'), 'shard-0.db'), { deferredSync: true });
  store.appendBatch([{ partition: 1, body: '[]' }]);
  // Keep libuv's pool busy (4 threads by default) so the fsync is still queued when close() runs.
  const busy = Array.from({ length: 8 }, () => new Promise((resolve) => pbkdf2('x', 'salt', 300_000, 32, 'sha256', resolve)));
  const synced = new Promise<Error | null>((resolve) => store.syncJournal(resolve));
  store.close();
  assert.equal(await synced, null);
  await Promise.all(busy);
});
