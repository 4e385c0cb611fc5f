// Entities born finished (a sandbox collection waiting for its payer and its transaction, an exchange)
// go straight to the cold table, and the WAL record that created them names them by id instead of
// carrying a second copy of their body. Runs in shard workers (when writing) and recovery (when reading).
// Invariant: a record's `{ t, cold: id }` event has a cold row (kind, id, the record's own LSN) holding
// exactly the entity the event created, written in the same sqlite transaction as the record.
import type { WalEvent } from './events.ts';
import type { EntityKind } from './entity-table.ts';
import type { Passivation } from './passivate.ts';
import type { Exchange, PartitionState, Payment, Transaction } from './state.ts';

type CreatedType = 'txn.created' | 'payment.created' | 'exchange.created';

/** A creation event as a WAL record stores it when the body is in the cold table. */
export interface ColdCreated {
  t: CreatedType;
  cold: string;
}

/** What a WAL record holds: events, some creations named by id. */
export type RecordEvent = WalEvent | ColdCreated;

type Creation = Extract<WalEvent, { t: CreatedType }>;

/** The entity the event creates, if it is born finished in a table that has a cold store. */
function bornFinished(state: PartitionState, event: Creation): { kind: EntityKind; entity: Transaction | Payment | Exchange } | null {
  switch (event.t) {
    case 'txn.created':
      return state.transactions.passivates && state.transactions.isFinished(event.txn) ? { kind: 'txn', entity: event.txn } : null;
    case 'payment.created':
      return state.payments.passivates && state.payments.isFinished(event.payment) ? { kind: 'payment', entity: event.payment } : null;
    case 'exchange.created':
      return state.exchanges.passivates && state.exchanges.isFinished(event.exchange) ? { kind: 'exchange', entity: event.exchange } : null;
  }
}

function isCreation(event: WalEvent): event is Creation {
  return event.t === 'txn.created' || event.t === 'payment.created' || event.t === 'exchange.created';
}

/** True if an event after `index` changes the entity `id` (every change of these kinds names it by `id`). */
function changedLater(events: readonly WalEvent[], index: number, id: string): boolean {
  for (let i = index + 1; i < events.length; i += 1) {
    const event = events[i]!;
    if ('id' in event && event.id === id) return true;
  }
  return false;
}

/**
 * The events as the WAL record at `lsn` stores them: each entity created finished (and not changed
 * again by the same command) becomes a cold row handed to `passivation`, and its event names it by id.
 * Returns `events` itself when nothing was born finished.
 */
export function recordEvents(state: PartitionState, events: readonly WalEvent[], lsn: number, passivation: Passivation): readonly RecordEvent[] {
  let out: RecordEvent[] | null = null;
  for (let i = 0; i < events.length; i += 1) {
    const event = events[i]!;
    if (!isCreation(event)) {
      out?.push(event);
      continue;
    }
    const born = bornFinished(state, event);
    if (born === null || changedLater(events, i, born.entity.id)) {
      out?.push(event);
      continue;
    }
    const { kind, entity } = born;
    passivation.prewrite({ kind, id: entity.id, lsn, partition: state.partition, body: JSON.stringify(entity) });
    out ??= events.slice(0, i);
    out.push({ t: event.t, cold: entity.id });
  }
  return out ?? events;
}

/**
 * Recovery: the record's events with each creation named by id read back from its cold row; `corrupt`
 * throws the caller's error when the row is missing (the shard file is damaged).
 */
export function resolveRecord(state: PartitionState, events: readonly RecordEvent[], lsn: number, corrupt: (message: string) => never): WalEvent[] {
  return events.map((event) => {
    if (!('cold' in event)) return event;
    const missing = (): never => corrupt(`recovery: WAL record ${lsn} names ${event.t} ${event.cold}, which has no cold row at that LSN`);
    switch (event.t) {
      case 'txn.created':
        return { t: event.t, txn: state.transactions.coldVersion(event.cold, lsn) ?? missing() };
      case 'payment.created':
        return { t: event.t, payment: state.payments.coldVersion(event.cold, lsn) ?? missing() };
      case 'exchange.created':
        return { t: event.t, exchange: state.exchanges.coldVersion(event.cold, lsn) ?? missing() };
    }
  });
}
