// Cluster mode over 3 nats-servers and 3 kobo nodes on 127.0.0.1, with small log segments and a small
// retained tail: a follower's `kobo cluster image-copy` truncates its copy after imaging it, as the owner
// does after its own images, so the copy's live log stays bounded; after a kill -9 of the owner the node
// that takes over answers every acknowledged payment the same, those whose records it archived included.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import Database from 'better-sqlite3';
import { client, idem, secretKey } from '../helpers/server.ts';
import { customersOnEveryShard, NODE_WIDE_ENV, startKoboCluster, type KoboCluster } from '../helpers/cluster.ts';
import { natsServerBinary } from '../helpers/nats.ts';
import { kobo } from '../helpers/cli.ts';
import { until } from '../helpers/wait.ts';
import { ShardStore } from '../../src/store/shard-store.ts';
import { decodeLogBody } from '../../src/journal/log-record.ts';
import { shardFile } from '../../src/shard/layout.ts';

const key = secretKey();
const skip = natsServerBinary() !== null ? false : 'nats-server is not installed (apt-get install nats-server)';
const SHARDS = 2;
const RETAIN = 100;
const SEGMENT = 100;
/** Records one group commit may add past a full segment (a segment is sealed at the first batch reaching it). */
const BATCH_SLACK = 40;

interface Acked {
  idempotencyKey: string;
  body: unknown;
  reply: { data: { id: string } };
}

let cluster: KoboCluster | null = null;
let first = -1;
/** The node that took over from `first` (test 2). */
let second = -1;
/** Four customers on each shard (a customer's payments are in its partition). */
const customers: string[] = [];
const acked: Acked[] = [];
/** GET bodies of settled payments (finished entities: their rows point into log records) before the kill. */
const settled = new Map<string, unknown>();

/** The copy's live and archived record counts per shard file (read-only, while its node runs). */
function logCounts(dataDir: string): Array<{ live: number; archived: number; firstLsn: number | null; nextLsn: number; positionLsn: number }> {
  return Array.from({ length: SHARDS }, (_, shard) => {
    const store = new ShardStore(path.join(dataDir, shardFile(shard)), { readonly: true });
    try {
      // The follower's stream position: `<stream sequence>:<the LSN its rows reached>`.
      const positionLsn = Number((store.getMeta('js_position') ?? '0:0').split(':')[1]);
      return { live: store.walCount(), archived: store.archivedRecords(), firstLsn: store.walFirstLsn(), nextLsn: store.lsnNext, positionLsn };
    } finally {
      store.close();
    }
  });
}

/** The bytes a node's shard files use (pages in use, as a reader sees them: the sqlite WAL included). */
function bytesInUse(dataDir: string): number {
  let bytes = 0;
  for (let shard = 0; shard < SHARDS; shard += 1) {
    const db = new Database(path.join(dataDir, shardFile(shard)), { readonly: true, fileMustExist: true });
    try {
      const pages = (db.pragma('page_count', { simple: true }) as number) - (db.pragma('freelist_count', { simple: true }) as number);
      bytes += pages * (db.pragma('page_size', { simple: true }) as number);
    } finally {
      db.close();
    }
  }
  return bytes;
}

