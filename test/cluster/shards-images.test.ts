// Per-shard ownership's images over 3 nats-servers and 3 kobo nodes on 127.0.0.1: each shard's holder
// writes that shard's images to the object store and purges its stream, followers image their copies of
// the shards they follow, and a kill -9 of a shard's holder moves the shard to a survivor whose recovery
// starts from an image (it replays less than the shard's history). Every process is killed by PID.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { secretKey } from '../helpers/server.ts';
import { fixture, load, replayAll, type Acked } from '../helpers/cluster-load.ts';
import { withCluster } from '../helpers/cluster.ts';
import { natsServerBinary } from '../helpers/nats.ts';
import { until } from '../helpers/wait.ts';
import { customerOn, killNode, shardOf, shardOffTheFront, spreadCluster, SPREAD_ENV, statusOf, verifyAll, writesAgain } from '../helpers/cluster-shards.ts';
import { connectJetStream, streamOf } from '../../src/cluster/streams.ts';

const key = secretKey();
const keys = [`${key}@cluster`];
const skip = natsServerBinary() !== null ? false : 'nats-server is not installed (apt-get install nats-server)';
const IMAGES_ENV = { ...SPREAD_ENV, KOBO_CLUSTER_IMAGE_INTERVAL_SECONDS: '3', KOBO_CLUSTER_COPY_IMAGE_SECONDS: '2', KOBO_SNAPSHOT_INTERVAL_MS: '2000' };

/** The lines of `output` after character `from` that match `pattern`, with their captures. */
function matches(output: string, from: number, pattern: RegExp): RegExpExecArray[] {
  return output.slice(from).split('\n').map((line) => pattern.exec(line)).filter((m): m is RegExpExecArray => m !== null);
}

test('cluster, per-shard ownership: images → each holder images its shards to the object store and purges their streams; kill -9 of a holder → the survivor\'s recovery starts from an image and replays less than the history, every acknowledged request replays the same, verify clean', { skip, timeout: 300_000 }, () =>
  withCluster({ keys, env: IMAGES_ENV }, async (cluster) => {
    const { apis, status } = await spreadCluster(cluster, key);
    const { shard: moved, holder: victim, others: survivors } = shardOffTheFront(cluster, status);
    const victimName = cluster.nodes[victim]!.name;
    const f = await fixture(apis[survivors[0]!]!);
    // Every payment of the load lands on the shard that moves.
    f.payers = [await customerOn(apis[0]!, moved), await customerOn(apis[1]!, moved)];
    const acked: Acked[] = [];
    const errors: string[] = [];
    let alive = [0, 1, 2];
    let running = true;
    const loading = load(() => alive.map((i) => apis[i]!), f, () => running, acked, errors);

    // The holder images the shard at least twice (two kept: the stream is purged below the older one).
    const victimOutput = (): string => cluster.nodes[victim]!.server.output();
    const imaged = new RegExp(`imaged shard ${moved} at LSN (\\d+) \\(stream sequence (\\d+)\\) in (\\d+) ms; stream purged below (\\d+)`);
    const images = await until(async () => matches(victimOutput(), 0, imaged), (m) => m.length >= 3 && Number(m[m.length - 1]![4]) > 1, `two images of shard ${moved} and a purge`, 90_000);
    const { nc, jsm } = await connectJetStream(cluster.nats.urls, 'kobo-test-images');
    const purged = await jsm.streams.info(streamOf(moved));
    await nc.close();
    const last = images[images.length - 1]!;
    process.stdout.write(`# shard ${moved} on ${victimName}: ${images.length} images, the last at LSN ${last[1]} (${last[3]} ms); stream first sequence ${purged.state.first_seq} of ${purged.state.last_seq}\n`);
    assert.ok(purged.state.first_seq > 1, `the stream of shard ${moved} was purged: ${JSON.stringify(purged.state)}`);
    // Each survivor imaged its copy of the shard after the load began.
    const marks = survivors.map((i) => cluster.nodes[i]!.server.output().length);
    for (const [n, i] of survivors.entries()) await until(async () => /imaged its copy .*shard \d+: [1-9]\d* record\(s\) replayed/.test(cluster.nodes[i]!.server.output().slice(marks[n])), (seen) => seen, `${cluster.nodes[i]!.name} imaging its copy`, 60_000);
    const ackedBefore = acked.length;

    const after = survivors.map((i) => cluster.nodes[i]!.server.output().length);
    alive = survivors;
    const killedAt = await killNode(cluster, victim);
    const recoveredMs = await writesAgain(apis[survivors[0]!]!, f.payers[0]!, killedAt);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    running = false;
    await loading;
    // The survivor now holding the shard: its host's recovery replayed only what followed its copy's newest image.
    const recovery = new RegExp(`shard host ${moved} recovered: (\\d+) record\\(s\\) replayed up to LSN (\\d+)`);
    const recovered = survivors.flatMap((i, n) => matches(cluster.nodes[i]!.server.output(), after[n]!, recovery));
    assert.equal(recovered.length, 1, `one survivor recovered shard ${moved}`);
    const [replayed, lastLsn] = [Number(recovered[0]![1]), Number(recovered[0]![2])];
    process.stdout.write(`# acknowledged ${acked.length} (${ackedBefore} before the kill); shard ${moved} writes again after ${recoveredMs} ms; its recovery replayed ${replayed} of ${lastLsn} records\n`);
    assert.ok(recoveredMs >= 0 && recoveredMs <= 15_000, `writes to the moved shard succeed again ${recoveredMs} ms after the kill`);
    assert.ok(replayed < lastLsn / 2, `the takeover replayed ${replayed} records of a history of ${lastLsn}`);
    for (const error of errors) assert.match(error, /^(503 |fetch: )/);
    await replayAll(apis[survivors[0]!]!, acked);
    await replayAll(apis[survivors[1]!]!, acked.slice(0, 30));
    await verifyAll(cluster, survivors);
  }));

