// Sandbox test helpers (sk_test_ keys only; 404 with a live key): settle or fail a collection, and
// move the account's sandbox clock. Main thread. They drive the same commands a real rail would.
// Invariant: a helper can only do what a rail callback could; it never edits balances directly.
import Type from 'typebox';
import type { RouteDef } from '../http/types.ts';
import { ClockAdvance, Payment, PaymentFail } from '../schemas/transaction.schema.ts';
import { command, errorOf, isRejection, partitionOf, type ApiDeps } from './deps.ts';

const Clock = Type.Object({ now: Type.String(), offset_seconds: Type.Integer() });

function clockReply(deps: ApiDeps, owner: string): { status: number; json: string } {
  const offsetMs = deps.clocks.offsetOf(owner);
  return { status: 200, json: JSON.stringify({ data: { now: new Date(Date.now() + offsetMs).toISOString(), offset_seconds: Math.round(offsetMs / 1000) } }) };
}

export function testHelperRoutes(deps: ApiDeps): RouteDef[] {
  const outcome = (kind: 'settle' | 'fail'): RouteDef['handle'] => (ctx) => {
    const id = ctx.params.id ?? '';
    const partition = partitionOf(id, 'payment');
    if (isRejection(partition)) return errorOf(partition);
    if (kind === 'settle') return command(deps, ctx, partition, { k: 'payment.settle', id, source: 'test_helper' }, { idempotent: true });
    const code = (ctx.body as { failure_code?: string } | undefined)?.failure_code ?? 'PROVIDER_ERROR';
    return command(deps, ctx, partition, { k: 'payment.fail', id, code, source: 'test_helper' }, { idempotent: true });
  };
  return [
    {
      method: 'POST',
      path: '/v1/test_helpers/payments/:id/settle',
      summary: 'Sandbox: the collection rail confirms the payment',
      auth: 'key',
      family: 'test_helpers',
      sandboxOnly: true,
      // The rail's (or the payer's) outcome: the account's test lever, never the customer's own.
      accountLevel: true,
      response: Payment,
      keyedInShard: true,
      errors: ['NOT_FOUND', 'CONFLICT', 'FORBIDDEN', 'IDEMPOTENCY_REPLAY'],
      handle: outcome('settle'),
    },
    {
      method: 'POST',
      path: '/v1/test_helpers/payments/:id/fail',
      summary: 'Sandbox: the collection rail fails the payment (failure_code, default PROVIDER_ERROR)',
      auth: 'key',
      family: 'test_helpers',
      sandboxOnly: true,
      accountLevel: true,
      body: PaymentFail,
      bodyOptional: true,
      response: Payment,
      keyedInShard: true,
      errors: ['VALIDATION', 'NOT_FOUND', 'CONFLICT', 'FORBIDDEN', 'IDEMPOTENCY_REPLAY'],
      handle: outcome('fail'),
    },
    {
      method: 'POST',
      path: '/v1/test_helpers/clock/advance',
      summary: "Sandbox: move this account's clock forward",
      auth: 'key',
      family: 'test_helpers',
      sandboxOnly: true,
      // The clock is the account's: moving it expires every customer's quotes and fires their timers.
      accountLevel: true,
      body: ClockAdvance,
      response: Clock,
      errors: ['VALIDATION'],
      handle: (ctx) => {
        deps.clocks.advance(ctx.owner, (ctx.body as { seconds: number }).seconds, deps.pool);
        return clockReply(deps, ctx.owner);
      },
    },
    {
      method: 'GET',
      path: '/v1/test_helpers/clock',
      summary: "Sandbox: this account's clock",
      auth: 'key',
      family: 'test_helpers',
      sandboxOnly: true,
      response: Clock,
      handle: (ctx) => clockReply(deps, ctx.owner),
    },
  ];
}
