// Passivation: after a group commit's commands are applied, every entity they left finished is written
// to the cold table (in the same sqlite transaction as their WAL records) and leaves the heap. Runs in
// shard workers and in recovery. Each row carries the LSN of the last record that touched the entity,
// so replay from an older snapshot reads the version that record saw (see ShardStore.asOfLsn).
// Invariant: an entity leaves the heap only with a cold row of exactly its final state.
import type { ColdRow, IdemChange } from '../store/shard-store.ts';
import type { DueChange } from '../store/due-log.ts';
import { ENTRIES_PER_RECORD_MAX, type EntryChange, type ListChange } from '../store/list-index.ts';
import assert from 'node:assert/strict';
import type { EntityTable } from './entity-table.ts';
import { entityTables, type PartitionState } from './state.ts';
import { IN_LOG_BODY } from '../store/cold-table.ts';
import { hasCreationEvent } from '../store/log-pointers.ts';

interface Noted {
  partition: number;
  ids: Map<string, number>;
  /** Ids whose entity, as noted last, is the one the creation event of its record carries. */
  inRecord: Set<string>;
}

export class Passivation {
  // Replaced, not cleared, once taken (see EntityTable.forgetTouched).
  private noted = new Map<EntityTable<unknown>, Noted>();
  private readonly idem: IdemChange[] = [];
  private readonly due: DueChange[] = [];
  private readonly list: ListChange[] = [];
  private readonly entries: EntryChange[] = [];
  /** The LSN of the last entries taken and how many it gave (one record can be noted in several calls). */
  private entryLsn = -1;
  private entryRank = 0;
  private states = new Set<PartitionState>();

  /**
   * Records what the command whose WAL record gets `lsn` touched. Call once per command with events.
   * `record.replies`: the command stored its reply in an `idem.stored` event of that very record
   * (dispatch writes both from one value), so its idempotency row can point into the log without the
   * store searching the record for the reply's bytes. `record.entities`: the record is this command's
   * events as executed (live, never a version-1 record read back), so an entity its creation event put in
   * the table and nothing changed since is in that record byte for byte: its cold row points there
   * without the store serialising the entity to search the record for it.
   */
  note(state: PartitionState, lsn: number, record: { replies?: boolean; entities?: boolean } = {}): void {
    const repliesInRecord = record.replies === true;
    const entitiesInRecord = record.entities === true;
    for (const table of entityTables(state)) {
      if (table.touched.size === 0) continue;
      if (table.passivates) {
        let noted = this.noted.get(table);
        if (noted === undefined) {
          noted = { partition: state.partition, ids: new Map(), inRecord: new Set() };
          this.noted.set(table, noted);
        }
        for (const id of table.touched) {
          noted.ids.set(id, lsn);
          if (entitiesInRecord && table.created.has(id) && hasCreationEvent(table.kind)) noted.inRecord.add(id);
          else noted.inRecord.delete(id);
        }
      }
      table.forgetTouched();
    }
    for (const op of state.idempotency.drain()) {
      const inLog = repliesInRecord && op.op === 'put' && op.record.json !== undefined;
      this.idem.push(inLog ? { lsn, partition: state.partition, op, inLog } : { lsn, partition: state.partition, op });
    }
    for (const op of state.due.drain()) this.due.push({ lsn, partition: state.partition, op: op.op, entry: op.entry });
    const listed = state.listed.drain();
    // Object.assign, not `{ ...row, lsn }` (a spread followed by a field is a slow path in this V8).
    for (const row of listed.rows) this.list.push(Object.assign({}, row, { lsn }));
    if (listed.entries.length > 0 && this.entryLsn !== lsn) {
      this.entryLsn = lsn;
      this.entryRank = 0;
    }
    for (const entry of listed.entries) {
      assert(this.entryRank < ENTRIES_PER_RECORD_MAX, 'passivate: too many ledger entries in one record');
      this.entries.push(Object.assign({}, entry, { lsn, seq: lsn * ENTRIES_PER_RECORD_MAX + this.entryRank++ }));
    }
    this.states.add(state);
  }

  /** Marks every hot finished entity of a freshly loaded image for passivation at the image's LSN. */
  noteAllHot(state: PartitionState, lsn: number): void {
    for (const table of entityTables(state)) for (const id of table.keys()) table.touched.add(id);
    this.note(state, lsn);
  }

  get empty(): boolean {
    return this.noted.size === 0 && this.idem.length === 0 && this.due.length === 0 && this.list.length === 0 && this.entries.length === 0;
  }

  /**
   * The cold rows and idempotency changes to write with the batch. Finished entities leave the heap
   * now (the write follows at once; if it fails the shard stops and recovery rebuilds the heap).
   */
  take(): { cold: ColdRow[]; idem: IdemChange[]; due: DueChange[]; list: ListChange[]; entries: EntryChange[] } {
    const cold: ColdRow[] = [];
    for (const [table, noted] of this.noted) {
      for (const [id, lsn] of noted.ids) {
        const entity = table.finishedHot(id);
        if (entity === undefined) continue;
        if (noted.inRecord.has(id)) cold.push({ kind: table.kind, id, lsn, partition: noted.partition, body: IN_LOG_BODY, inLog: true });
        else cold.push({ kind: table.kind, id, lsn, partition: noted.partition, body: JSON.stringify(entity) });
        table.evict(id);
      }
    }
    if (this.noted.size > 0) this.noted = new Map();
    return { cold, idem: this.idem.splice(0), due: this.due.splice(0), list: this.list.splice(0), entries: this.entries.splice(0) };
  }

  /** After the commit: the idempotency records are in the shard file; the heap lets them go. */
  settle(): void {
    for (const state of this.states) state.idempotency.settle();
    if (this.states.size > 0) this.states = new Set();
  }
}
