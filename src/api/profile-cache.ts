// The front end's cache of what catalogue resolution needs about a customer (owner, home country, KYC
// level), so a catalogue read needs no shard hop. Main thread. The home country never changes and the
// KYC level changes only through PATCH /v1/customers/{id}, which passes through here and invalidates.
// Invariant: a cached profile is never older than an acknowledged PATCH (the epoch guards a read that
// raced one); at most `profilesMax` entries, the oldest dropped first.
export interface CachedProfile {
  owner: string;
  homeCountry: string;
  kycLevel: number;
}

export class ProfileCache {
  private readonly profiles = new Map<string, CachedProfile>();
  /** Bumped by every invalidation: a shard read that started before it must not be cached. */
  private epochCount = 0;

  constructor(private readonly profilesMax = 100_000) {}

  get epoch(): number {
    return this.epochCount;
  }

  get(id: string): CachedProfile | undefined {
    return this.profiles.get(id);
  }

  /** Stores a profile read from the shard, unless an invalidation happened since the read began. */
  store(id: string, profile: CachedProfile, readEpoch: number): void {
    if (readEpoch !== this.epochCount) return;
    if (this.profiles.size >= this.profilesMax && !this.profiles.has(id)) {
      const oldest = this.profiles.keys().next();
      if (oldest.done !== true) this.profiles.delete(oldest.value);
    }
    this.profiles.set(id, profile);
  }

  /** Before a change to the customer is sent to its shard, and again once it is acknowledged. */
  invalidate(id: string): void {
    this.epochCount += 1;
    this.profiles.delete(id);
  }

  get size(): number {
    return this.profiles.size;
  }
}

/** One per process: the front end serves one data dir. */
export const profileCache = new ProfileCache();
