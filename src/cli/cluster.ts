// `kobo cluster status`: the cluster as JetStream sees it: the owner lease, each node's last report
// (role, epoch, position in each shard stream) and each shard stream (tail, leader, replicas, lag).
// Operator CLI; reads only (it never claims or renews a lease).
// Invariant: a node's lag is the stream's last sequence minus the position it last reported.
import { Kvm } from '@nats-io/kv';
import { connectJetStream, CONTROL_STREAM, LEASE_BUCKET, OWNER_KEY, streamOf } from '../cluster/streams.ts';

export interface ClusterStatus {
  owner: { node: string; url: string; epoch: number; renewedMsAgo: number } | null;
  /** `lag` per shard: null where the node holds that shard's lease (per-shard ownership). */
  nodes: Array<{ node: string; role: string; epoch: number; url: string; reportedMsAgo: number; lag: Array<number | null>; controlLag: number | null; held: number[] }>;
  /** `owner`: the holder of the shard's own lease (per-shard ownership; null: none or node-wide ownership). */
  shards: Array<{ shard: number; lastSeq: number; messages: number; bytes: number; leader: string; replicas: Array<{ name: string; current: boolean; lag: number }>; owner: { node: string; epoch: number } | null }>;
  /** The replicated control rows' stream (null: not created yet); `messages` is about one per row. */
  control: { lastSeq: number; messages: number; bytes: number; leader: string } | null;
}

/** How long one status read may keep failing (a stream electing a leader answers nothing meanwhile). */
const READ_RETRY_MS_MAX = 30_000;

async function patiently<T>(read: () => Promise<T>): Promise<T> {
  const until = Date.now() + READ_RETRY_MS_MAX;
  for (;;) {
    try {
      return await read();
    } catch (error) {
      if (Date.now() > until) throw error;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

/** The owner's node, address and epoch (a key written before its first renewal names no epoch: its revision is). */
function ownerOf(value: { node: string; url: string; epoch?: number }, revision: number): { node: string; url: string; epoch: number } {
  return { node: value.node, url: value.url, epoch: value.epoch ?? revision };
}

export async function clusterStatus(servers: readonly string[]): Promise<ClusterStatus> {
  const { nc, jsm } = await connectJetStream(servers, 'kobo-cli');
  try {
    const kv = await patiently(() => new Kvm(nc).open(LEASE_BUCKET));
    const now = Date.now();
    const ownerEntry = await patiently(() => kv.get(OWNER_KEY));
    const owner = ownerEntry !== null && ownerEntry.operation === 'PUT' ? { ...ownerOf(ownerEntry.json() as { node: string; url: string; epoch?: number }, ownerEntry.revision), renewedMsAgo: now - ownerEntry.created.getTime() } : null;
    const streams: ClusterStatus['shards'] = [];
    let shards = 0;
    for (const name of await patiently(async () => {
      const names: string[] = [];
      for await (const n of jsm.streams.names()) names.push(n);
      return names;
    })) if (/^kobo-shard-\d+$/.test(name)) shards += 1;
    for (let shard = 0; shard < shards; shard += 1) {
      const info = await patiently(() => jsm.streams.info(streamOf(shard)));
      const leaseEntry = await patiently(() => kv.get(`shard.${shard}`));
      const shardOwner = leaseEntry !== null && leaseEntry.operation === 'PUT' ? ownerOf(leaseEntry.json() as { node: string; url: string; epoch?: number }, leaseEntry.revision) : null;
      streams.push({
        owner: shardOwner === null ? null : { node: shardOwner.node, epoch: shardOwner.epoch },
        shard,
        lastSeq: info.state.last_seq,
        messages: info.state.messages,
        bytes: info.state.bytes,
        leader: info.cluster?.leader ?? '-',
        replicas: (info.cluster?.replicas ?? []).map((r) => ({ name: r.name, current: r.current, lag: r.lag ?? 0 })),
      });
    }
    const controlInfo = await jsm.streams.info(CONTROL_STREAM).catch(() => null);
    const control = controlInfo === null ? null : { lastSeq: controlInfo.state.last_seq, messages: controlInfo.state.messages, bytes: controlInfo.state.bytes, leader: controlInfo.cluster?.leader ?? '-' };
    const nodes: ClusterStatus['nodes'] = [];
    for (const key of await patiently(async () => {
      const keys: string[] = [];
      for await (const k of await kv.keys('node.*')) keys.push(k);
      return keys;
    })) {
      const entry = await patiently(() => kv.get(key));
      if (entry === null || entry.operation !== 'PUT') continue;
      const readAt = Date.now();
      const report = entry.json() as { node: string; role: string; epoch: number; url: string; positions: number[]; control?: number | null; atMs: number; followed?: number[]; held?: number[] };
      // Per-shard ownership: `positions` are those of the `followed` shards, in that order.
      const positionOf = (shard: number): number | undefined => (report.followed === undefined ? report.positions[shard] : report.positions[report.followed.indexOf(shard)]);
      nodes.push({
        node: report.node,
        role: owner !== null && owner.node === report.node ? 'owner' : report.role,
        epoch: report.epoch,
        url: report.url,
        reportedMsAgo: Math.max(0, readAt - report.atMs),
        lag: streams.map((s) => (report.held?.includes(s.shard) === true ? null : report.positions.length === 0 ? 0 : Math.max(0, s.lastSeq - (positionOf(s.shard) ?? 0)))),
        held: report.held ?? [],
        controlLag: control === null || report.control === undefined || report.control === null ? null : Math.max(0, control.lastSeq - report.control),
      });
    }
    nodes.sort((a, b) => a.node.localeCompare(b.node));
    return { owner, nodes, shards: streams, control };
  } finally {
    await nc.close();
  }
}

export function formatStatus(status: ClusterStatus): string {
  const lines: string[] = [];
  lines.push(status.owner === null ? 'owner: none (a move is under way, or no node is up)' : `owner: ${status.owner.node} (epoch ${status.owner.epoch}, lease renewed ${status.owner.renewedMsAgo} ms ago, internal ${status.owner.url})`);
  lines.push('nodes:');
  const perShard = status.shards.some((s) => s.owner !== null);
  for (const n of status.nodes) lines.push(`  ${n.node}  ${n.role}  reported ${n.reportedMsAgo} ms ago  lag ${n.role === 'owner' && !perShard ? '-' : n.lag.map((l) => l ?? '-').join(',')}${perShard ? `  owns shards ${n.held.join(',') || 'none'}` : ''}`);
  lines.push('shards:');
  for (const s of status.shards) lines.push(`  shard ${s.shard}:${perShard ? ` owner ${s.owner === null ? 'none (moving)' : `${s.owner.node} (epoch ${s.owner.epoch})`},` : ''} last seq ${s.lastSeq}, ${s.messages} messages, ${s.bytes} bytes, leader ${s.leader}, replicas ${s.replicas.map((r) => `${r.name}${r.current ? '' : ` (behind ${r.lag})`}`).join(' ') || '-'}`);
  const c = status.control;
  if (c !== null) lines.push(`control rows: last seq ${c.lastSeq}, ${c.messages} messages, ${c.bytes} bytes, leader ${c.leader}; lag ${status.nodes.map((n) => `${n.node} ${n.role === 'owner' || n.controlLag === null ? '-' : n.controlLag}`).join(', ')}`);
  return `${lines.join('\n')}\n`;
}
