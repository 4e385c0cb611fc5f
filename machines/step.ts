// Steps a passivated lifecycle: each machine is compiled once, at start, into a table
// (status × event type → candidate transitions, each a guard from the machine's setup() and the names of
// its actions, the effects the shard performs). Pure; runs in shard workers, the main thread and tests.
// Invariant: the table answers as xstate's transition() does, for every status, event and guard outcome
// (test/machines/step.test.ts); a machine the compiler cannot mirror exactly is refused at start.
import assert from 'node:assert/strict';
import { transition, type AnyStateMachine } from 'xstate';

/** What a transition does: the status it ends in and the effects it names, in the machine's order. */
export interface Step<TStatus extends string = string, TEffect extends string = string> {
  readonly target: TStatus;
  readonly actions: readonly TEffect[];
}

type GuardArgs = { context: unknown; event: unknown };
type GuardFn = (args: GuardArgs, params: unknown) => boolean;

interface Candidate {
  /** The machine's own guard implementation; null for an unguarded transition. */
  readonly guard: GuardFn | null;
  readonly guardName: string | null;
  readonly params: unknown;
  /** Null for a transition that goes nowhere and does nothing: xstate takes it, and it refuses the event. */
  readonly step: Step | null;
}

export interface CompiledMachine<TStatus extends string, TContext, TEvent extends { type: string }, TEffect extends string> {
  readonly id: string;
  readonly statuses: readonly TStatus[];
  /** The status a new record starts in (the machine's initial state). */
  readonly initial: TStatus;
  /** Every event type some status handles. */
  readonly eventTypes: ReadonlyArray<TEvent['type']>;
  /** The step `event` takes from `status`, or null when the machine refuses it there. */
  step(status: TStatus, context: TContext, event: TEvent): Step<TStatus, TEffect> | null;
  /** Whether `status` has any transition on `type`, whichever way its guards would answer. */
  handles(status: TStatus, type: TEvent['type']): boolean;
  /** The names of the guards `status` consults for `type`, in order (tests enumerate their outcomes). */
  guardsOf(status: TStatus, type: TEvent['type']): readonly string[];
}

/** Compiled tables by machine, so that `nextStatus(machine, …)` finds the one built at start. */
const compiled = new WeakMap<AnyStateMachine, CompiledMachine<string, unknown, { type: string }, string>>();

/** The name of a guard or action reference in a machine's config: a string or `{ type, params }`. */
function referenceOf(ref: unknown, what: string): { name: string; params: unknown } {
  if (typeof ref === 'string') return { name: ref, params: undefined };
  assert(typeof ref === 'object' && ref !== null && 'type' in ref && typeof ref.type === 'string', `${what}: only named references compile (no inline functions)`);
  return { name: ref.type, params: 'params' in ref ? ref.params : undefined };
}

/**
 * Walks `machine.root` and builds its table. Only what the table mirrors exactly is accepted: one level
 * of states (the status), transitions on exact event types, named guards implemented in setup() without
 * `check` (no and/or/not), named actions declared in setup() (no assign, raise or other built-ins), no
 * entry/exit actions, no eventless, delayed or invoked transitions, no transition to its own state.
 */
