// Applies a rail's answer (the sandbox rail's, a connector's response to submit/requery, or its signed
// callback) to the entity it names, through that entity's handler: a router beside dispatch.ts, not a
// handler itself. Runs inside shard workers; the answer arrived as a command after commit.
// Invariant: an answer for another attempt, or for an entity that moved on, changes nothing
// (replayed and duplicated callbacks are harmless); a connector answers only for entities it serves.
import { reject } from '../errors.ts';
import { answerAtOnce } from '../rails/rails.ts';
import type { RailCall } from '../rails/rail.ts';
import type { Command } from './protocol.ts';
import { rejected, type HandlerContext, type Outcome } from './lifecycle/context.ts';
import { collectionCall, fulfilmentCall, payoutCall } from './lifecycle/rail-requests.ts';
import { payoutAnswer } from './handlers/transfers.ts';
import { collectionAnswer } from './handlers/payments.ts';
import { fulfilmentAnswer } from './handlers/fulfilment.ts';

/** The request this answer is due for, as the entity's rail would be asked it now. */
function requestOf(ctx: HandlerContext, cmd: Command & { k: 'rail.answer' }): RailCall | undefined {
  if (cmd.phase === 'callback') return undefined;
  const op = cmd.phase;
  switch (cmd.kind) {
    case 'payout': {
      const transfer = ctx.state.transfers.get(cmd.id);
      return transfer === undefined ? undefined : payoutCall(ctx, transfer, cmd.attempt, op)?.call;
    }
    case 'fulfilment': {
      const order = ctx.state.orders.get(cmd.id);
      return order === undefined ? undefined : fulfilmentCall(ctx, order, cmd.attempt, op)?.call;
    }
    case 'collection': {
      const payment = ctx.state.payments.get(cmd.id);
      const customer = payment === undefined ? undefined : ctx.state.customers.get(payment.customerId);
      return payment === undefined || customer === undefined ? undefined : collectionCall(ctx, payment, customer, cmd.attempt, op)?.call;
    }
    default:
      return undefined;
  }
}

export function railAnswered(ctx: HandlerContext, received: Command & { k: 'rail.answer' }): Outcome {
  let cmd = received;
  if (cmd.answer === null) {
    // The sandbox rail is pure: its answer is taken here, at the instant it is due (after the simulated
    // latency), exactly as the worker would have taken it — and a replayed command gets the same one.
    const request = requestOf(ctx, cmd);
    const answer = request === undefined ? null : answerAtOnce(request, ctx.nowMs);
    if (answer === null) return rejected(reject('VALIDATION', 'rail.answer carries no answer.'));
    cmd = Object.assign({}, cmd, { answer });
  }
  const outcome = answerOutcome(ctx, cmd);
  if (cmd.phase !== 'callback' || outcome.events.length > 0) return outcome;
  // A callback that moved nothing (an `accepted` or `unknown` the entity already reflects, a duplicate
  // provider reference) is acknowledged with 202, so the connector's ack says `applied: false`.
  return {
    ...outcome,
    reply: (state) => {
      const reply = outcome.reply(state);
      return reply.status === 200 ? Object.assign({}, reply, { status: CALLBACK_UNCHANGED_STATUS }) : reply;
    },
  };
}

/** The shard's status for a signed callback that was valid but changed nothing. */
export const CALLBACK_UNCHANGED_STATUS = 202;

function answerOutcome(ctx: HandlerContext, cmd: Command & { k: 'rail.answer' }): Outcome {
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
