// Timers on an owner's clock: a requery due "5 minutes after the timeout" fires when the owner's clock
// (wall time + its sandbox offset) reaches that instant, whether wall time gets there or the clock is
// advanced by the test helper. Runs in a shard worker; callbacks enqueue commands, nothing else.
// Invariant: each scheduled callback fires exactly once, never before its owner's clock reaches dueAtMs.

interface Pending {
  dueAtMs: number;
  fire: () => void;
  timer: NodeJS.Timeout;
}

export class ClockTimers {
  private readonly byOwner = new Map<string, Set<Pending>>();

  constructor(private readonly offsetOf: (owner: string) => number, private readonly wallMs: () => number = Date.now) {}

  /** The owner's clock now. */
  nowOf(owner: string): number {
    return this.wallMs() + this.offsetOf(owner);
  }

  schedule(owner: string, dueAtMs: number, fire: () => void): void {
    const pending: Pending = { dueAtMs, fire, timer: this.arm(owner, () => pending, dueAtMs) };
    let set = this.byOwner.get(owner);
    if (set === undefined) this.byOwner.set(owner, (set = new Set()));
    set.add(pending);
  }

  /** The owner's clock moved forward: fire what is now due, re-arm the rest to the new distance. */
  clockMoved(owner: string): void {
    const set = this.byOwner.get(owner);
    if (set === undefined) return;
    for (const pending of [...set]) {
      clearTimeout(pending.timer);
      if (pending.dueAtMs <= this.nowOf(owner)) this.run(owner, pending);
      else pending.timer = this.arm(owner, () => pending, pending.dueAtMs);
    }
  }

  /** A wall-time timer for the remaining distance; if it fires early (timer slack), it re-arms. */
  private arm(owner: string, pendingOf: () => Pending, dueAtMs: number): NodeJS.Timeout {
    const timer = setTimeout(() => {
      const pending = pendingOf();
      if (pending.dueAtMs <= this.nowOf(owner)) this.run(owner, pending);
      else pending.timer = this.arm(owner, pendingOf, pending.dueAtMs);
    }, Math.max(0, dueAtMs - this.nowOf(owner)));
    timer.unref();
    return timer;
  }

  /** Timers waiting, for tests and metrics. */
  size(): number {
    let n = 0;
    for (const set of this.byOwner.values()) n += set.size;
    return n;
  }

  private run(owner: string, pending: Pending): void {
    const set = this.byOwner.get(owner);
    if (set === undefined || !set.delete(pending)) return;
    if (set.size === 0) this.byOwner.delete(owner);
    clearTimeout(pending.timer);
    pending.fire();
  }
}
