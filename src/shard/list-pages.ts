// A shard's part of a list: the ids an index page names, each shown as its GET by id would show it
// (the same read command, so the same view and the same access checks), a wallet's ledger entries, or
// one event. Runs in the shard worker, between group commits; the runtime sends the answer once every
// commit it could reflect is durable. Invariant: at most `rows` rows, of the asking owner only.
import { reject, statusOf, type Rejection } from '../errors.ts';
import { partitionOfId } from '../ids.ts';
import { DamagedRowError, DATA_DAMAGED_MESSAGE, reportDamage } from '../store/row-checks.ts';
import type { EntryChange, ListKind } from '../store/list-index.ts';
import type { ShardStore } from '../store/shard-store.ts';
import { accessRejection } from './lifecycle/context.ts';
import type { Command, CommandBody, ListAnswer, ShardListQuery } from './protocol.ts';
import { walletOf, type PartitionState, type StoredReply } from './state.ts';
import { iso } from './views.ts';

/** The read command that shows one row of a kind (events carry their payload in the index). */
const READ_OF: Record<Exclude<ListKind, 'event'>, (id: string) => CommandBody> = {
  customer: (id) => ({ k: 'customer.get', id }),
  transaction: (id) => ({ k: 'txn.get', id }),
  payment: (id) => ({ k: 'payment.get', id }),
  transfer: (id) => ({ k: 'transfer.get', id }),
  order: (id) => ({ k: 'order.get', id, projection: 'full' }),
  beneficiary: (id) => ({ k: 'beneficiary.get', id }),
};

const DATA_PREFIX = '{"data":';

/** A ledger entry's id: `le_` and its seq, zero-padded so ids sort as entries do. */
export function entryId(seq: number): string {
  return `le_${String(seq).padStart(16, '0')}`;
}

/** The seq an entry id names, or null when it names none. */
export function seqOfEntryId(id: string): number | null {
  const match = /^le_(\d{16})$/.exec(id);
  return match === null ? null : Number(match[1]);
}

export interface ListSources {
  store: ShardStore;
  states: ReadonlyMap<number, PartitionState>;
  /** Runs a read command against its partition (the runtime's execute, outside any batch). */
  read: (cmd: Command) => StoredReply;
}

function refused(rejection: Rejection): ListAnswer {
  return { rows: [], error: { status: statusOf(rejection), code: rejection.code, message: rejection.message } };
}

export function answerList(query: ShardListQuery, sources: ListSources): ListAnswer {
  try {
    if (query.what === 'event') return oneEvent(query, sources);
    if (query.what === 'entries') return entries(query, sources);
    return rows(query, sources);
  } catch (error) {
    if (!(error instanceof DamagedRowError)) throw error;
    reportDamage(error, { command: `list.${query.what}` });
    return { rows: [], error: { status: 500, code: 'DATA_DAMAGED', message: DATA_DAMAGED_MESSAGE } };
  }
}

function rows(query: ShardListQuery & { what: 'rows' }, sources: ListSources): ListAnswer {
  const q = query.q;
  const out: ListAnswer['rows'] = [];
  for (const row of sources.store.listPage(q)) {
    if (q.kind === 'event') {
      if (row.body !== null) out.push({ key: row.id, json: row.body });
      continue;
    }
    const partition = partitionOfId(row.id);
    if (!sources.states.has(partition)) continue;
    const reply = sources.read({ owner: q.owner, nowMs: query.nowMs, partition, customerScope: query.customerScope, ...READ_OF[q.kind](row.id) } as Command);
    // A row the read refuses (it cannot happen for the owner's own rows) is left out, never shown.
    if (reply.status !== 200 || reply.json === undefined || !reply.json.startsWith(DATA_PREFIX)) continue;
    out.push({ key: row.id, json: reply.json.slice(DATA_PREFIX.length, -1) });
  }
  return { rows: out };
}

function entries(query: ShardListQuery & { what: 'entries' }, sources: ListSources): ListAnswer {
  const state = sources.states.get(partitionOfId(query.q.walletId));
  const wallet = state === undefined ? undefined : walletOf(state, query.q.walletId);
  const denied = accessRejection({ owner: query.owner, customerScope: query.customerScope }, wallet, 'wallet');
  if (denied !== null || wallet === undefined) return refused(denied ?? reject('NOT_FOUND', 'No such wallet.'));
  const view = (e: EntryChange): string =>
    JSON.stringify({ id: entryId(e.seq), object: 'ledger_entry', wallet_id: e.walletId, transaction_id: e.txnId, amount_minor: e.amountMinor, balance_after_minor: e.balanceAfterMinor, currency: wallet.currency, created_at: iso(e.atMs) });
  return { rows: sources.store.entriesPage(query.q).map((e) => ({ key: entryId(e.seq), json: view(e) })) };
}

function oneEvent(query: ShardListQuery & { what: 'event' }, sources: ListSources): ListAnswer {
  const row = sources.store.listRow(query.owner, 'event', query.id);
  // Another account's event, or one about another customer, is not found (its existence is not told).
  if (row === undefined || row.body === null || (query.customerScope !== null && row.customerId !== query.customerScope)) {
    return refused(reject('NOT_FOUND', 'No such event.'));
  }
  return { rows: [{ key: row.id, json: row.body }] };
}
