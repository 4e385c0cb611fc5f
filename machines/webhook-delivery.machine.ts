// The webhook delivery lifecycle: pending → succeeded, or failed once its attempts are spent. Pure; runs
// on the main thread (the dispatcher's store). The next attempt's time arrives in the event.
// Invariant: a finished delivery never moves again (a redelivery is a new delivery of the same event).
import { setup } from 'xstate';
import { compileMachine, effectActions } from './step.ts';

export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export type DeliveryEvent =
  | { type: 'attempt.succeeded'; atMs: number }
  /** `nextAttemptAtMs` is null when the schedule has no attempt left. */
  | { type: 'attempt.failed'; atMs: number; nextAttemptAtMs: number | null };

/** Effects: scheduleAttempt keeps the delivery due again at nextAttemptAtMs. */
export const DELIVERY_EFFECTS = ['scheduleAttempt'] as const;
export type DeliveryEffect = (typeof DELIVERY_EFFECTS)[number];

export const webhookDeliveryMachine = setup({
  types: {} as { events: DeliveryEvent },
  guards: { attemptsLeft: ({ event }) => event.type === 'attempt.failed' && event.nextAttemptAtMs !== null },
  actions: effectActions(DELIVERY_EFFECTS),
}).createMachine({
  id: 'webhook_delivery',
  initial: 'pending',
  states: {
    pending: {
      on: {
        'attempt.succeeded': 'succeeded',
        'attempt.failed': [{ guard: 'attemptsLeft', actions: 'scheduleAttempt' }, { target: 'failed' }],
      },
    },
    succeeded: { type: 'final' },
    failed: { type: 'final' },
  },
});

/** The table the store consults, compiled when the module loads (at start). */
export const webhookDeliveryTable = compileMachine<DeliveryStatus, Record<string, never>, DeliveryEvent, DeliveryEffect>(webhookDeliveryMachine, DELIVERY_STATUSES);
