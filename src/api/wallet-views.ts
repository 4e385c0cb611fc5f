// The front end's copy of wallet views (the 200 body of GET /v1/wallets/{id}), so a wallet read needs no
// shard hop. Main thread. A shard sends a wallet's view with the replies of the commit that changed it,
// once that commit is durable, and the pool stores it before handing out any of those replies.
// Invariant: a view here is never older than an acknowledged change nor newer than a durable one; a
// wallet not changed since this process started is not here (its read goes to the shard).
import type { WalletUpdate } from '../shard/protocol.ts';

export class WalletViews {
  private readonly views = new Map<string, WalletUpdate>();
  /** Reads answered from a view (for /metrics). */
  hits = 0;

  /** `viewsMax`: the views kept at most; the one changed longest ago goes first. */
  constructor(private readonly viewsMax: number) {}

  get(id: string): WalletUpdate | undefined {
    const view = this.views.get(id);
    if (view !== undefined) this.hits += 1;
    return view;
  }

  /** Updates arrive in commit order per shard, and a wallet lives in one shard: the last one wins. */
  update(updates: readonly WalletUpdate[]): void {
    for (const update of updates) {
      this.views.delete(update.id); // re-inserted last: the oldest change is evicted first
      if (this.views.size >= this.viewsMax) {
        const oldest = this.views.keys().next();
        if (oldest.done !== true) this.views.delete(oldest.value);
      }
      this.views.set(update.id, update);
    }
  }

  get size(): number {
    return this.views.size;
  }
}
