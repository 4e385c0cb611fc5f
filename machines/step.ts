// Pure stepping of a passivated lifecycle: rehydrate a snapshot from a stored status, apply one event.
// Runs inside a shard worker (and in tests); no clock, no I/O: time arrives inside the event.
// Invariant: a status changes only through a transition its machine defines; anything else is refused.
import { transition, type AnyStateMachine } from 'xstate';

/**
 * The status after `event`, or null when the machine does not accept it in `status`.
 * Entities are stored as plain records (status + fields), not live actors, so an idle wallet or a
 * finished order costs a few hundred bytes; the machine is consulted only when an event arrives.
 */
export function nextStatus<TContext extends Record<string, unknown>, TEvent extends { type: string }>(
  machine: AnyStateMachine,
  status: string,
  context: TContext,
  event: TEvent,
): string | null {
  const snapshot = machine.resolveState({ value: status, context });
  if (!snapshot.can(event)) return null;
  const [next] = transition(machine, snapshot, event);
  return String(next.value);
}
