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
  assert.equal((store.db.prepare('SELECT count(*) AS n FROM lists').get() as { n: number }).n, 12_000);
  assert.equal(rebuildListIndex(store, new Map()), 0);
  store.close();
});
