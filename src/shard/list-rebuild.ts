// Fills a shard file's list index once from what its partitions hold (customers and beneficiaries in
// the heap, transactions, payments, transfers and orders hot or cold): a data dir written before lists
// existed, or restored from a backup, lists its resources from the first start. Shard worker, at start.
// Invariant: runs once per file (meta `list_index_v2`) and writes only resource rows: events and wallet
// entries (not rebuildable: their records may be gone) stay as a restore wrote them (cli/backup-lists.ts).
import type { ListChange, ListKind } from '../store/list-index.ts';
import type { ShardStore } from '../store/shard-store.ts';
import type { EntityKind } from '../store/tiers.ts';
import type { PartitionState } from './state.ts';

/** Version 2: the compact rows of `lists` (a file that had the first layout's `list_rows` rebuilds once). */
export const LIST_INDEX_META = 'list_index_v2';
/** Rows written per sqlite transaction while rebuilding. */
const REBUILD_BATCH_ROWS = 5_000;

type Listed = { id: string; owner: string; customerId: string; status?: string };

const COLD_KINDS: ReadonlyArray<[EntityKind, ListKind]> = [['txn', 'transaction'], ['payment', 'payment'], ['transfer', 'transfer'], ['order', 'order']];

/** Rebuilds the index unless this file already has one; returns the rows written. */
export function rebuildListIndex(store: ShardStore, states: ReadonlyMap<number, PartitionState>): number {
  const lists = store.lists;
  if (lists === null || store.getMeta(LIST_INDEX_META) !== undefined) return 0;
  const lsn = store.lsnNext - 1;
  let batch: ListChange[] = [];
  let written = 0;
  const flush = (): void => {
    store.writeListsNow(batch, []);
    written += batch.length;
    batch = [];
  };
  const add = (kind: ListKind, entity: Listed): void => {
    batch.push({ kind, id: entity.id, owner: entity.owner, customerId: entity.customerId, status: entity.status ?? null, body: null, lsn });
    if (batch.length >= REBUILD_BATCH_ROWS) flush();
  };
  const seen = new Set<string>();
  for (const state of states.values()) {
    for (const c of state.customers.values()) add('customer', Object.assign({}, c, { customerId: c.id }));
    for (const b of state.beneficiaries.values()) add('beneficiary', b);
    const hot: ReadonlyArray<[ListKind, { keys(): IterableIterator<string>; get(id: string): Listed | undefined }]> = [
      ['transaction', state.transactions], ['payment', state.payments], ['transfer', state.transfers], ['order', state.orders],
    ];
    for (const [kind, table] of hot) {
      for (const id of table.keys()) {
        const entity = table.get(id);
        if (entity === undefined) continue;
        seen.add(id);
        add(kind, entity);
      }
    }
  }
  for (const [coldKind, kind] of COLD_KINDS) {
    // The ids first: writing a batch while the cold table's cursor is open is refused (connection busy).
    for (const id of [...store.coldIds(coldKind)]) {
      if (seen.has(id)) continue;
      const body = store.read(coldKind, id);
      if (body !== undefined) add(kind, JSON.parse(body) as Listed);
    }
  }
  flush();
  store.setMeta(LIST_INDEX_META, `rebuilt at LSN ${lsn}`);
  return written;
}
