// Recovery of a shard's partitions: newest valid snapshot of each, then replay of the WAL after it.
// Runs in a shard worker at start-up and in the CLI (verify, snapshot). A bad checksum in the final
// batch is a torn tail and is cut; anywhere else it is corruption and recovery stops with a message.
// Invariant: the recovered state equals the state the shard had after its last durable batch.
import { applyEvent } from './events.ts';
import './reply-views.ts'; // registers the rebuilder of replies that log records name by view
import { emptyPartition, type PartitionState, type PartitionTiers } from './state.ts';
import { Passivation } from './passivate.ts';
import { resolveRecord, type RecordEvent } from './born-cold.ts';
import { snapshotChecksum, type ShardStore } from '../store/shard-store.ts';
import { decompressImage } from '../store/snapshot.ts';
import { decodePartition } from './partition-image.ts';

/** Replayed records between two writes of what replay passivated (bounds the heap during recovery). */
const REPLAY_PASSIVATE_EVERY_RECORDS = 5_000;

/** The partition tiers backed by a shard file: cold entities and idempotency records read from it. */
export function tiersOf(store: ShardStore): PartitionTiers {
  return { cold: store, idem: { readAt: (scope, seq) => store.readIdemAt(scope, seq) } };
}

export class CorruptionError extends Error {}

function corrupt(message: string): never {
  throw new CorruptionError(message);
}

export interface Recovered {
  states: Map<number, PartitionState>;
  snapshotLsn: Map<number, number>;
  replayed: number;
  cut: number;
  lastLsn: number;
}

export interface RecoverOptions {
  partitions: readonly number[];
  /** Replay the whole WAL, ignoring snapshots (verify uses it to prove snapshot + tail = full replay). */
  ignoreSnapshots?: boolean;
  /** Start from each partition's OLDEST kept image instead of its newest (verify, after truncation). */
  oldestSnapshots?: boolean;
  /** Do not cut a torn tail (read-only callers). */
  readonly?: boolean;
  onProgress?: (done: number) => void;
}

function loadSnapshot(store: ShardStore, partition: number, tiers: PartitionTiers, oldest: boolean): { state: PartitionState; lsn: number } | undefined {
  const rows = store.snapshotsOf(partition);
  for (const row of oldest ? rows.reverse() : rows) {
    if (snapshotChecksum(row.partition, row.lsn, row.body) !== row.crc) continue; // fall back to an older image
    return { state: decodePartition(decompressImage(row.body), tiers), lsn: row.lsn };
  }
  return undefined;
}

/**
 * Writes what replay finished to the cold table (idempotent: the live shard wrote the same rows) and
 * drops it from the heap. A read-only caller only drops it: the rows are already in the file.
 */
function flushPassivation(store: ShardStore, passivation: Passivation, readonly: boolean): void {
  if (passivation.empty) return;
  const taken = passivation.take();
  // A read-only caller keeps them in memory: a later record may read an entity passivated here.
  if (readonly) store.holdDerived(taken);
  else store.writeDerivedNow(taken);
  passivation.settle();
}

export function recoverShard(store: ShardStore, options: RecoverOptions): Recovered {
  const states = new Map<number, PartitionState>();
  const snapshotLsn = new Map<number, number>();
  const tiers = tiersOf(store);
  const readonly = options.readonly === true;
  const passivation = new Passivation();
  for (const partition of options.partitions) {
    const snap = options.ignoreSnapshots === true ? undefined : loadSnapshot(store, partition, tiers, options.oldestSnapshots === true);
    const state = snap?.state ?? emptyPartition(partition, tiers);
    states.set(partition, state);
    snapshotLsn.set(partition, snap?.lsn ?? 0);
    // Images from before passivation hold finished entities and idempotency records: move them out.
    passivation.noteAllHot(state, snap?.lsn ?? 0);
  }
  flushPassivation(store, passivation, readonly);
  const baseLsn = Number(store.getMeta('base_lsn') ?? '0');
  if (options.ignoreSnapshots === true && baseLsn > 0) {
    throw new CorruptionError('recovery: this shard was restored from a backup; full replay needs its snapshots');
  }
  const fromLsn = Math.min(...[...snapshotLsn.values()], Number.MAX_SAFE_INTEGER);
  const lastBatch = store.lastBatch();
  let replayed = 0;
  let cut = 0;
  let lastLsn = Math.max(fromLsn === Number.MAX_SAFE_INTEGER ? 0 : fromLsn, baseLsn);
  let tornAt: number | null = null;
  for (const row of store.walAfter(fromLsn === Number.MAX_SAFE_INTEGER ? 0 : fromLsn)) {
    if (!row.ok) {
      if (row.batch === lastBatch) {
        tornAt = row.lsn;
        break;
      }
      throw new CorruptionError(
        `recovery: WAL record ${row.lsn} (batch ${row.batch}) fails its checksum ` +
          `and is not in the final batch: the shard file is corrupt. Restore from a backup (kobo restore).`,
      );
    }
    lastLsn = row.lsn;
    const state = states.get(row.partition);
    if (state === undefined) throw new CorruptionError(`recovery: WAL record ${row.lsn} names partition ${row.partition}, not of this shard`);
    if (row.lsn <= (snapshotLsn.get(row.partition) ?? 0)) continue;
    store.asOfLsn = row.lsn;
    const events = resolveRecord(state, JSON.parse(row.body) as RecordEvent[], row.lsn, corrupt);
    for (const event of events) applyEvent(state, event);
    passivation.note(state, row.lsn);
    replayed += 1;
    if (replayed % REPLAY_PASSIVATE_EVERY_RECORDS === 0) flushPassivation(store, passivation, readonly);
    if (options.onProgress !== undefined && replayed % 10_000 === 0) options.onProgress(replayed);
  }
  store.asOfLsn = Number.POSITIVE_INFINITY;
  flushPassivation(store, passivation, readonly);
  // A read-only caller stops at the torn tail; the server cuts it (after the read cursor is closed).
  if (tornAt !== null && options.readonly !== true) cut = store.cutFrom(tornAt);
  lastLsn = Math.max(lastLsn, ...snapshotLsn.values());
  return { states, snapshotLsn, replayed, cut, lastLsn };
}
