// Derived rows that point into the log (log v2): a cold row holding exactly the entity its record
// created, or an idempotency row holding the reply its record stored, is written empty and read from
// that record, which stays readable when truncation archives its segment. Store layer: runs in
// the shard (or CLI) that owns the file. Invariant: a pointer is written only when the record holds the
// very bytes the row would, and a pointer that finds nothing is a damaged row, never a guess.
import assert from 'node:assert/strict';
import type { LogSegments } from '../journal/log-segments.ts';
import { IN_LOG_BODY } from './cold-table.ts';
import type { DerivedBatch } from './derived-rows.ts';
import { DamagedRowError } from './row-checks.ts';
import type { EntityKind, IdempotencyRecord } from './tiers.ts';

/**
 * The entity kinds a log record creates whole, and the property of the creation event that holds the
 * entity: a cold row of these kinds may point into the record instead of holding a second copy.
 */
const CREATED_PROPERTY: Partial<Record<EntityKind, string>> = { txn: 'txn', payment: 'payment', exchange: 'exchange' };

/** True for the kinds a record creates whole (their cold rows may point into it). */
export function hasCreationEvent(kind: EntityKind): boolean {
  return CREATED_PROPERTY[kind] !== undefined;
}

/** Rebuilds a reply that a record names by view (shard/reply-views.ts registers it when loaded). */
type ReplyRebuilder = (events: readonly unknown[], record: IdempotencyRecord) => string;
let rebuildReply: ReplyRebuilder | null = null;

/**
 * The store reads records but cannot build views (that is the shard's layer): the shard's module
 * registers its rebuilder when loaded, as every entry point that reads a shard file loads it.
 */
export function registerReplyRebuilder(rebuilder: ReplyRebuilder): void {
  rebuildReply = rebuilder;
}

/** A stored record as the client saw it: a reply the record names by view is rebuilt from the record. */
export function withReply(events: readonly unknown[], record: IdempotencyRecord): IdempotencyRecord {
  if (record.json !== undefined || record.view === undefined) return record;
  assert(rebuildReply !== null, 'log pointers: a record names its reply by view, and no rebuilder is registered');
  const { view: _view, ...rest } = record;
  return Object.assign({}, rest, { json: rebuildReply(events, record) });
}

/** Builds an event row's body from the `outbox.added` event of a record (shard/list-notes.ts registers it). */
type EventBodyRebuilder = (events: readonly unknown[], id: string) => string | undefined;
let rebuildEventBody: EventBodyRebuilder | null = null;

export function registerEventBodyRebuilder(rebuilder: EventBodyRebuilder): void {
  rebuildEventBody = rebuilder;
}

/** The body of event `id` as the `outbox.added` of the log record at `lsn` holds it. */
export function eventInLog(wal: LogSegments, id: string, lsn: number): string {
  assert(rebuildEventBody !== null, 'log pointers: an event row points into the log, and no rebuilder is registered');
  const record = wal.recordAt(lsn);
  const body = record === undefined ? undefined : rebuildEventBody(JSON.parse(record) as unknown[], id);
  if (body === undefined) throw new DamagedRowError('lists', `event ${id} (LSN ${lsn}): its body should be in that log record and is not`);
  return body;
}

/**
 * Builds an entity a record's event derives instead of carrying (a payment's transaction from
 * `payment.opened`): the shard's rule, registered when its module loads (shard/payment-opened.ts), since
 * the store cannot apply events. Undefined when the event derives no such entity.
 */
type DerivedEntity = (event: Record<string, unknown>, kind: EntityKind, id: string) => string | undefined;
let derivedEntity: { eventType: string; derive: DerivedEntity } | null = null;

/** `eventType`: the events the rule derives from (the only ones it is asked about). */
export function registerDerivedEntity(eventType: string, derive: DerivedEntity): void {
  derivedEntity = { eventType, derive };
}

/** The entity (as JSON) the record's events create whole or derive, or undefined. */
function createdInRecord(record: string, kind: EntityKind, id: string): string | undefined {
  const property = CREATED_PROPERTY[kind];
  if (property === undefined) return undefined;
  for (const event of JSON.parse(record) as Array<Record<string, { id?: string } | string>>) {
    const entity = event[property];
    if (typeof entity === 'object' && entity.id === id) return JSON.stringify(entity);
    const derived = derivedEntity !== null && event.t === derivedEntity.eventType ? derivedEntity.derive(event, kind, id) : undefined;
    if (derived !== undefined) return derived;
  }
  return undefined;
}

