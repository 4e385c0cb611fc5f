// What every clustered process agrees on: stream, subject and bucket names, how a log row travels as
// a JetStream message (headers), and connecting with retry while JetStream elects its leaders.
// Used by the node supervisor (main thread) and by shard workers (jetstream-journal.ts).
// Invariant: a row message carries the row exactly (numbering, checksum, body); an epoch marker carries no row.
import { createHash } from 'node:crypto';
import { connect, headers, type MsgHdrs, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager, type JetStreamManager, type JsMsg } from '@nats-io/jetstream';
import type { EncodedRow } from '../journal/log-segments.ts';

export const LEASE_BUCKET = 'kobo-leases';
/** The one lease key: its holder owns every shard of the cluster (decisions: node-wide ownership). */
export const OWNER_KEY = 'owner';
/** How long connecting may wait for JetStream (its meta leader) to answer. */
export const JETSTREAM_READY_MS_MAX = 60_000;

export function streamOf(shard: number): string {
  return `kobo-shard-${shard}`;
}

export function subjectOf(shard: number): string {
  return `kobo.shard.${shard}`;
}

/** `<shard>:<epoch>:<batch>`; the epoch marker a new owner appends is batch 0. */
export function msgIdOf(shard: number, epoch: number, batch: number): string {
  return `${shard}:${epoch}:${batch}`;
}

/** The replicated rows of control.db and webhooks.db (control-log.ts): one subject per row, the newest kept. */
export const CONTROL_STREAM = 'kobo-control';
export const CONTROL_SUBJECTS = 'kobo.control.>';
/** Where each new owner's epoch marker goes (the stream keeps the newest). */
export const CONTROL_EPOCH_SUBJECT = 'kobo.control.epoch';
/** Written once every row a first owner held is in the stream: from then on the stream is the whole truth. */
export const CONTROL_SEEDED_SUBJECT = 'kobo.control.seeded';
/** A day's front-idempotency records share a subject prefix, so that a past day is purged at once. */
export const DAY_MS = 86_400_000;

/** The subject of one replicated row (its key hashed: any text may be a key; a subject token may not hold dots). */
export function controlSubjectOf(table: string, key: string, atMs: number | null): string {
  const token = createHash('sha256').update(key).digest('hex').slice(0, 32);
  return atMs === null ? `kobo.control.${table}.${token}` : `kobo.control.${table}.${Math.floor(atMs / DAY_MS)}.${token}`;
}

/** `control:<epoch>:<n>`: the n-th change an owner published; n = 0 is its epoch marker. */
export function controlMsgIdOf(epoch: number, n: number): string {
  return `control:${epoch}:${n}`;
}

const H_LSN = 'Kobo-Lsn';
const H_N = 'Kobo-N';
const H_BATCH = 'Kobo-Batch';
const H_CRC = 'Kobo-Crc';
const H_EPOCH = 'Kobo-Epoch';

export function rowHeaders(row: EncodedRow, msgId: string): MsgHdrs {
  const h = headers();
  h.set('Nats-Msg-Id', msgId);
  h.set(H_LSN, String(row.lsnFirst));
  h.set(H_N, String(row.n));
  h.set(H_BATCH, String(row.batch));
  h.set(H_CRC, String(row.crc));
  return h;
}

export function epochHeaders(epoch: number, msgId: string): MsgHdrs {
  const h = headers();
  h.set('Nats-Msg-Id', msgId);
  h.set(H_EPOCH, String(epoch));
  return h;
}

/** The row a message carries, or null for an epoch marker (or anything else that is not a row). */
export function rowOf(h: MsgHdrs | undefined, body: Uint8Array): EncodedRow | null {
  if (h === undefined || !h.has(H_LSN)) return null;
  return { lsnFirst: Number(h.get(H_LSN)), n: Number(h.get(H_N)), batch: Number(h.get(H_BATCH)), crc: Number(h.get(H_CRC)), body: Buffer.from(body) };
}

/** Connects (reconnecting forever) and waits until JetStream answers, or throws after JETSTREAM_READY_MS_MAX. */
export async function connectJetStream(servers: readonly string[], name: string): Promise<{ nc: NatsConnection; jsm: JetStreamManager }> {
  const until = Date.now() + JETSTREAM_READY_MS_MAX;
  // The first connection waits for a server to come up, but not forever (the caller's error says which).
  let timer: ReturnType<typeof setTimeout> | undefined;
  const connecting = connect({ servers: [...servers], name, maxReconnectAttempts: -1, reconnectTimeWait: 250, waitOnFirstConnect: true });
  const nc = await Promise.race([
    connecting,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`cluster: no nats-server at ${servers.join(',')} answered in ${JETSTREAM_READY_MS_MAX} ms`)), JETSTREAM_READY_MS_MAX);
    }),
  ]).finally(() => clearTimeout(timer));
  for (;;) {
    try {
      return { nc, jsm: await jetstreamManager(nc, { timeout: 2_000 }) };
    } catch (error) {
      if (Date.now() > until) {
        await nc.close();
        throw new Error(`cluster: JetStream at ${servers.join(',')} did not answer in ${JETSTREAM_READY_MS_MAX} ms`, { cause: error });
      }
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
  }
}

