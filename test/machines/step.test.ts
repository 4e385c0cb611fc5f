// The tables compiled from the machines against xstate's own transition(): for every machine, status,
// event type and outcome of the guards consulted, both give the same target and the same actions (or
// both refuse); a seeded property test does the same with the real guards on generated contexts and
// events. Also: the compiler refuses what its table could not mirror exactly.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { assign, getInitialSnapshot, setup, type AnyStateMachine } from 'xstate';
import { compileMachine, nextStatus, referenceStep, type CompiledMachine } from '../../machines/step.ts';
import { ORDER_STATUSES, orderMachine, orderTable } from '../../machines/order.machine.ts';
import { PAYMENT_STATUSES, paymentMachine, paymentTable } from '../../machines/payment.machine.ts';
import { FINAL_FAILURE_CODES, RETRYABLE_FAILURE_CODES, TRANSACTION_STATUSES, transactionMachine, transactionTable } from '../../machines/transaction.machine.ts';
import { TRANSFER_STATUSES, transferMachine, transferTable } from '../../machines/transfer.machine.ts';
import { SUBSCRIPTION_STATUSES, webhookSubscriptionMachine, webhookSubscriptionTable } from '../../machines/webhook-subscription.machine.ts';
import { DELIVERY_STATUSES, webhookDeliveryMachine, webhookDeliveryTable } from '../../machines/webhook-delivery.machine.ts';

type AnyTable = CompiledMachine<string, unknown, { type: string }, string>;

interface Subject {
  machine: AnyStateMachine;
  table: AnyTable;
  statuses: readonly string[];
  context: fc.Arbitrary<unknown>;
  event: fc.Arbitrary<{ type: string }>;
}

const atMs = fc.integer({ min: 0, max: 4_102_444_800_000 });
const codes = [...RETRYABLE_FAILURE_CODES, ...FINAL_FAILURE_CODES];
const noContext = fc.constant({});
const plain = (...types: string[]): fc.Arbitrary<{ type: string }>[] => types.map((type) => fc.record({ type: fc.constant(type), atMs }));
const withOutcome = (type: string, outcomes: readonly string[]): fc.Arbitrary<{ type: string }> =>
  fc.record({ type: fc.constant(type), atMs, outcome: fc.constantFrom(...outcomes) });

const SUBJECTS: Record<string, Subject> = {
  transaction: {
    machine: transactionMachine,
    table: transactionTable as unknown as AnyTable,
    statuses: TRANSACTION_STATUSES,
    context: fc.record({ failureCode: fc.constantFrom(null, ...codes) }),
    event: fc.oneof(
      ...plain('submit', 'settle', 'timeout', 'cancel', 'retry'),
      fc.record({ type: fc.constant('fail'), atMs, code: fc.constantFrom(...codes) }),
      withOutcome('reconcile', ['completed', 'failed']),
    ),
  },
  payment: { machine: paymentMachine, table: paymentTable as unknown as AnyTable, statuses: PAYMENT_STATUSES, context: noContext, event: fc.oneof(...plain('submit', 'settle', 'fail', 'cancel', 'retry')) },
  transfer: {
    machine: transferMachine,
    table: transferTable as unknown as AnyTable,
    statuses: TRANSFER_STATUSES,
    context: noContext,
    event: fc.oneof(...plain('submit', 'settle', 'fail', 'cancel', 'timeout', 'retry'), withOutcome('reconcile', ['completed', 'failed'])),
  },
  order: {
    machine: orderMachine,
    table: orderTable as unknown as AnyTable,
    statuses: ORDER_STATUSES,
    context: noContext,
    event: fc.oneof(
      ...plain('payment.opened', 'payment.settled', 'payment.failed', 'cancel', 'rail.delivered', 'rail.failed', 'rail.timeout', 'rail.retry', 'rail.funding_failed', 'rail.manual', 'retry.dispatch', 'transaction.retry', 'refund.start', 'refund.completed'),
      withOutcome('reconcile', ['delivered', 'failed']),
      withOutcome('operator.resolve', ['delivered', 'failed']),
    ),
  },
  webhook_subscription: {
    machine: webhookSubscriptionMachine,
    table: webhookSubscriptionTable as unknown as AnyTable,
    statuses: SUBSCRIPTION_STATUSES,
    context: fc.record({ consecutiveFailures: fc.integer({ min: 0, max: 30 }) }),
    event: fc.oneof(...plain('delivery.succeeded', 'enable', 'disable'), fc.record({ type: fc.constant('delivery.failed'), atMs, disableAfter: fc.integer({ min: 0, max: 30 }) })),
  },
  webhook_delivery: {
    machine: webhookDeliveryMachine,
    table: webhookDeliveryTable as unknown as AnyTable,
    statuses: DELIVERY_STATUSES,
    context: noContext,
    event: fc.oneof(...plain('attempt.succeeded'), fc.record({ type: fc.constant('attempt.failed'), atMs, nextAttemptAtMs: fc.option(atMs, { nil: null }) })),
  },
};

/** Every assignment of true/false to `names` (2^n of them). */
function outcomes(names: readonly string[]): Array<Record<string, boolean>> {
  const unique = [...new Set(names)];
  return Array.from({ length: 2 ** unique.length }, (_, bits) => Object.fromEntries(unique.map((name, i) => [name, ((bits >> i) & 1) === 1])));
}

