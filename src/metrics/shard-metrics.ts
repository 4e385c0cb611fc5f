// What a shard worker measures about itself (group-commit sizes, fsync latency, WAL records, snapshot
// duration, rail answers by outcome), gathered in the worker and posted to the main thread once a second.
// Worker thread (collector) and main thread (the message type). Plain data: it crosses postMessage.
// Invariant: at most `SHARD_SAMPLES_MAX` samples per series per message; beyond that only counts grow.
import type { Command } from '../shard/protocol.ts';
import type { Reconciliation, StoredReply } from '../shard/state.ts';
import type { WalEvent } from '../shard/events.ts';

export const SHARD_SAMPLES_MAX = 10_000;
export const SHARD_METRICS_INTERVAL_MS = 1_000;

export interface ShardMetricsMessage {
  type: 'metrics';
  shard: number;
  /** Commands per group commit. */
  batchSizes: number[];
  /** Seconds each group commit's SQLite transaction took (its fsync runs apart, see syncSeconds). */
  commitSeconds: number[];
  /** Seconds each fsync of the sqlite journal took (one covers every batch committed before it began). */
  syncSeconds: number[];
  walRecords: number;
  snapshotSeconds: number[];
  /** `${rail}:${outcome}` → answers. */
  rails: Record<string, number>;
  /** Commands waiting in the shard when the message was posted. */
  queued: number;
  /** Connector calls made by this shard (at most SHARD_SAMPLES_MAX per message). */
  connectorCalls: ConnectorCallSample[];
  /** Transactions marked for reconciliation (a rail contradicted them) or resolved, for the log and counter. */
  reconciliations: ReconciliationNotice[];
}

/** A transaction a rail contradicted (or an operator's resolution of one): logged at warn and counted. */
export interface ReconciliationNotice {
  transactionId: string;
  reconciliation: Reconciliation;
}

/** One call to an operator's connector: labels are config names and enums, never references. */
export interface ConnectorCallSample {
  connector: string;
  kind: string;
  op: string;
  outcome: string;
  seconds: number;
}

/** The rail a command answers for and its outcome, or null when the command is not a rail's answer. */
export function railOutcome(cmd: Command, reply: StoredReply): string | null {
  switch (cmd.k) {
    case 'rail.answer':
      // The sandbox rail's answers are taken inside the shard (answer null here): counted as answered.
      return `${cmd.kind}:${cmd.answer?.outcome ?? (reply.status < 300 ? 'answered' : 'rejected')}`;
    case 'payment.settle':
      return cmd.source === 'rail' ? 'collection:settled' : null;
    case 'payment.fail':
      return cmd.source === 'rail' ? 'collection:failed' : null;
    default:
      return null;
  }
}

export class ShardMetrics {
  private message: ShardMetricsMessage;

  constructor(private readonly shard: number) {
    this.message = this.empty();
  }

  private empty(): ShardMetricsMessage {
    return { type: 'metrics', shard: this.shard, connectorCalls: [], batchSizes: [], commitSeconds: [], syncSeconds: [], walRecords: 0, snapshotSeconds: [], rails: {}, queued: 0, reconciliations: [] };
  }

  commit(commands: number, records: number, seconds: number): void {
    if (this.message.batchSizes.length < SHARD_SAMPLES_MAX) {
      this.message.batchSizes.push(commands);
      this.message.commitSeconds.push(seconds);
    }
    this.message.walRecords += records;
  }

  sync(seconds: number): void {
    if (this.message.syncSeconds.length < SHARD_SAMPLES_MAX) this.message.syncSeconds.push(seconds);
  }

  rail(cmd: Command, reply: StoredReply): void {
    const key = railOutcome(cmd, reply);
    if (key !== null) this.message.rails[key] = (this.message.rails[key] ?? 0) + 1;
  }

  /** Notes each reconciliation event a command produced (called once per executed command). */
  reconciliations(events: readonly WalEvent[]): void {
    for (const event of events) {
      if (event.t !== 'txn.reconciliation' || this.message.reconciliations.length >= SHARD_SAMPLES_MAX) continue;
      this.message.reconciliations.push({ transactionId: event.id, reconciliation: event.reconciliation });
    }
  }

  connectorCall(sample: ConnectorCallSample): void {
    if (this.message.connectorCalls.length < SHARD_SAMPLES_MAX) this.message.connectorCalls.push(sample);
  }

  snapshot(seconds: number): void {
    this.message.snapshotSeconds.push(seconds);
  }

  /** The message to post (sent every interval, idle or not, so gauges fall back to 0), and a fresh collector. */
  take(queued: number): ShardMetricsMessage {
    const m = this.message;
    m.queued = queued;
    this.message = this.empty();
    return m;
  }
}
