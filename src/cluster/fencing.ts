// The shard streams a cluster needs (created once, by whichever node comes first) and the fence a new
// owner puts on each stream: its epoch marker, appended fenced on the stream's tail. Main thread of the
// node supervisor (node.ts). Invariant: after `fence` returns, a former owner's publish is refused.
import { Empty } from '@nats-io/transport-node';
import { StorageType, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { epochHeaders, patiently, streamOf, subjectOf } from './streams.ts';

/** Attempts at fencing a stream whose tail moves meanwhile (a former owner still publishing). */
const FENCE_ATTEMPTS_MAX = 20;

export async function ensureStreams(jsm: JetStreamManager, shards: number, replicas: number): Promise<void> {
  for (let shard = 0; shard < shards; shard += 1) {
    const exists = await jsm.streams.info(streamOf(shard)).then(() => true, () => false);
    if (!exists) {
      await patiently(() => jsm.streams.add({ name: streamOf(shard), subjects: [subjectOf(shard)], num_replicas: replicas, storage: StorageType.File, duplicate_window: 120 * 1_000_000_000 }).catch(async (error: unknown) => {
        // Another node created it meanwhile.
        if (!(await jsm.streams.info(streamOf(shard)).then(() => true, () => false))) throw error;
      }));
    }
  }
}

/**
 * Appends this epoch's marker fenced on the stream's tail: from then on a former owner's publish is
 * refused (10071). Returns the marker's sequence.
 */
export async function fence(js: JetStreamClient, jsm: JetStreamManager, stream: string, subject: string, msgId: string, epoch: number): Promise<number> {
  for (let attempt = 1; ; attempt += 1) {
    const last = (await jsm.streams.info(stream)).state.last_seq;
    try {
      return (await js.publish(subject, Empty, { msgID: msgId, expect: { lastSequence: last }, headers: epochHeaders(epoch, msgId), timeout: 5_000 })).seq;
    } catch (error) {
      if (attempt >= FENCE_ATTEMPTS_MAX) throw error;
      const stored = await jsm.streams.getMessage(stream, { seq: last + 1 }).catch(() => null);
      if (stored !== null && stored.header.get('Nats-Msg-Id') === msgId) return last + 1;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}
