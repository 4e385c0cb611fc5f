// Replies a log record names instead of carrying: a stored reply that is exactly one entity's view is
// kept in the record as `{view: {kind, id}}` and rebuilt from the state the record leaves, live (replay)
// or from the record alone (a pointing idempotency row, a backup, truncation). Runs in the shard worker
// and in the CLI (verify, backup). Invariant: a rebuilt reply has the very bytes the client was sent.
import { partitionOfId } from '../ids.ts';
import { registerReplyRebuilder } from '../store/log-pointers.ts';
import type { IdempotencyRecord, ReplyView } from '../store/tiers.ts';
import { applyEvent, type WalEvent } from './events.ts';
import { emptyPartition } from './state.ts';
import { viewReplyJson } from './views.ts';

/** The events of a record that shape the viewed entity (what the scratch replay below applies). */
const SHAPES: Record<ReplyView['kind'], ReadonlySet<string>> = {
  payment: new Set(['payment.opened', 'payment.created', 'payment.moved', 'payment.rail']),
};

/**
 * Rebuilds a stored reply from its record alone: the viewed entity's own events are applied to an
 * empty partition, through the same applyEvent replay uses (they touch no other entity), and viewed.
 */
export function replyFromRecord(events: readonly unknown[], record: IdempotencyRecord): string {
  const view = record.view!;
  const scratch = emptyPartition(partitionOfId(view.id));
  const shapes = SHAPES[view.kind];
  for (const event of events as WalEvent[]) {
    if (!shapes.has(event.t)) continue;
    const id = 'id' in event ? event.id : event.t === 'payment.created' || event.t === 'payment.opened' ? event.payment.id : undefined;
    if (id === view.id) applyEvent(scratch, event);
  }
  return viewReplyJson(scratch, view);
}

registerReplyRebuilder(replyFromRecord);
