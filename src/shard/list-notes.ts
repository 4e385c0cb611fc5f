// What a partition's applied events mean for the list index: the rows of resources created or moved,
// the events, and the ledger entries that moved a wallet's balance (with the balance each left). Runs in
// the shard worker that owns the partition, live and on replay alike (applyEvent calls it).
// Invariant: notes are drained by the group commit with the LSN of the record that made them, so the
// same records always give the same rows (an entry's seq is its LSN and its rank in the record).
import type { Hold, LedgerOp } from '../ledger/ledger.ts';
import type { EntryRow, ListRow } from '../store/list-index.ts';
import type { WalEvent } from './events.ts';
import type { OutboxEvent, PartitionState, Wallet } from './state.ts';

export class ListNotes {
  private rows: ListRow[] = [];
  private entries: EntryRow[] = [];

  /** `fileBacked`: notes go to the shard file's index; without a file (tests, tools) nothing is kept. */
  constructor(readonly on: boolean) {}

  row(row: ListRow): void {
    if (this.on) this.rows.push(row);
  }

  entry(entry: EntryRow): void {
    if (this.on) this.entries.push(entry);
  }

  /** The notes since the last call, for the group commit. */
  drain(): { rows: ListRow[]; entries: EntryRow[] } {
    const drained = { rows: this.rows, entries: this.entries };
    if (this.rows.length > 0) this.rows = [];
    if (this.entries.length > 0) this.entries = [];
    return drained;
  }
}

/** The payload a webhook delivers for this event: what GET /v1/events shows, byte for byte. */
export function eventBody(event: OutboxEvent): string {
  return JSON.stringify({ id: event.id, event_type: event.type, event_key: event.key, occurred_at: new Date(event.occurredAtMs).toISOString(), data: event.data });
}

type Listed = { id: string; owner: string; customerId: string; status?: string };

function resource(state: PartitionState, kind: ListRow['kind'], entity: Listed | undefined): void {
  if (entity === undefined) return;
  state.listed.row({ kind, id: entity.id, owner: entity.owner, customerId: entity.customerId, status: entity.status ?? null, body: null });
}

/** The holds a ledger event's commits settle, read before the event removes them. */
export function holdsSettled(state: PartitionState, event: WalEvent): Array<Hold | undefined> | null {
  if (!state.listed.on || event.t !== 'ledger') return null;
  return event.ops.map((op) => (op.op === 'commit' ? state.ledger.holds.get(op.id) : undefined));
}

/** Notes what an applied event changed for lists (called after the event is applied). */
export function noteListed(state: PartitionState, event: WalEvent, holds: Array<Hold | undefined> | null): void {
  if (!state.listed.on) return;
  switch (event.t) {
    case 'customer.created':
      return resource(state, 'customer', { ...event.customer, customerId: event.customer.id });
    case 'txn.created':
    case 'txn.moved':
      return resource(state, 'transaction', state.transactions.get(event.t === 'txn.created' ? event.txn.id : event.id));
    case 'payment.created':
    case 'payment.moved':
      return resource(state, 'payment', state.payments.get(event.t === 'payment.created' ? event.payment.id : event.id));
    case 'transfer.created':
    case 'transfer.moved':
      return resource(state, 'transfer', state.transfers.get(event.t === 'transfer.created' ? event.transfer.id : event.id));
    case 'order.created':
    case 'order.moved':
      return resource(state, 'order', state.orders.get(event.t === 'order.created' ? event.order.id : event.id));
    case 'beneficiary.created':
      return resource(state, 'beneficiary', event.beneficiary);
    case 'outbox.added': {
      const customerId = event.event.data.customer_id;
      state.listed.row({ kind: 'event', id: event.event.id, owner: event.event.owner, customerId: typeof customerId === 'string' ? customerId : null, status: event.event.type, body: eventBody(event.event) });
      return;
    }
    case 'ledger':
      return noteEntries(state, event.ops, event.atMs, holds ?? []);
    default:
      return;
  }
}

/**
 * The wallet side of each posting (a post, or a hold's commit) with the balance it left: the event's
 * ops are applied already, so balances are walked back from the wallets' balances now.
 */
function noteEntries(state: PartitionState, ops: readonly LedgerOp[], atMs: number, holds: ReadonlyArray<Hold | undefined>): void {
  const moves: Array<{ walletId: string; txnId: string; amountMinor: number }> = [];
  ops.forEach((op, i) => {
    const posting = op.op === 'post' ? op : op.op === 'commit' ? holds[i] : undefined;
    if (posting === undefined) return;
    if (isWallet(state, posting.dr)) moves.push({ walletId: posting.dr, txnId: posting.txn, amountMinor: -posting.amt });
    if (isWallet(state, posting.cr)) moves.push({ walletId: posting.cr, txnId: posting.txn, amountMinor: posting.amt });
  });
  const after = new Map<string, number>();
  const balances = new Array<number>(moves.length);
  for (let i = moves.length - 1; i >= 0; i -= 1) {
    const move = moves[i]!;
    const wallet = state.ledger.accounts.get(move.walletId) as Wallet;
    const balance = after.get(move.walletId) ?? wallet.creditsPosted - wallet.debitsPosted;
    after.set(move.walletId, balance - move.amountMinor);
    balances[i] = balance;
  }
  moves.forEach((move, i) => state.listed.entry({ ...move, balanceAfterMinor: balances[i]!, atMs }));
}

function isWallet(state: PartitionState, id: string): boolean {
  return state.ledger.accounts.get(id)?.kind === 'wallet';
}