describe('compiled table = transition(), for every status, event type and guard outcome', () => {
  for (const [name, subject] of Object.entries(SUBJECTS)) {
    it(`${name}: every (status, event type, guard outcome) → the same step`, () => {
      let cases = 0;
      const contextOf = fc.sample(subject.context, { numRuns: 1, seed: 1 })[0];
      for (const status of subject.statuses) {
        // Event types no status handles are refused too: try one unknown type beside the machine's own.
        for (const type of [...subject.table.eventTypes, 'no.such.event']) {
          for (const outcome of outcomes(subject.table.guardsOf(status, type))) {
            // The same machine with its guards answering as `outcome` says, compiled like the real one.
            const guards = Object.fromEntries(Object.keys(outcome).map((g) => [g, () => outcome[g]!]));
            const fixed = subject.machine.provide({ guards });
            const table = compileMachine(fixed, subject.statuses);
            const event = { type, atMs: 0 };
            assert.deepEqual(table.step(status, contextOf, event), referenceStep(fixed, status, contextOf, event), `${name}: ${status} + ${type} with ${JSON.stringify(outcome)}`);
            cases += 1;
          }
        }
      }
      assert(cases > subject.statuses.length * subject.table.eventTypes.length, `${name}: ${cases} cases`);
    });

    it(`${name}: real guards on generated contexts and events → the same step (seeded property)`, () => {
      fc.assert(
        fc.property(fc.constantFrom(...subject.statuses), subject.context, subject.event, (status, context, event) => {
          assert.deepEqual(subject.table.step(status, context, event), referenceStep(subject.machine, status, context, event));
        }),
        { seed: 22, numRuns: 400 },
      );
    });
  }
});

describe('compiled tables: shape', () => {
  it('every machine: all statuses are rows; a final status handles nothing', () => {
    for (const subject of Object.values(SUBJECTS)) {
      for (const status of subject.statuses) {
        const node = subject.machine.root.states[status]!;
        if (node.type === 'final') assert.deepEqual(subject.table.eventTypes.filter((t) => subject.table.handles(status, t)), [], `${subject.table.id}.${status}`);
      }
    }
  });

  it('every machine: the table starts where the machine starts', () => {
    for (const subject of Object.values(SUBJECTS)) assert.equal(subject.table.initial, getInitialSnapshot(subject.machine).value);
  });

  it('nextStatus(machine, …): the table compiled at start answers', () => {
    assert.equal(nextStatus(transactionMachine, 'failed', { failureCode: 'INTERNAL' }, { type: 'retry', atMs: 1 }), 'pending');
    assert.equal(nextStatus(transactionMachine, 'failed', { failureCode: 'LIMIT_EXCEEDED' }, { type: 'retry', atMs: 1 }), null);
  });

  it('a targetless transition keeps the status and names its effects', () => {
    const step = webhookSubscriptionTable.step('active', { consecutiveFailures: 2 }, { type: 'delivery.failed', atMs: 1, disableAfter: 5 });
    assert.deepEqual(step, { target: 'active', actions: ['countFailure'] });
    assert.deepEqual(webhookSubscriptionTable.step('active', { consecutiveFailures: 5 }, { type: 'delivery.failed', atMs: 1, disableAfter: 5 }), { target: 'disabled', actions: ['countFailure'] });
  });
});

describe('compileMachine: refuses what its table would not mirror', () => {
  const base = setup({ guards: { yes: () => true }, actions: { named: () => {} } });
  const refused: Array<[string, AnyStateMachine, readonly string[], RegExp]> = [
    ['entry actions', base.createMachine({ initial: 'a', states: { a: { entry: 'named', on: { go: 'b' } }, b: {} } }), ['a', 'b'], /entry\/exit/],
    ['an inline action (assign)', setup({}).createMachine({ initial: 'a', context: { n: 0 }, states: { a: { on: { go: { target: 'b', actions: assign({ n: 1 }) } } }, b: {} } }), ['a', 'b'], /named references/],
    ['a named built-in action', setup({ actions: { bump: assign({ n: 1 }) } }).createMachine({ initial: 'a', context: { n: 0 }, states: { a: { on: { go: { target: 'b', actions: 'bump' } } }, b: {} } }), ['a', 'b'], /not a built-in/],
    ['an inline guard', base.createMachine({ initial: 'a', states: { a: { on: { go: { target: 'b', guard: () => true } } }, b: {} } }), ['a', 'b'], /named references/],
    ['a wildcard event', base.createMachine({ initial: 'a', states: { a: { on: { 'go.*': 'b' } }, b: {} } }), ['a', 'b'], /exact event types/],
    ['nested states', base.createMachine({ initial: 'a', states: { a: { initial: 'x', states: { x: {} } }, b: {} } }), ['a', 'b'], /flat/],
    ['a transition to its own state', base.createMachine({ initial: 'a', states: { a: { on: { go: 'a' } } } }), ['a'], /another status/],
    ['root transitions', base.createMachine({ initial: 'a', on: { go: '.b' }, states: { a: {}, b: {} } }), ['a', 'b'], /root/],
    ['an eventless transition', base.createMachine({ initial: 'a', states: { a: { always: 'b' }, b: {} } }), ['a', 'b'], /eventless/],
    ['statuses that are not its states', base.createMachine({ initial: 'a', states: { a: {}, b: {} } }), ['a'], /are its statuses/],
  ];
  for (const [what, machine, statuses, why] of refused) {
    it(`${what} → refused at compile`, () => {
      assert.throws(() => compileMachine(machine, statuses), why);
    });
  }
});