test('cluster, per-shard ownership: a node frozen (SIGSTOP) while the others image and purge past its copies → after SIGCONT its followers meet the gap, start again from the shards\' images and catch up (lag 0), verify clean on its copies', { skip, timeout: 300_000 }, () =>
  withCluster({ keys, env: IMAGES_ENV }, async (cluster) => {
    const { apis, status } = await spreadCluster(cluster, key);
    const { holder: frozen, others } = shardOffTheFront(cluster, status);
    const f = await fixture(apis[others[0]!]!);
    const acked: Acked[] = [];
    const errors: string[] = [];
    let running = true;
    const loading = load(() => others.map((i) => apis[i]!), f, () => running, acked, errors);
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const pids = [cluster.nodes[frozen]!.server.child.pid!, ...cluster.nodes[frozen]!.childPids()];
    const mark = cluster.nodes[frozen]!.server.output().length;
    const { nc, jsm } = await connectJetStream(cluster.nats.urls, 'kobo-test-frozen');
    const lastSeqs = async (): Promise<number[]> => Promise.all([0, 1, 2].map(async (s) => (await jsm.streams.info(streamOf(s))).state.last_seq));
    const atFreeze = await lastSeqs();
    for (const pid of pids) process.kill(pid, 'SIGSTOP');
    // The written streams are purged past where the frozen node's copies stopped.
    const written = [...new Set([shardOf(f.sender.id), ...f.payers.map(shardOf)])];
    await until(async () => Promise.all(written.map(async (s) => (await jsm.streams.info(streamOf(s))).state.first_seq)), (firsts) => written.every((s, i) => firsts[i]! > atFreeze[s]! + 1), `streams ${written.join(',')} purged past the frozen node`, 90_000);
    for (const pid of pids) process.kill(pid, 'SIGCONT');
    // A follower that met the gap stopped; the node makes it again from the shard's newest image.
    const again = await until(async () => matches(cluster.nodes[frozen]!.server.output(), mark, /follows shard (\d+) again|copy of shard (\d+) is behind its purged stream; restored image shard-/), (m) => m.some((line) => /follows shard/.test(line[0])), 'a stopped follower of the thawed node following again', 60_000);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    running = false;
    await loading;
    const tails = await lastSeqs();
    await nc.close();
    const lagOf = async (): Promise<Array<number | null>> => statusOf(cluster, others[0]!).nodes.find((n) => n.node === cluster.nodes[frozen]!.name)?.lag ?? [];
    const lag = await until(lagOf, (l) => l.length === 3 && l.every((x) => x === null || x === 0), 'the thawed node current on every shard it follows', 60_000);
    process.stdout.write(`# frozen ${cluster.nodes[frozen]!.name}: streams ${written.join(',')} purged past its copies; after SIGCONT: ${again.map((m) => m[0]).join(' | ')}; lag ${lag.join(',')} at tails ${tails.join(',')}; acknowledged ${acked.length}\n`);
    for (const error of errors) assert.match(error, /^(503 |fetch: )/);
    await verifyAll(cluster, [frozen]);
  }));
