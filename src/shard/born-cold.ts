// Version-1 log records named an entity born finished (a sandbox collection waiting for its payer, its
// transaction, an exchange) by id, its body being the cold row written with the record. Version 2
// records carry every entity inline; this module lets recovery replay version-1 records still in a file.
// Invariant: a v1 record's `{ t, cold: id }` event has a cold row (kind, id, the record's own LSN)
// holding exactly the entity the event created.
import type { WalEvent } from './events.ts';
import type { PartitionState } from './state.ts';

type CreatedType = 'txn.created' | 'payment.created' | 'exchange.created';

/** A creation event as a WAL record stores it when the body is in the cold table. */
export interface ColdCreated {
  t: CreatedType;
  cold: string;
}

/** What a WAL record holds: events, some creations named by id. */
export type RecordEvent = WalEvent | ColdCreated;

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