export function compileMachine<TStatus extends string, TContext, TEvent extends { type: string }, TEffect extends string>(
  machine: AnyStateMachine,
  statuses: readonly TStatus[],
): CompiledMachine<TStatus, TContext, TEvent, TEffect> {
  const root = machine.root;
  const { guards, actions } = machine.implementations as { guards: Record<string, unknown>; actions: Record<string, unknown> };
  assert.deepEqual(Object.keys(root.states).sort(), [...statuses].sort(), `${machine.id}: the machine's states are its statuses`);
  assert(root.transitions.size === 0 && root.entry.length === 0 && root.exit.length === 0 && (root.always ?? []).length === 0, `${machine.id}: the root has no transitions or actions`);
  const initial = machine.config.initial;
  assert(typeof initial === 'string' && (statuses as readonly string[]).includes(initial), `${machine.id}: the initial state is a status`);
  const table = new Map<string, Map<string, readonly Candidate[]>>();
  const eventTypes = new Set<string>();
  for (const status of statuses) {
    const node = root.states[status]!;
    const where = `${machine.id}.${status}`;
    assert(node.type === 'atomic' || node.type === 'final', `${where}: states are flat`);
    assert(node.entry.length === 0 && node.exit.length === 0, `${where}: effects live on transitions, not entry/exit`);
    assert((node.always ?? []).length === 0 && node.after.length === 0 && node.invoke.length === 0, `${where}: no eventless, delayed or invoked transitions`);
    const byType = new Map<string, readonly Candidate[]>();
    for (const [type, definitions] of node.transitions) {
      assert(!type.includes('*'), `${where}: '${type}': exact event types only`);
      eventTypes.add(type);
      byType.set(type, Object.freeze(definitions.map((definition): Candidate => {
        const on = `${where} on '${type}'`;
        let guard: GuardFn | null = null;
        let guardName: string | null = null;
        let params: unknown;
        if (definition.guard !== undefined) {
          const ref = referenceOf(definition.guard, `${on}: guard`);
          const implementation = guards[ref.name];
          assert(typeof implementation === 'function' && !('check' in implementation), `${on}: guard '${ref.name}' is a plain function declared in setup()`);
          guard = implementation as GuardFn;
          guardName = ref.name;
          params = ref.params;
        }
        const names = definition.actions.map((action) => {
          const ref = referenceOf(action, `${on}: action`);
          const implementation = actions[ref.name];
          assert(typeof implementation === 'function' && !('resolve' in implementation), `${on}: action '${ref.name}' is declared in setup() and is not a built-in`);
          assert(ref.params === undefined, `${on}: action '${ref.name}' takes no params (the event carries the data)`);
          return ref.name;
        });
        const targets = definition.target ?? [];
        assert(targets.length <= 1, `${on}: one target`);
        const target = targets[0];
        assert(target === undefined || (target.parent === root && target.key !== status), `${on}: a target is another status`);
        const to = target?.key ?? status;
        const step = target === undefined && names.length === 0 ? null : Object.freeze({ target: to, actions: Object.freeze(names) });
        return Object.freeze({ guard, guardName, params, step });
      })));
    }
    table.set(status, byType);
  }
  const result: CompiledMachine<TStatus, TContext, TEvent, TEffect> = {
    id: machine.id,
    statuses,
    initial: initial as TStatus,
    eventTypes: [...eventTypes],
    step(status, context, event) {
      const candidates = table.get(status)?.get(event.type);
      if (candidates === undefined) return null;
      for (const candidate of candidates) {
        if (candidate.guard === null) return candidate.step as Step<TStatus, TEffect> | null;
        const args = { context, event };
        const params = typeof candidate.params === 'function' ? (candidate.params as (a: GuardArgs) => unknown)(args) : candidate.params;
        if (candidate.guard(args, params)) return candidate.step as Step<TStatus, TEffect> | null;
      }
      return null;
    },
    handles(status, type) {
      return table.get(status)?.has(type) ?? false;
    },
    guardsOf(status, type) {
      return (table.get(status)?.get(type) ?? []).flatMap((c) => (c.guardName === null ? [] : [c.guardName]));
    },
  };
  compiled.set(machine, result as unknown as CompiledMachine<string, unknown, { type: string }, string>);
  return result;
}

/**
 * The reference the table is checked against: rehydrate a snapshot from the status and step it with
 * xstate's pure transition() (~15–20 µs a step). The actions are the ones transition() returns, unexecuted.
 */
export function referenceStep<TEvent extends { type: string }>(machine: AnyStateMachine, status: string, context: unknown, event: TEvent): Step | null {
  const snapshot = machine.resolveState({ value: status, context });
  // can() is xstate's own rule for "a transition is enabled and goes somewhere or does something".
  if (!snapshot.can(event)) return null;
  const [next, actions] = transition(machine, snapshot, event);
  return { target: String(next.value), actions: actions.map((a) => a.type) };
}

/**
 * The status after `event`, or null when the machine refuses it in `status`: the table compiled at start
 * (compiled here on first use for a machine nobody compiled).
 */
export function nextStatus<TContext, TEvent extends { type: string }>(machine: AnyStateMachine, status: string, context: TContext, event: TEvent): string | null {
  const table = compiled.get(machine) ?? compileMachine(machine, Object.keys(machine.root.states));
  return table.step(status, context, event)?.target ?? null;
}

/** Performed by the shard, not here: an effect's action does nothing inside the machine, so stepping stays pure. */
function performedByShard(): void {}

/**
 * The `actions` of a setup(): one per effect name. The machine names the effects its transitions have;
 * the shard reads the names from the step and performs them (rail calls, holds, events).
 */
export function effectActions<const TNames extends readonly string[]>(names: TNames): { [K in TNames[number]]: () => void } {
  return Object.fromEntries(names.map((name) => [name, performedByShard])) as { [K in TNames[number]]: () => void };
}
