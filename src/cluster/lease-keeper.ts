// The owner lease as one node holds it: claiming (create), renewing (update with the revision), and,
// after a lapse its holder survived (the bucket electing a leader outlasted the deadline), renewing
// again or re-creating the lapsed key. Main thread of the node supervisor (node.ts).
// Invariant: `untilMs` only moves forward for a lease this node held without a gap, or for one it
// re-created and then proved: no stream has a message past this owner's own verified tail.
import { randomBytes } from 'node:crypto';
import type { JetStreamManager } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import type { TailsAnswer } from './owner-child.ts';
import { apiErrorCode, CONTROL_STREAM, OWNER_KEY, streamOf, WRONG_LAST_SEQUENCE } from './streams.ts';

/** The owner stops acknowledging this long before its lease could expire (clock steps, scheduling). */
const LEASE_MARGIN_MS = 1_000;
/** A renewal unanswered this long is sent again at the next poll (a reconnection may have eaten it). */
const RENEW_TIMEOUT_MS = 1_000;

/**
 * The lease key's value: who owns, where it listens, this node's claim (recognises its own key), and
 * from the first renewal on the epoch its server runs under (the claim's revision; a re-created key keeps it).
 */
export interface OwnerValue {
  node: string;
  url: string;
  claim?: string;
  epoch?: number;
  /** A shard lease's holder: where its shard host's link listens (host:port), once it does. */
  link?: string;
}

/** What one renewal did. */
export type Renewal =
  | { kind: 'renewed' }
  /** Not renewed (yet): the bucket did not answer, or a re-created lease is not proven yet. */
  | { kind: 'pending' }
  /** Another node holds the lease, or wrote to a stream during the lapse: this node must stop serving. */
  | { kind: 'lost'; why: string };

export class LeaseKeeper {
  /** The revision of the key this node holds (0: none). */
  revision = 0;
  /** Wall-clock ms until which the lease surely holds (the server may acknowledge before it). */
  untilMs = 0;
  readonly value: OwnerValue;
  /** A re-created lease not yet proven: the deadline it would give (0: wait for the next renewal). */
  private unproven: { untilMs: number } | null = null;

  constructor(
    private readonly kv: KV,
    private readonly jsm: JetStreamManager,
    private readonly options: {
      node: string;
      url: string;
      leaseMs: number;
      shards: number;
      log: (message: string) => void;
      /** The key (default `owner`, the node-wide or front lease; `shard.<n>` for one shard). */
      key?: string;
      /** The streams a re-created lease must find untouched, each with its slot in the tails answer (default: every shard's and kobo-control). */
      streams?: Array<{ name: string; slot: number }>;
    },
  ) {
    this.value = { node: options.node, url: options.url, claim: randomBytes(8).toString('hex') };
    this.key = options.key ?? OWNER_KEY;
    this.streams = options.streams ?? [...Array.from({ length: options.shards }, (_, shard) => ({ name: streamOf(shard), slot: shard })), { name: CONTROL_STREAM, slot: options.shards }];
  }

  private readonly key: string;
  private readonly streams: Array<{ name: string; slot: number }>;
  /**
   * The claim, renewal or hand-back in flight; the next one starts after it. Each of them writes at the
   * revision the key had when it was sent: a hand-back sent beside a renewal deleted at the revision
   * the renewal was replacing, failed, and left the key to its TTL (a planned move then waited ~8 s); a
   * second renewal beside a first one found the revision gone and took the lease for another node's.
   */
  private turn: Promise<unknown> = Promise.resolve();

  /** Runs `operation` once every earlier claim, renewal and hand-back of this lease has finished. */
  private inTurn<T>(operation: () => Promise<T>): Promise<T> {
    const result = this.turn.then(operation, operation);
    this.turn = result.catch(() => undefined);
    return result;
  }

  private deadlineOf(sentAtMs: number): number {
    return sentAtMs + this.options.leaseMs - LEASE_MARGIN_MS;
  }

  /** Claims a free lease (create): 'taken' when another node holds it, 'unavailable' when the bucket did not answer. */
  claim(): Promise<'claimed' | 'taken' | 'unavailable'> {
    return this.inTurn(() => this.claimNow());
  }

  private async claimNow(): Promise<'claimed' | 'taken' | 'unavailable'> {
    const sentAt = Date.now();
    try {
      this.revision = await this.kv.create(this.key, JSON.stringify(this.value));
    } catch (error) {
      return apiErrorCode(error) === WRONG_LAST_SEQUENCE ? 'taken' : 'unavailable';
    }
    this.untilMs = this.deadlineOf(sentAt);
    this.unproven = null;
    this.value.epoch = this.revision;
    return 'claimed';
  }