/** The entity as the log record at `lsn` created it. */
export function createdInLog(wal: LogSegments, kind: EntityKind, id: string, lsn: number): string {
  const record = wal.recordAt(lsn);
  const body = record === undefined ? undefined : createdInRecord(record, kind, id);
  if (body !== undefined) return body;
  throw new DamagedRowError('cold', `${kind} ${id} (LSN ${lsn}): its body should be in that log record and is not`);
}

/** The stored reply of `scope` in the log record at `lsn`. */
export function storedInLog(wal: LogSegments, scope: string, lsn: number): { json?: string; error?: { code: string; message: string } } {
  const record = wal.recordAt(lsn);
  if (record !== undefined) {
    const events = JSON.parse(record) as Array<{ t: string; record?: IdempotencyRecord }>;
    for (const event of events) {
      if (event.t === 'idem.stored' && event.record?.scope === scope) return withReply(events, event.record);
    }
  }
  throw new DamagedRowError('idem_log', `${scope} (LSN ${lsn}): its reply should be in that log record and is not`);
}

/** Marks the rows whose bodies the log records at their LSNs hold whole: they are written empty. */
export function pointIntoLog(wal: LogSegments, derived: DerivedBatch): DerivedBatch {
  const cold = derived.cold.map((row) => {
    const property = CREATED_PROPERTY[row.kind];
    if (property === undefined || row.inLog === true) return row;
    const record = wal.recordAt(row.lsn);
    if (record === undefined) return row;
    // Carried whole (the body's very bytes are in the record), or derived from it by the same rule: the
    // record is parsed only when it names the entity in an event that derives one (rows of entities that
    // changed after their creation record are common, and a substring search costs far less).
    const inRecord = record.includes(`"${property}":${row.body}`) ||
      (derivedEntity !== null && record.includes(`"t":"${derivedEntity.eventType}"`) && record.includes(`"${row.id}"`) && createdInRecord(record, row.kind, row.id) === row.body);
    return inRecord ? Object.assign({}, row, { inLog: true as const }) : row;
  });
  const idem = derived.idem.map((change) => {
    if (change.inLog === true || change.op.op !== 'put' || change.op.record.json === undefined) return change;
    const record = wal.recordAt(change.lsn);
    // The record's idem.stored event carries this scope and this very reply (execute writes both from one value).
    const { scope, fingerprint, atMs, json } = change.op.record;
    // Or names it by view: the rebuilt reply is what replay put in memory (shard/reply-views.ts).
    const inLog = record !== undefined && record.includes('"t":"idem.stored"') && record.includes(`"scope":${JSON.stringify(scope)}`) &&
      (record.includes(`"json":${JSON.stringify(json)}`) || record.includes(`"scope":${JSON.stringify(scope)},"fingerprint":${JSON.stringify(fingerprint)},"atMs":${atMs},"view":`));
    return inLog ? Object.assign({}, change, { inLog: true as const }) : change;
  });
  // An event row's body is built from the record's `outbox.added` of that id (events.ts applies it), so a
  // row whose record holds it is stored empty: most of the list index's bytes were event bodies.
  const list = derived.list?.map((row) => {
    if (row.kind !== 'event' || row.body === null || row.inLog === true) return row;
    const record = wal.recordAt(row.lsn);
    return record !== undefined && record.includes(`{"t":"outbox.added","event":{"id":${JSON.stringify(row.id)},`) ? Object.assign({}, row, { inLog: true as const }) : row;
  });
  return Object.assign({}, derived, { cold, idem }, list === undefined ? {} : { list });
}

/** Rows marked to point into the log, their bodies (and replies) dropped from memory. */
export function withoutBodies(derived: DerivedBatch): DerivedBatch {
  return {
    cold: derived.cold.map((row) => (row.inLog === true && row.body !== IN_LOG_BODY ? Object.assign({}, row, { body: IN_LOG_BODY }) : row)),
    idem: derived.idem.map((change) => {
      if (change.inLog !== true || change.op.op !== 'put') return change;
      const { json: _inLog, ...record } = change.op.record;
      return Object.assign({}, change, { op: { op: 'put' as const, record } });
    }),
    due: derived.due,
    ...(derived.list === undefined ? {} : { list: derived.list }),
    ...(derived.entries === undefined ? {} : { entries: derived.entries }),
  };
}
