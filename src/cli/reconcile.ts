// `kobo reconcile list`: the transactions a rail contradicted (it reported settled after kobo recorded
// failed, or failed after completed), which refuse retry until an operator resolves them with
// `kobo reconcile resolve`. Runs in the CLI; reads the shard files read-only (a server may be running),
// as verify does. Invariant: every open one is listed: they stay in the heap, hence in every image.
import fs from 'node:fs';
import path from 'node:path';
import { ShardStore } from '../store/shard-store.ts';
import { recoverShard } from '../shard/recovery.ts';
import { partitionsOf, readLayout, shardFile } from '../shard/layout.ts';
import type { Reconciliation, Transaction } from '../shard/state.ts';

export interface OpenReconciliation {
  transactionId: string;
  owner: string;
  customerId: string;
  type: Transaction['type'];
  status: Transaction['status'];
  amountMinor: number;
  currency: string;
  reconciliation: Reconciliation;
}

export function listReconciliations(dataDir: string, progress: (m: string) => void = () => {}): OpenReconciliation[] {
  const layout = readLayout(dataDir);
  const open: OpenReconciliation[] = [];
  for (let shard = 0; shard < layout.shards; shard += 1) {
    const file = path.join(dataDir, shardFile(shard));
    if (!fs.existsSync(file)) continue;
    const store = new ShardStore(file, { readonly: true });
    try {
      const recovered = recoverShard(store, { partitions: partitionsOf(shard, layout.shards), readonly: true });
      for (const state of recovered.states.values()) {
        for (const txn of state.transactions.values()) {
          if (txn.reconciliation?.status !== 'required') continue;
          open.push({ transactionId: txn.id, owner: txn.owner, customerId: txn.customerId, type: txn.type, status: txn.status, amountMinor: txn.amountMinor, currency: txn.currency, reconciliation: txn.reconciliation });
        }
      }
      progress(`shard ${shard}: read at LSN ${recovered.lastLsn}`);
    } finally {
      store.close();
    }
  }
  return open.sort((a, b) => a.reconciliation.reportedAtMs - b.reconciliation.reportedAtMs);
}

/** One line an operator reads: what kobo recorded, what the rail reported, and where to look. */
export function reconciliationLine(r: OpenReconciliation): string {
  const c = r.reconciliation;
  const ref = c.providerReference === null ? '' : ` provider_reference ${c.providerReference}`;
  return `${r.transactionId}  ${r.owner}  ${r.type} ${r.amountMinor} ${r.currency}  recorded ${c.recorded}, ${c.rail} reported ${c.reported} for ${c.kind} ${c.entityId} attempt ${c.attempt}${ref}  since ${new Date(c.reportedAtMs).toISOString()}`;
}
