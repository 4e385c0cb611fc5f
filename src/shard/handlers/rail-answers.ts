// Applies a live rail's answer (a connector's response to submit/requery, or its signed callback) to
// the entity it names. Runs inside shard workers; the answer arrived as a command after commit.
// Invariant: an answer for another attempt, or for an entity that moved on, changes nothing
// (replayed and duplicated callbacks are harmless); only `live:` entities take connector answers.
import { reject } from '../../errors.ts';
import type { Command } from '../protocol.ts';
import { rejected, type HandlerContext, type Outcome } from './common.ts';
import { payoutAnswer } from './transfers.ts';
import { collectionAnswer } from './payments.ts';
import { fulfilmentAnswer } from './fulfilment.ts';

export function railAnswered(ctx: HandlerContext, cmd: Command & { k: 'rail.answer' }): Outcome {
  if (cmd.answer === null) return rejected(reject('VALIDATION', 'rail.answer carries no answer.'));
  switch (cmd.kind) {
    case 'payout':
      return payoutAnswer(ctx, cmd);
    case 'collection':
      return collectionAnswer(ctx, cmd);
    case 'fulfilment':
      return fulfilmentAnswer(ctx, cmd);
    default:
      return rejected(reject('CONFLICT', `No live ${cmd.kind} rail answers are handled for this entity.`));
  }
}
