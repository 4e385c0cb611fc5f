// Pure stepping of a passivated lifecycle: rehydrate a snapshot from a stored status, apply one event.
// Runs inside a shard worker (and in tests); no clock, no I/O: time arrives inside the event.
// Invariant: a status changes only through a transition its machine defines; anything else is refused.
import { transition, type AnyStateMachine } from 'xstate';

/** Memoised answers, bounded: transitions depend only on (machine, status, context, event without time). */
const answers = new Map<string, string | null>();
const ANSWERS_MAX = 10_000;

/**
 * The status after `event`, or null when the machine does not accept it in `status`.
 * Entities are stored as plain records (status + fields), not live actors, so an idle wallet or a
 * finished order costs a few hundred bytes; the machine is consulted only when an event arrives.
 * Our machines' guards read only the context and the event's non-time fields, and none has actions,
 * so the answer is a pure function of those and is memoised (rehydrating costs ~18 µs a step).
 */
export function nextStatus<TContext extends Record<string, unknown>, TEvent extends { type: string; atMs?: number }>(
  machine: AnyStateMachine,
  status: string,
  context: TContext,
  event: TEvent,
): string | null {
  const { atMs: _time, ...rest } = event;
  const key = `${machine.id}|${status}|${JSON.stringify(context)}|${JSON.stringify(rest)}`;
  const known = answers.get(key);
  if (known !== undefined) return known;
  const snapshot = machine.resolveState({ value: status, context });
  // One transition, not can() and then transition(): a refused event returns the very same snapshot
  // object, and none of our machines has a self-transition, so this is exact.
  const [next] = transition(machine, snapshot, event);
  const answer = next === snapshot ? null : String(next.value);
  if (answers.size >= ANSWERS_MAX) answers.clear();
  answers.set(key, answer);
  return answer;
}
