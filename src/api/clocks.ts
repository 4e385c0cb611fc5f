// Sandbox clocks: each account's offset from wall time, moved forward by the clock/advance helper.
// Main thread; persisted in control.db (fsynced) and pushed to every shard for the rail timers.
// Invariant: a sandbox clock only moves forward; live accounts always run on wall time.
import type { ControlStore } from '../store/control-store.ts';
import type { ShardPool } from '../shard/pool.ts';

export class SandboxClocks {
  private readonly offsets: Map<string, number>;

  constructor(private readonly control: ControlStore) {
    this.offsets = new Map(control.clockOffsets());
  }

  offsetOf(owner: string): number {
    return this.offsets.get(owner) ?? 0;
  }

  entries(): Array<[string, number]> {
    return [...this.offsets];
  }

  advance(owner: string, seconds: number, pool: ShardPool): number {
    const offsetMs = this.offsetOf(owner) + seconds * 1000;
    this.control.setClockOffset(owner, offsetMs);
    this.offsets.set(owner, offsetMs);
    pool.broadcastClock(owner, offsetMs);
    return offsetMs;
  }
}
