// The list index rebuilt once from a shard file that has none (a cluster follower's copy, a restored
// backup): with more cold entities than one write batch, on a real shard file.
import { it } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { ShardStore } from '../../src/store/shard-store.ts';
import { LIST_INDEX_META, rebuildListIndex } from '../../src/shard/list-rebuild.ts';
import { tempDataDir } from '../helpers/server.ts';

it('rebuildListIndex: 12,000 cold payments and no index yet → every one indexed (batches written while the cold ids are read), meta set, a second call writes nothing', () => {
  const store = new ShardStore(path.join(tempDataDir('list-rebuild'), 'shard-0.db'));
  const rows = Array.from({ length: 12_000 }, (_, i) => {
    const id = `P${String(i).padStart(6, '0')}`;
    return { kind: 'payment' as const, id, lsn: 1, partition: 0, body: JSON.stringify({ id, owner: 'test:acct', customerId: 'C1', status: 'completed' }) };
  });
  store.cold.write(rows);
  assert.equal(store.getMeta(LIST_INDEX_META), undefined);
  assert.equal(rebuildListIndex(store, new Map()), 12_000);
  assert.match(store.getMeta(LIST_INDEX_META) ?? '', /^rebuilt at LSN/);
  assert.equal((store.listsDb!.prepare('SELECT count(*) AS n FROM lists').get() as { n: number }).n, 12_000);
  assert.equal(rebuildListIndex(store, new Map()), 0);
  store.close();
});

it('rebuildListIndex: a restored file holding events and ledger entries (whole bodies, no log) → they are kept as they were, the resources indexed beside them', () => {
  const store = new ShardStore(path.join(tempDataDir('list-rebuild-kept'), 'shard-0.db'));
  const event = { kind: 'event' as const, id: 'E000001', owner: 'test:acct', customerId: 'C1', status: 'payment.completed', body: '{"id":"E000001","event_type":"payment.completed"}', lsn: 7 };
  const entry = { walletId: 'W1', seq: 7 * 4096, txnId: 'T1', amountMinor: 4_950, balanceAfterMinor: 4_950, atMs: 1_700_000_000_000, lsn: 7 };
  store.writeListsNow([event], [entry]);
  store.cold.write([{ kind: 'payment', id: 'P000001', lsn: 7, partition: 0, body: JSON.stringify({ id: 'P000001', owner: 'test:acct', customerId: 'C1', status: 'completed' }) }]);
  assert.equal(rebuildListIndex(store, new Map()), 1);
  const page = { owner: 'test:acct', customerId: null, status: null, idAbove: '', idBelow: '~', order: 'desc' as const, rows: 10 };
  assert.deepEqual(store.listPage({ ...page, kind: 'event' }), [{ kind: 'event', id: event.id, owner: event.owner, customerId: 'C1', status: 'payment.completed', body: event.body }]);
  assert.deepEqual(store.listPage({ ...page, kind: 'payment' }).map((r) => r.id), ['P000001']);
  assert.deepEqual(store.entriesPage({ walletId: 'W1', seqAbove: 0, seqBelow: Number.MAX_SAFE_INTEGER, order: 'desc', rows: 10 }), [{ ...entry }]);
  store.close();
});
