// The webhook subscription lifecycle of the spec's table: active ⇄ disabled. Pure; runs on the main
// thread (the dispatcher and the operator CLI's store). The threshold arrives in the event, as time does.
// Invariant: a subscription is disabled by failures only when consecutive_failures passes the threshold;
// only an operator re-enables it; no delivery is queued or attempted while it is disabled.
import { setup } from 'xstate';
import { compileMachine, effectActions } from './step.ts';

export const SUBSCRIPTION_STATUSES = ['active', 'disabled'] as const;
export type SubscriptionStatus = (typeof SUBSCRIPTION_STATUSES)[number];

export interface SubscriptionContext {
  consecutiveFailures: number;
}

export type SubscriptionEvent =
  /** An attempt failed; `disableAfter` is the configured number of consecutive failures tolerated. */
  | { type: 'delivery.failed'; atMs: number; disableAfter: number }
  | { type: 'delivery.succeeded'; atMs: number }
  | { type: 'enable'; atMs: number }
  | { type: 'disable'; atMs: number };

/** Effects: countFailure adds one to consecutive_failures; resetFailures sets it back to 0. */
export const SUBSCRIPTION_EFFECTS = ['countFailure', 'resetFailures'] as const;
export type SubscriptionEffect = (typeof SUBSCRIPTION_EFFECTS)[number];

export const webhookSubscriptionMachine = setup({
  types: {} as { context: SubscriptionContext; events: SubscriptionEvent },
  guards: {
    failuresPassThreshold: ({ context, event }) => event.type === 'delivery.failed' && context.consecutiveFailures + 1 > event.disableAfter,
  },
  actions: effectActions(SUBSCRIPTION_EFFECTS),
}).createMachine({
  id: 'webhook_subscription',
  initial: 'active',
  context: { consecutiveFailures: 0 },
  states: {
    active: {
      on: {
        'delivery.failed': [{ target: 'disabled', guard: 'failuresPassThreshold', actions: 'countFailure' }, { actions: 'countFailure' }],
        'delivery.succeeded': { actions: 'resetFailures' },
        disable: { target: 'disabled', actions: 'resetFailures' },
      },
    },
    // No further deliveries; an attempt already under way when it was disabled is still recorded.
    disabled: {
      on: {
        'delivery.failed': { actions: 'countFailure' },
        'delivery.succeeded': { actions: 'resetFailures' },
        // Re-enabled once the endpoint is fixed.
        enable: { target: 'active', actions: 'resetFailures' },
      },
    },
  },
});

/** The table the store consults, compiled when the module loads (at start). */
export const webhookSubscriptionTable = compileMachine<SubscriptionStatus, SubscriptionContext, SubscriptionEvent, SubscriptionEffect>(
  webhookSubscriptionMachine,
  SUBSCRIPTION_STATUSES,
);
