// Idempotency for POSTs the front end answers itself (webhook subscriptions, redeliver, the sandbox
// clock, rail switches, recipient validation): the first result per key is kept in sqlite (webhooks.db)
// and replayed; the same key with another request is 409 IDEMPOTENCY_REPLAY. Main thread.
// Shard-executed POSTs keep their records in the shard's WAL instead (src/shard/dispatch.ts).
// Invariant: two requests with one key never both execute; the second waits and gets the first's result.
import { requestFingerprint, sameRequest } from '../idempotency-fingerprint.ts';
import type Database from 'better-sqlite3';
import { isStoredResult, type StoredReply } from '../schemas/reply.schema.ts';
import type { Reply } from './types.ts';
import { FOREIGN_REPLAY, storedForAnotherCustomer } from './idempotency.ts';
import type { ReplicaSink } from '../store/replica-rows.ts';
import { addChecksums, DamagedRowError, DATA_DAMAGED_MESSAGE, frontIdemRowChecksum, reportDamage, type FrontIdemRowFields } from '../store/row-checks.ts';

type Row = FrontIdemRowFields & { crc: number | null };

/** Inserts between sweeps of records past retention. */
const SWEEP_EVERY_INSERTS = 1_000;

export class FrontIdempotencyStore {
  private readonly inFlight = new Map<string, Promise<void>>();
  private readonly find: Database.Statement<[string], Row>;
  private readonly insert: Database.Statement<[string, string, number, string, number, number]>;
  private readonly sweep: Database.Statement<[number]>;
  private inserts = 0;
  /** Cluster mode: each record kept is reported here to be replicated (null: single node). */
  replica: ReplicaSink | null = null;

  constructor(db: Database.Database, private readonly retentionMs: number) {
    db.exec(`CREATE TABLE IF NOT EXISTS front_idempotency (
      scope TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, status INTEGER NOT NULL, body TEXT NOT NULL, at_ms INTEGER NOT NULL, crc INTEGER
    );
    CREATE INDEX IF NOT EXISTS front_idempotency_at ON front_idempotency(at_ms);`);
    // Each row's checksum (frontIdemRowChecksum) is checked at every replay; older rows get theirs once.
    addChecksums(db, 'front_idempotency', ['scope', 'fingerprint', 'status', 'body', 'at_ms'], frontIdemRowChecksum);
    this.find = db.prepare('SELECT scope, fingerprint, status, body, at_ms, crc FROM front_idempotency WHERE scope = ?');
    this.insert = db.prepare('INSERT OR REPLACE INTO front_idempotency (scope, fingerprint, status, body, at_ms, crc) VALUES (?, ?, ?, ?, ?, ?)');
    this.sweep = db.prepare('DELETE FROM front_idempotency WHERE at_ms < ?');
    FrontIdempotencyStore.forgetSecrets(db);
  }

  /**
   * Records kept before replays left the signing secret out still hold it: it goes from them at open,
   * so no replay shows a secret again (see Reply.replayJson).
   */
  private static forgetSecrets(db: Database.Database): void {
    const rows = db.prepare("SELECT scope, fingerprint, status, body, at_ms FROM front_idempotency WHERE body LIKE '%whsec%'").all() as FrontIdemRowFields[];
    const update = db.prepare('UPDATE front_idempotency SET body = ?, crc = ? WHERE scope = ?');
    for (const row of rows) {
      const stored = JSON.parse(row.body) as { json?: string };
      if (stored.json === undefined) continue;
      const reply = JSON.parse(stored.json) as { data?: { secret?: unknown } };
      if (reply.data === undefined || reply.data.secret === undefined) continue;
      delete reply.data.secret;
      const body = JSON.stringify({ json: JSON.stringify(reply) });
      update.run(body, frontIdemRowChecksum(Object.assign({}, row, { body })), row.scope);
    }
  }

  /**
   * SHA-256 of method, path and the raw body: what "the same request" means for every Idempotency-Key.
   * One-shot `crypto.hash` over the joined bytes: the digest a Hash object gives, ~0.8 µs less a POST.
   */
  static fingerprint(method: string, path: string, rawBody: Buffer): string {
    return requestFingerprint(method, path, rawBody);
  }

  /** Replays the stored result of `scope`, refuses a different request under it, or runs `execute` once. */
  /** `customerScope`: the customer a customer-scoped key acts for (null: an account key). */
  async run(scope: string, fingerprint: string, execute: () => Promise<Reply>, customerScope: string | null = null): Promise<StoredReply | 'replay_mismatch'> {
    for (let waited = this.inFlight.get(scope); waited !== undefined; waited = this.inFlight.get(scope)) await waited;
    const known = this.find.get(scope);
    if (known !== undefined) {
      if (frontIdemRowChecksum(known) !== known.crc) {
        // Never an altered replay, nor a second run of what the key already did.
        reportDamage(new DamagedRowError('front_idempotency', `of scope ${scope.slice(0, scope.lastIndexOf(':') + 1)}… (webhooks.db)`));
        return { status: 500, error: { code: 'DATA_DAMAGED', message: DATA_DAMAGED_MESSAGE } };
      }
      if (!sameRequest(known.fingerprint, fingerprint)) return 'replay_mismatch';
      const stored = JSON.parse(known.body) as Omit<StoredReply, 'status'>;
      if (customerScope !== null && storedForAnotherCustomer(stored.json, customerScope)) return FOREIGN_REPLAY;
      return { status: known.status, ...stored };
    }
    let done!: () => void;
    this.inFlight.set(scope, new Promise<void>((resolve) => (done = resolve)));
    try {
      const reply = await execute();
      if (isStoredResult(reply.status)) {
        const body = JSON.stringify(reply.error === undefined ? { json: reply.replayJson ?? reply.json } : { error: reply.error });
        const nowMs = Date.now();
        const crc = frontIdemRowChecksum({ scope, fingerprint, status: reply.status, body, at_ms: nowMs });
        this.insert.run(scope, fingerprint, reply.status, body, nowMs, crc);
        this.replica?.record({ table: 'front_idempotency', row: { scope, fingerprint, status: reply.status, body, at_ms: nowMs, crc } });
        if (++this.inserts % SWEEP_EVERY_INSERTS === 0) this.sweep.run(nowMs - this.retentionMs);
      }
      return reply;
    } finally {
      this.inFlight.delete(scope);
      done();
    }
  }
}
