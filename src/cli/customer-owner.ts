// Which account and environment own a customer, read from the data dir by the operator CLI (`keys
// create --customer`). CLI process; opens the customer's shard file read-only, as `kobo verify` does,
// so it is safe while the server runs and sees every customer the server acknowledged.
// Invariant: a customer is looked for only in the partition its id names, where the server routes it.
import fs from 'node:fs';
import path from 'node:path';
import { PARTITIONS } from '../config.ts';
import { partitionOfId } from '../ids.ts';
import { partitionsOf, readLayout, shardFile, shardOf } from '../shard/layout.ts';
import { recoverShard } from '../shard/recovery.ts';
import { ShardStore } from '../store/shard-store.ts';

/** The owner (`test:acme`) of the customer, or null when the data dir holds no such customer. */
export function customerOwner(dataDir: string, customerId: string): string | null {
  const partition = partitionOfId(customerId);
  if (partition < 0 || partition >= PARTITIONS) return null;
  // A data dir the server never started in (`--init` made only control.db) holds no customer yet.
  if (!fs.existsSync(path.join(dataDir, 'layout.json'))) return null;
  const shards = readLayout(dataDir).shards;
  const shard = shardOf(partition, shards);
  const file = path.join(dataDir, shardFile(shard));
  if (!fs.existsSync(file)) return null;
  const store = new ShardStore(file, { readonly: true });
  try {
    // Recovery replays a shard's WAL as a whole (its records interleave partitions).
    const recovered = recoverShard(store, { partitions: partitionsOf(shard, shards), readonly: true });
    return recovered.states.get(partition)?.customers.get(customerId)?.owner ?? null;
  } finally {
    store.close();
  }
}