/**
 * Retries a JetStream call until it succeeds or JETSTREAM_READY_MS_MAX passes: right after the servers
 * start, placing a replicated stream or bucket is refused ("no suitable peers for placement") until the
 * meta leader knows every peer.
 */
export async function patiently<T>(call: () => Promise<T>): Promise<T> {
  const until = Date.now() + JETSTREAM_READY_MS_MAX;
  for (;;) {
    try {
      return await call();
    } catch (error) {
      if (Date.now() > until) throw error;
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
  }
}

/** Pause before a follower opens its consumer again after a failure (an election, a lost connection). */
const CONSUME_RETRY_MS = 500;

/** A consumer that delivered nothing for `idleMs` is made again if `behind()` (the stream holds more). */
export interface ConsumeWatch {
  idleMs: number;
  behind: () => Promise<boolean>;
}

/** A follower's consuming, as `consumeRetrying` returns it. */
export interface Consuming {
  /** Stops consuming and waits for the message loop to end (at most one pending open). */
  end: () => Promise<void>;
  /** A message could not be applied: the consuming ended by itself. */
  failed: () => boolean;
}

/**
 * Consumes a stream through the consumer `open` makes (from the follower's current position), and makes
 * it again when opening or consuming fails, e.g. while the stream elects a leader after a nats-server's
 * loss: a follower must not stop or crash over that. An error thrown by `each` (the data cannot be
 * applied) ends the consuming for good, with `label` and the reason on stderr.
 */
export function consumeRetrying(label: string, open: () => Promise<AsyncIterable<JsMsg> & { close(): Promise<void | Error> }>, each: (m: JsMsg) => void, watch?: ConsumeWatch): Consuming {
  let ended = false;
  let failed = false;
  let messages: { close(): Promise<void | Error> } | null = null;
  let wake: (() => void) | null = null;
  // A consumer that delivers nothing while the stream holds more (seen after a nats-server's loss: no
  // error, no message) is closed, and made again from the position reached.
  let lastMessageAtMs = Date.now();
  let checking = false;
  const watchdog = watch === undefined ? null : setInterval(() => {
    if (ended || checking || messages === null || Date.now() - lastMessageAtMs < watch.idleMs) return;
    checking = true;
    const stuck = messages;
    void watch.behind().then((behind) => {
      if (!behind || ended || messages !== stuck) return;
      process.stderr.write(`kobo: ${label}: nothing delivered for ${Date.now() - lastMessageAtMs} ms while the stream holds more; consuming again\n`);
      lastMessageAtMs = Date.now();
      void stuck.close();
    }, () => {}).finally(() => (checking = false));
  }, watch.idleMs);
  const loop = (async () => {
    while (!ended) {
      try {
        const opened = await open();
        messages = opened;
        if (ended) break;
        lastMessageAtMs = Date.now();
        for await (const m of opened) {
          if (ended) break;
          lastMessageAtMs = Date.now();
          try {
            each(m);
          } catch (error) {
            process.stderr.write(`kobo: ${label} stopped: ${(error as Error).message}\n`);
            ended = true;
            failed = true;
          }
        }
      } catch (error) {
        if (!ended) process.stderr.write(`kobo: ${label}: ${(error as Error).message}; consuming again in ${CONSUME_RETRY_MS} ms\n`);
      }
      await messages?.close();
      messages = null;
      if (!ended) await new Promise<void>((resolve) => (wake = resolve, setTimeout(resolve, CONSUME_RETRY_MS)));
    }
  })();
  return {
    failed: () => failed,
    end: async () => {
      ended = true;
      if (watchdog !== null) clearInterval(watchdog);
      wake?.();
      await messages?.close();
      await loop;
    },
  };
}

/** A JetStream API error's code (10071: wrong last sequence), or null. */
export function apiErrorCode(error: unknown): number | null {
  if (typeof error !== 'object' || error === null || !('apiError' in error)) return null;
  const api = (error as { apiError: () => { err_code?: number } }).apiError();
  return api.err_code ?? null;
}

export const WRONG_LAST_SEQUENCE = 10071;
/** The stream's last message does not carry the msg id the publish expected (Nats-Expected-Last-Msg-Id). */
export const WRONG_LAST_MSG_ID = 10070;
