// Per-shard ownership: this node's copies of the shards it does not hold. A follower is made only on a
// copy its stream can continue (else from the shard's newest image), is taken off duty for a takeover of
// its shard, comes back when the shard is let go, and is made again when it stopped on a gap in the
// stream. Main thread of the node supervisor (node.ts keeps the list of followers; this edits it).
// Invariant: no two of these (and no copy image) work on one shard's files at once.
import type { ShardFollower } from './follower.ts';

export interface ShardCopiesDeps {
  /** The node's followers (read and replaced). */
  followers: () => ShardFollower[];
  setFollowers: (followers: ShardFollower[]) => void;
  /** A follower of the shard on a copy its stream can continue (restored from the shard's image first if not). */
  continuable: (shard: number) => Promise<ShardFollower>;
  /** A copy image runs (its followers pause); `endCopyImaging` ends it. */
  copyImaging: () => boolean;
  endCopyImaging: () => Promise<void>;
  stopping: () => boolean;
  held: (shard: number) => boolean;
  log: (message: string) => void;
}

export class ShardCopies {
  /** Takeovers and re-follows under way: a copy image must not start on their files meanwhile. */
  busy = 0;
  private readonly stalled = new Set<number>();
  private readonly refollowing = new Map<number, Promise<void>>();

  constructor(private readonly deps: ShardCopiesDeps) {}

  private async exclusive<T>(work: () => Promise<T>): Promise<T> {
    this.busy += 1;
    try {
      return await work();
    } finally {
      this.busy -= 1;
    }
  }

  /** A takeover of `shard`: its copy is brought to exactly the stream through `marker` and closed. */
  async stopFollowing(shard: number, marker: number): Promise<void> {
    await this.refollowing.get(shard);
    this.stalled.delete(shard);
    await this.exclusive(async () => {
      await this.deps.endCopyImaging();
      const found = this.deps.followers().find((f) => f.shard === shard);
      this.deps.setFollowers(this.deps.followers().filter((f) => f !== found));
      await found?.stop();
      found?.close();
      // Recovery then starts from the copy's newest image (its own, or the restored one) and replays after it.
      const follower = await this.deps.continuable(shard);
      await follower.catchUp(marker);
      follower.close();
    });
  }

  /** This node follows `shard` again (it let go of it). */
  async follow(shard: number): Promise<void> {
    await this.refollowing.get(shard);
    const following = (): boolean => this.deps.stopping() || this.deps.followers().some((f) => f.shard === shard);
    if (following()) return;
    const follower = await this.deps.continuable(shard);
    if (following()) return follower.close();
    this.deps.setFollowers([...this.deps.followers(), follower]);
    await follower.follow();
  }

  /**
   * A follower that stopped on a gap (its stream was purged past it while this node was away or frozen)
   * is made again from the shard's image, so its copy is warm again and its reported position stops
   * holding the stream's purge back. A takeover or a follow of that shard waits for it.
   */
  async refollowStalled(): Promise<void> {
    for (const stalled of this.deps.followers().filter((f) => f.stalled)) {
      this.deps.setFollowers(this.deps.followers().filter((f) => f !== stalled));
      await stalled.stop();
      stalled.close();
      this.stalled.add(stalled.shard);
    }
    if (this.deps.copyImaging() || this.deps.stopping()) return;
    for (const shard of this.stalled) {
      if (this.refollowing.has(shard)) continue;
      if (this.deps.followers().some((f) => f.shard === shard) || this.deps.held(shard)) {
        this.stalled.delete(shard);
        continue;
      }
      const again = this.exclusive(async () => {
        try {
          const fresh = await this.deps.continuable(shard);
          this.deps.setFollowers([...this.deps.followers(), fresh]);
          this.stalled.delete(shard);
          await fresh.follow();
          this.deps.log(` follows shard ${shard} again (its copy had stopped on a gap in the stream)`);
        } catch (error) {
          this.deps.log(` could not follow shard ${shard} again yet: ${(error as Error).message}`);
        } finally {
          this.refollowing.delete(shard);
        }
      });
      this.refollowing.set(shard, again);
      await again;
    }
  }
}
