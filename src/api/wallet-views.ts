// The front end's copy of wallet views (the 200 body of GET /v1/wallets/{id}), so a wallet read needs no
// shard hop. Main thread. A shard sends a wallet's view with the replies of the commit that changed it,
// once that commit is durable, and the pool stores it before handing out any of those replies.
// Invariant: a view here is never older than an acknowledged change nor newer than a durable one; a
// wallet not changed since this process started is not here (its read goes to the shard).

import type { WalletUpdate } from '../shard/protocol.ts';
import { keptBytes } from '../http/write-body.ts';

/** A kept view, changed in place: `changed` since the eviction hand last passed it. */
interface Held {
  update: WalletUpdate;
  changed: boolean;
  /** The view's body encoded, made by its first read (a wallet that only changes is never encoded). */
  bytes: Buffer | null;
}

/** A view as a read answers it. */
export interface View {
  update: WalletUpdate;
  bytes: Buffer;
}

/**
 * Eviction is CLOCK (second chance), not strict least-recently-changed: a change updates its wallet's entry
 * in place. Re-inserting the wallet at every change (to keep the map in order of change) made the map
 * rehash every few dozen payments, and a rehash of a map in the old generation leaves its old table there,
 * so the scavenger kept each replaced view alive until a full collection (docs/decisions.md, eighth session).
 */
export class WalletViews {
  private readonly views = new Map<string, Held>();
  /** Reads answered from a view (for /metrics). */
  hits = 0;

  /** `viewsMax`: the views kept at most; past it, one not changed since the hand's last pass goes. */
  constructor(private readonly viewsMax: number) {
    if (!(viewsMax >= 1)) throw new RangeError(`WalletViews: viewsMax must be at least 1, not ${viewsMax}`);
  }

  get(id: string): View | undefined {
    const held = this.views.get(id);
    if (held === undefined) return undefined;
    this.hits += 1;
    held.bytes ??= keptBytes(held.update.json);
    return { update: held.update, bytes: held.bytes };
  }

  /** Updates arrive in commit order per shard, and a wallet lives in one shard: the last one wins. */
  update(updates: readonly WalletUpdate[]): void {
    for (const update of updates) {
      const held = this.views.get(update.id);
      if (held !== undefined) {
        held.update = update;
        held.changed = true;
        held.bytes = null;
        continue;
      }
      while (this.views.size >= this.viewsMax) this.evictOne();
      this.views.set(update.id, { update, changed: false, bytes: null });
    }
  }

  /**
   * Walks from the oldest entry: one changed since the last pass loses its mark and goes to the back, the
   * first unmarked one goes. Ends within two passes (every mark is cleared on the first).
   */
  private evictOne(): void {
    for (const [id, held] of this.views) {
      this.views.delete(id);
      if (!held.changed) return;
      held.changed = false;
      this.views.set(id, held);
    }
  }

  get size(): number {
    return this.views.size;
  }
}
