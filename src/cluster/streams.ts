// What every clustered process agrees on: stream, subject and bucket names, how a log row travels as
// a JetStream message (headers), and connecting with retry while JetStream elects its leaders.
// Used by the node supervisor (main thread) and by shard workers (jetstream-journal.ts).
// Invariant: a row message carries the row exactly (numbering, checksum, body); an epoch marker carries no row.
import { connect, headers, type MsgHdrs, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
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
  const nc = await connect({ servers: [...servers], name, maxReconnectAttempts: -1, reconnectTimeWait: 250, waitOnFirstConnect: true });
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

/** A JetStream API error's code (10071: wrong last sequence), or null. */
export function apiErrorCode(error: unknown): number | null {
  if (typeof error !== 'object' || error === null || !('apiError' in error)) return null;
  const api = (error as { apiError: () => { err_code?: number } }).apiError();
  return api.err_code ?? null;
}

export const WRONG_LAST_SEQUENCE = 10071;
