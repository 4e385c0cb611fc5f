// Cross-shard steps pass through the front end as forwards: a wallet transfer's credit in the
// receiver's shard, and its answer back to the sender's. Main thread (the shard pool owns one gate).
// An online backup reads the shard files one by one, so it needs a moment when no forward is half
// done: while a hold lasts, new forwards wait here, and a hold is granted once every forward already
// sent has been answered (its shard answers only once the step is durable).
// Invariant: a held forward is sent exactly once, when the last hold ends (released, expired or overflowed).
import type { Command } from './protocol.ts';
import type { StoredReply } from './state.ts';

/** Forwards kept while held; past this the hold ends early (the backup then finds it ended and retries). */
export const HELD_FORWARDS_MAX = 100_000;

export class ForwardGate {
  private readonly held: Array<() => void> = [];
  /** Holds in force, by id, each with the timer that ends it. Two backups at once share the pause. */
  private readonly holds = new Map<string, ReturnType<typeof setTimeout>>();
  private inFlight = 0;
  private readonly drained: Array<() => void> = [];

  constructor(private readonly send: (cmd: Command) => Promise<StoredReply>) {}

  /** Sends `cmd` to its shard now (or when the last hold ends); `then` sees the durable reply. */
  forward(cmd: Command, then: (reply: StoredReply) => void = () => {}): void {
    if (this.holds.size > 0) {
      this.held.push(() => this.forward(cmd, then));
      if (this.held.length > HELD_FORWARDS_MAX) this.endAll();
      return;
    }
    this.inFlight += 1;
    void this.send(cmd).then((reply) => {
      this.inFlight -= 1;
      if (this.inFlight === 0) for (const done of this.drained.splice(0)) done();
      then(reply);
    });
  }

  /**
   * Holds new forwards for at most `holdMs` under `id`; true once every forward sent before is durable,
   * false (and this hold ended) if that took longer than `holdMs`.
   */
  async start(id: string, holdMs: number): Promise<boolean> {
    this.end(id);
    const timer = setTimeout(() => this.end(id), holdMs);
    timer.unref();
    this.holds.set(id, timer);
    if (this.inFlight === 0) return true;
    const drained = await new Promise<boolean>((resolve) => {
      const wait = setTimeout(() => resolve(false), holdMs);
      wait.unref();
      this.drained.push(() => {
        clearTimeout(wait);
        resolve(true);
      });
    });
    if (!drained) this.end(id);
    return drained && this.holds.has(id);
  }

  /** Ends hold `id`; true if it was still in force (so every read made under it saw one cut). */
  release(id: string): boolean {
    const current = this.holds.has(id);
    this.end(id);
    return current;
  }

  private end(id: string): void {
    const timer = this.holds.get(id);
    if (timer === undefined) return;
    clearTimeout(timer);
    this.holds.delete(id);
    if (this.holds.size === 0) for (const resume of this.held.splice(0)) resume();
  }

  private endAll(): void {
    for (const id of [...this.holds.keys()]) this.end(id);
  }
}
