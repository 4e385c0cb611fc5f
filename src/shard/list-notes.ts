// What a partition's applied events mean for the list index: the rows of resources created or moved,
// the events, and the ledger entries that moved a wallet's balance (with the balance each left). Runs in
// the shard worker that owns the partition, live and on replay alike (applyEvent calls these).
// Invariant: notes are drained by the group commit with the LSN of the record that made them, so the
// same records always give the same rows (an entry's seq is its LSN and its rank in the record).
import type { Hold, LedgerOp } from '../ledger/ledger.ts';
import type { ListRow } from '../store/list-index.ts';
import { registerEventBodyRebuilder } from '../store/log-pointers.ts';
import type { OutboxEvent, PartitionState, Wallet } from './state.ts';
import { isoTime } from '../iso-time.ts';

/** The payload a webhook delivers for this event: what GET /v1/events shows, byte for byte. */
export function eventBody(event: OutboxEvent): string {
  return JSON.stringify({ id: event.id, event_type: event.type, event_key: event.key, occurred_at: isoTime(event.occurredAtMs), data: event.data });
}

/** An event row stored empty reads its body from the record that added it (store/log-pointers.ts). */
registerEventBodyRebuilder((events, id) => {
  for (const event of events as Array<{ t?: string; event?: OutboxEvent }>) {
    if (event.t === 'outbox.added' && event.event?.id === id) return eventBody(event.event);
  }
  return undefined;
});

export type Listed = { id: string; owner: string; customerId: string; status?: string };

export function noteResource(state: PartitionState, kind: ListRow['kind'], entity: Listed | undefined): void {
  if (entity === undefined) return;
  state.listed.row({ kind, id: entity.id, owner: entity.owner, customerId: entity.customerId, status: entity.status ?? null, body: null });
}

/**
 * The wallet side of each posting (a post, or a hold's commit) with the balance it left: the event's
 * ops are applied already, so balances are walked back from the wallets' balances now.
 */
export function noteEntries(state: PartitionState, ops: readonly LedgerOp[], atMs: number, holds: ReadonlyArray<Hold | undefined>): void {
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
  moves.forEach((move, i) => state.listed.entry(Object.assign({}, move, { balanceAfterMinor: balances[i]!, atMs })));
}

function isWallet(state: PartitionState, id: string): boolean {
  return state.ledger.accounts.get(id)?.kind === 'wallet';
}