  forget(): void {
    this.revision = 0;
    this.untilMs = 0;
    this.unproven = null;
  }

  /** Gives the lease back at once (a stop, or a lost re-creation) so that another node need not wait for its TTL. */
  handBack(): Promise<void> {
    return this.inTurn(async () => {
      if (this.revision > 0) await this.kv.delete(this.key, { previousSeq: this.revision }).catch(() => {});
      this.forget();
    });
  }

  /**
   * One renewal. `tails` is the serving owner's question to its server (null while taking over): with
   * it, a key that lapsed (expired during the bucket's election) and that nobody else took is created
   * again, and the lease counts again only once every stream's tail is proven this owner's own.
   */
  renew(tails: (() => Promise<TailsAnswer>) | null): Promise<Renewal> {
    return this.inTurn(() => this.renewNow(tails));
  }

  private async renewNow(tails: (() => Promise<TailsAnswer>) | null): Promise<Renewal> {
    // Handed back or forgotten while this renewal waited for its turn: nothing is held to renew.
    if (this.revision === 0) return { kind: 'pending' };
    const sentAt = Date.now();
    try {
      this.revision = await this.kv.update(this.key, JSON.stringify(this.value), this.revision, RENEW_TIMEOUT_MS);
    } catch (error) {
      if (apiErrorCode(error) !== WRONG_LAST_SEQUENCE) return { kind: 'pending' };
      if (tails === null) return { kind: 'lost', why: 'the lease is held by another node' };
      return this.regain(tails);
    }
    if (this.unproven === null) {
      this.untilMs = this.deadlineOf(sentAt);
      return { kind: 'renewed' };
    }
    this.unproven.untilMs = this.deadlineOf(sentAt);
    return tails === null ? { kind: 'pending' } : this.prove(tails);
  }

  /** The key is not at our revision: ours again (re-created), or somebody else's. */
  private async regain(tails: () => Promise<TailsAnswer>): Promise<Renewal> {
    const entry = await this.kv.get(this.key).catch(() => undefined);
    if (entry === undefined) return { kind: 'pending' };
    if (entry !== null && entry.operation === 'PUT') {
      const held = entry.json() as OwnerValue;
      if (held.claim !== this.value.claim) return { kind: 'lost', why: `the lease is held by ${held.node}` };
      // Our own re-creation, whose answer was lost: renew it at the next poll, then prove it.
      this.revision = entry.revision;
      this.unproven = { untilMs: 0 };
      return { kind: 'pending' };
    }
    const sentAt = Date.now();
    try {
      this.revision = await this.kv.create(this.key, JSON.stringify(this.value));
    } catch {
      return { kind: 'pending' }; // the next poll reads the key again: ours, another node's, or still free
    }
    this.unproven = { untilMs: this.deadlineOf(sentAt) };
    this.options.log(`cluster: ${this.options.node} re-created its lapsed lease (revision ${this.revision}); proving that no stream moved meanwhile`);
    return this.prove(tails);
  }

  /**
   * A re-created lease counts once no stream holds a message past what this owner verified as its own:
   * each stream's last sequence is read first, the server's tails after (they only grow). A message past
   * what the server ever shipped is another writer's: this node lost. Between the two, rows of ours are
   * still in flight: the next poll looks again.
   */
  private async prove(tails: () => Promise<TailsAnswer>): Promise<Renewal> {
    const claimed = this.unproven;
    if (claimed === null || Date.now() >= claimed.untilMs) return { kind: 'pending' };
    let lasts: number[];
    let mine: TailsAnswer;
    try {
      lasts = [];
      for (const { name } of this.streams) lasts.push((await this.jsm.streams.info(name)).state.last_seq);
      mine = await tails();
    } catch {
      return { kind: 'pending' };
    }
    for (const [i, last] of lasts.entries()) {
      const { name, slot } = this.streams[i]!;
      if (last > (mine.shipped[slot] ?? 0)) return { kind: 'lost', why: `stream ${name} ends at ${last}, past anything this owner published (${mine.shipped[slot]}): another node wrote during the lapse` };
    }
    if (lasts.some((last, i) => last > (mine.verified[this.streams[i]!.slot] ?? 0))) return { kind: 'pending' };
    this.untilMs = claimed.untilMs;
    this.unproven = null;
    this.options.log(`cluster: ${this.options.node}'s streams end where it left them (${lasts.join(',')}): serving again under revision ${this.revision}`);
    return { kind: 'renewed' };
  }
}
