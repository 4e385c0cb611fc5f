// A reply as a shard decided it: stored with its idempotency record, replayed by the front end.
// Any thread. Shared by the shard (which stores) and the front end (which replays and indexes), so it
// lives below both; a plain type, never parsed from a client, so it has no TypeBox schema.
// Invariant: the front end's index and the shard agree on which results a key keeps (isStoredResult).

/** A stored response: replayed byte-for-byte (data) or by code (errors) for the same key. */
export interface StoredReply {
  status: number;
  json?: string;
  error?: { code: string; message: string };
  /** Set only by `idem.replay` when no record has the exact scope (the index's hash collided). */
  miss?: true;
  /** Set on a reply whose idempotency record was just stored: its row (the record's LSN) in the shard file. */
  seq?: number;
}

/**
 * Which results an idempotency key keeps: everything the shard decided except malformed input (400)
 * and faults (5xx), so a corrected or retried request may reuse the key. Shared by the shard (which
 * stores) and the front end's index (which remembers where), so the two never disagree.
 */
export function isStoredResult(status: number): boolean {
  return status !== 400 && status < 500;
}