/** Every record body in a copy's `log_archive` tables, joined (to find which payments were archived). */
function archivedText(dataDir: string): string {
  const parts: string[] = [];
  for (let shard = 0; shard < SHARDS; shard += 1) {
    const db = new Database(path.join(dataDir, shardFile(shard)), { readonly: true, fileMustExist: true });
    try {
      if (db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'log_archive'").get() === undefined) continue;
      for (const row of db.prepare('SELECT n, body FROM log_archive ORDER BY lsn_first').all() as Array<{ n: number; body: Buffer }>) {
        for (const record of decodeLogBody(row.body, row.n)) parts.push(record.body);
      }
    } finally {
      db.close();
    }
  }
  return parts.join('\n');
}

/** Waits until each follower logs `count` more copy images after this moment. */
async function imageRounds(followers: number[], count: number): Promise<void> {
  const marks = followers.map((i) => cluster!.nodes[i]!.server.output().length);
  for (const [n, i] of followers.entries()) {
    const node = cluster!.nodes[i]!;
    await until(async () => node.server.output().slice(marks[n]).match(/imaged its copy/g)?.length ?? 0, (seen) => seen >= count, `${node.name} imaging its copy ${count} time(s)`, 40_000);
  }
}

/** A copy's live log holds at most the retained tail, one segment and a batch's overflow. */
function bounded(c: { live: number }): boolean {
  return c.live <= RETAIN + SEGMENT + BATCH_SLACK;
}

function followersOf(): number[] {
  return [0, 1, 2].filter((i) => i !== first);
}

before(async () => {
  if (skip !== false) return;
  cluster = await startKoboCluster({
    keys: [`${key}@cluster`],
    env: { ...NODE_WIDE_ENV, KOBO_SHARDS: String(SHARDS), KOBO_CLUSTER_COPY_IMAGE_SECONDS: '2', KOBO_WAL_RETAIN_RECORDS: String(RETAIN), KOBO_WAL_SEGMENT_RECORDS: String(SEGMENT), KOBO_SNAPSHOT_EVERY_RECORDS: '150' },
  });
  first = await cluster.owner();
  const api = client(cluster.nodes[first]!.server.baseUrl, key);
  // Every shard's log grows.
  customers.push(...(await customersOnEveryShard(api, { shards: SHARDS, each: 4, name: 'Truncated' })));
  const pay = async (i: number): Promise<void> => {
    const body = { customer_id: customers[i % customers.length], amount_minor: 10_000 + i, currency: 'NGN', method: 'bank_transfer' };
    const idempotencyKey = idem();
    const r = await api('POST', '/v1/payments', { idempotencyKey, body });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    acked.push({ idempotencyKey, body, reply: r.body });
    if (i % 5 === 0) {
      const s = await api('POST', `/v1/test_helpers/payments/${r.body.data.id}/settle`);
      assert.equal(s.status, 200, JSON.stringify(s.body));
      settled.set(r.body.data.id, null);
    }
  };
  // Long enough that each follower images its copy (every 2 s) at least twice while payments arrive.
  const loadUntil = Date.now() + 8_000;
  let n = 0;
  while (Date.now() < loadUntil || n < 600) {
    const from = n;
    n += 8;
    await Promise.all(Array.from({ length: 8 }, (_, k) => pay(from + k)));
  }
  // Then a payment of each customer (every partition written) and a round, until each copy's live log is
  // within its bound (at most 6 times): the images of a round cover the load's tail only once a later
  // round images those partitions again, as on the owner, whose next round images what blocked it.
  for (let i = 0; i < 6 && !followersOf().every((f) => logCounts(cluster!.nodes[f]!.server.dataDir).every(bounded)); i += 1) {
    const from = n;
    n += customers.length;
    await Promise.all(customers.map((_, k) => pay(from + k)));
    await imageRounds(followersOf(), 1);
  }
  for (const id of settled.keys()) {
    const r = await api('GET', `/v1/payments/${id}`);
    assert.equal(r.status, 200);
    settled.set(id, r.body);
  }
});

after(async () => {
  if (cluster !== null) await cluster.stop();
});

/** On failure, the nodes' last log lines (request lines left out) go to stderr. */
async function explained(run: () => Promise<void>): Promise<void> {
  try {
    await run();
  } catch (error) {
    for (const node of cluster!.nodes) process.stderr.write(`--- ${node.name}\n${node.server.output().split('\n').filter((l) => !/"msg":"request"/.test(l)).slice(-30).join('\n')}\n`);
    throw error;
  }
}

test('cluster image-copy: payments over several copy images → each follower\'s copy has archived segments, its live log is at most the retained tail plus one segment, and kobo verify on it is clean', { skip, timeout: 180_000 }, () =>
  explained(async () => {
    assert.ok(cluster !== null && acked.length >= 600);
    const nodes = cluster.nodes;
    process.stdout.write(`# shard files in use: ${nodes.map((n, i) => `${n.name}${i === first ? ' (owner)' : ''} ${bytesInUse(n.server.dataDir)} B`).join(', ')}\n`);
    for (const i of followersOf()) {
      const node = nodes[i]!;
      const counts = logCounts(node.server.dataDir);
      process.stdout.write(`# ${node.name}: ${acked.length} payments; per shard ${counts.map((c) => `live ${c.live}, archived ${c.archived}, next LSN ${c.nextLsn}`).join('; ')}\n`);
      assert.match(node.server.output(), /imaged its copy in \d+ ms .*\b[1-9]\d* record\(s\) archived/, `${node.name} logged an image-copy that archived records`);
      for (const [shard, c] of counts.entries()) {
        assert.ok(c.archived > 0, `${node.name} shard ${shard}: nothing archived (${JSON.stringify(c)})`);
        assert.ok(c.firstLsn !== null && c.firstLsn > 1, `${node.name} shard ${shard}: the live log still starts at LSN ${c.firstLsn}`);
        assert.equal(c.archived + c.live, c.nextLsn - 1, `${node.name} shard ${shard}: archive and live log together hold every record once`);
        assert.equal(c.positionLsn, c.nextLsn - 1, `${node.name} shard ${shard}: its stream position names the copy's last record`);
        assert.ok(bounded(c), `${node.name} shard ${shard}: ${c.live} records in the live log, more than ${RETAIN} retained + a segment of ${SEGMENT}`);
      }
      const verify = kobo(node.server.dataDir, 'verify');
      assert.equal(verify.status, 0, `verify on ${node.name}'s copy:\n${verify.stdout}\n${verify.stderr}`);
      assert.match(verify.stdout, /ok: no violations/);
    }
  }));

test('cluster image-copy: kill -9 of the owner after followers truncated their copies → the new owner serves within 30 s, every acknowledged payment replays with the same body (those archived on its copy included), settled payments read the same, verify clean', { skip, timeout: 180_000 }, () =>
  explained(async () => {
    assert.ok(cluster !== null && acked.length >= 600);
    // Which payments each follower holds only in its archive (their replies and rows point there).
    const archivedOn = new Map<number, Set<string>>();
    for (const i of followersOf()) {
      const text = archivedText(cluster.nodes[i]!.server.dataDir);
      archivedOn.set(i, new Set(acked.filter((a) => text.includes(a.reply.data.id)).map((a) => a.reply.data.id)));
    }
    const killedAt = Date.now();
    await cluster.nodes[first]!.server.kill();
    const next = await cluster.owner(30_000, first);
    second = next;
    const archived = archivedOn.get(next)!;
    const replayed = [...cluster.nodes[next]!.server.output().matchAll(/recovered \d+ shard\(s\) in \d+ ms \((\d+) WAL records replayed\)/g)].pop()?.[1];
    process.stdout.write(`# ${cluster.nodes[next]!.name} served ${Date.now() - killedAt} ms after the kill, replaying ${replayed} records; ${archived.size} of ${acked.length} payments were in its copy's archive\n`);
    assert.ok(archived.size >= acked.length / 2, `only ${archived.size} of ${acked.length} payments were archived on the new owner's copy`);
    const api = client(cluster.nodes[next]!.server.baseUrl, key);
    let replayedArchived = 0;
    for (let i = 0; i < acked.length; i += 8) {
      await Promise.all(acked.slice(i, i + 8).map(async (a) => {
        const again = await api('POST', '/v1/payments', { idempotencyKey: a.idempotencyKey, body: a.body });
        assert.equal(again.status, 201, `replay of ${a.idempotencyKey}: ${JSON.stringify(again.body)}`);
        assert.deepEqual(again.body, a.reply, `replay of ${a.idempotencyKey}`);
        if (archived.has(a.reply.data.id)) replayedArchived += 1;
      }));
    }
    assert.equal(replayedArchived, archived.size);
    for (const [id, body] of settled) {
      const r = await api('GET', `/v1/payments/${id}`);
      assert.equal(r.status, 200);
      assert.deepEqual(r.body, body, `GET ${id} on the new owner`);
    }
    const verify = kobo(cluster.nodes[next]!.server.dataDir, 'verify');
    assert.equal(verify.status, 0, `verify on the new owner:\n${verify.stdout}\n${verify.stderr}`);
  }));

test('cluster image-copy: kill -9 of the second owner under load while the last follower images and truncates its copy every 2 s → it takes over, every payment acknowledged before or during the load replays the same, verify clean', { skip, timeout: 180_000 }, () =>
  explained(async () => {
    assert.ok(cluster !== null && second >= 0, 'the first takeover happened');
    const nodes = cluster.nodes;
    const last = [0, 1, 2].find((i) => i !== first && i !== second)!;
    const apis = [client(nodes[second]!.server.baseUrl, key), client(nodes[last]!.server.baseUrl, key)];
    const mark = nodes[last]!.server.output().length;
    let running = true;
    let n = 0;
    const during: Acked[] = [];
    const writers = Array.from({ length: 6 }, async () => {
      while (running) {
        const i = n++;
        const body = { customer_id: customers[i % customers.length], amount_minor: 20_000 + i, currency: 'NGN', method: 'bank_transfer' };
        const idempotencyKey = idem();
        try {
          const r = await apis[i % 2]!('POST', '/v1/payments', { idempotencyKey, body });
          if (r.status === 201) during.push({ idempotencyKey, body, reply: r.body });
          else await new Promise((resolve) => setTimeout(resolve, 50));
        } catch {
          await new Promise((resolve) => setTimeout(resolve, 50)); // the killed owner's connections
        }
      }
    });
    // Two of the follower's copy images that archived records while the load runs, then the kill.
    await until(async () => nodes[last]!.server.output().slice(mark).match(/imaged its copy in \d+ ms .*\b[1-9]\d* record\(s\) archived/g)?.length ?? 0, (seen) => seen >= 2, `${nodes[last]!.name} truncating its copy under load`, 40_000);
    const before = during.length;
    await nodes[second]!.server.kill();
    const third = await cluster.owner(30_000, second);
    assert.equal(third, last);
    // Writes succeed again through the new owner before the load stops.
    const resumed = during.length;
    await until(async () => during.length, (count) => count >= resumed + 20, 'writes through the new owner', 30_000);
    running = false;
    await Promise.all(writers);
    process.stdout.write(`# ${nodes[last]!.name} took over; ${before} payments acknowledged before the kill, ${during.length} in all during the load\n`);
    const api = client(nodes[last]!.server.baseUrl, key);
    const all = [...acked, ...during];
    for (let i = 0; i < all.length; i += 8) {
      await Promise.all(all.slice(i, i + 8).map(async (a) => {
        const again = await api('POST', '/v1/payments', { idempotencyKey: a.idempotencyKey, body: a.body });
        assert.equal(again.status, 201, `replay of ${a.idempotencyKey}: ${JSON.stringify(again.body)}`);
        assert.deepEqual(again.body, a.reply, `replay of ${a.idempotencyKey}`);
      }));
    }
    const verify = kobo(nodes[last]!.server.dataDir, 'verify');
    assert.equal(verify.status, 0, `verify on the last owner:\n${verify.stdout}\n${verify.stderr}`);
  }));
