// `kobo cluster image-copy` on a real data dir, without NATS: a single-node server writes the log (its own
// images off), the test stands in for the follower by setting each copy's stream position, and the
// command's images and truncation are checked against the owner's rules; a server started on the
// result answers every payment the same, those whose records went to the archive included.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import Database from 'better-sqlite3';
import { client, idem, secretKey, startServer, tempDataDir, ROOT } from '../helpers/server.ts';
import { entryArgs } from '../helpers/build.ts';
import { kobo } from '../helpers/cli.ts';
import { ShardStore } from '../../src/store/shard-store.ts';
import { copyPosition } from '../../src/cluster/follower.ts';
import { shardFile } from '../../src/shard/layout.ts';
import { customersOnEveryShard } from '../helpers/cluster.ts';
import { decodeLogBody } from '../../src/journal/log-record.ts';

const key = secretKey();
const SHARDS = 2;
const RETAIN = 20;
const SEGMENT = 20;
/** Records one group commit may add past a full segment. */
const BATCH_SLACK = 20;
/** Only image-copy writes images here: the server's own snapshots are off. */
const serverEnv = { KOBO_WAL_SEGMENT_RECORDS: String(SEGMENT), KOBO_WAL_RETAIN_RECORDS: String(RETAIN), KOBO_SNAPSHOT_INTERVAL_MS: '0', KOBO_SNAPSHOT_EVERY_RECORDS: '0' };

interface Acked {
  idempotencyKey: string;
  body: unknown;
  reply: { data: { id: string } };
}

interface ShardRun {
  shard: number;
  skipped: boolean;
  imaged: number;
  archived: number;
  live: number;
}

/** Runs `kobo cluster image-copy` on the data dir and reads its line per shard. */
function imageCopy(dataDir: string): ShardRun[] {
  const r = spawnSync(process.execPath, [...entryArgs('kobo'), 'cluster', 'image-copy'], { cwd: ROOT, env: { ...process.env, ...serverEnv, KOBO_DATA_DIR: dataDir }, encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 0, `image-copy:\n${r.stdout}\n${r.stderr}`);
  return r.stdout.trim().split('\n').map((line) => {
    const skipped = /^shard (\d+): skipped/.exec(line);
    if (skipped !== null) return { shard: Number(skipped[1]), skipped: true, imaged: 0, archived: 0, live: -1 };
    const m = /^shard (\d+): \d+ record\(s\) replayed, (\d+) partition\(s\) imaged at LSN \d+, (\d+) record\(s\) archived, (\d+) in the live log$/.exec(line);
    assert.ok(m !== null, `an image-copy line: ${line}`);
    return { shard: Number(m[1]), skipped: false, imaged: Number(m[2]), archived: Number(m[3]), live: Number(m[4]) };
  });
}

/** Per shard file: images, archived records and the stream position (what a follower would have written). */
function fileState(dataDir: string): Array<{ images: number; imagesPerPartitionMax: number; archived: number; live: number; lastLsn: number; position: string }> {
  return Array.from({ length: SHARDS }, (_, shard) => {
    const store = new ShardStore(path.join(dataDir, shardFile(shard)), { readonly: true });
    try {
      const { seq, lsn } = copyPosition(store);
      const images = store.db.prepare('SELECT count(*) FROM snapshots').pluck().get() as number;
      const imagesPerPartitionMax = (store.db.prepare('SELECT max(n) FROM (SELECT count(*) AS n FROM snapshots GROUP BY partition)').pluck().get() as number | null) ?? 0;
      return { images, imagesPerPartitionMax, archived: store.archivedRecords(), live: store.walCount(), lastLsn: store.lsnNext - 1, position: `${seq}:${lsn}` };
    } finally {
      store.close();
    }
  });
}

/** Stands in for the follower: the copy's position names every record the file holds. */
function setPositions(dataDir: string, seq: number): void {
  for (let shard = 0; shard < SHARDS; shard += 1) {
    const store = new ShardStore(path.join(dataDir, shardFile(shard)));
    try {
      store.setMeta('js_position', `${seq}:${store.lsnNext - 1}`);
    } finally {
      store.close();
    }
  }
}

/** `count` payments of the given customers, 8 at a time (fewer in the last turn). */
async function pay(baseUrl: string, customers: readonly string[], acked: Acked[], count: number): Promise<void> {
  const api = client(baseUrl, key);
  for (let i = 0; i < count; i += 8) {
    await Promise.all(Array.from({ length: Math.min(8, count - i) }, async (_, k) => {
      const body = { customer_id: customers[(i + k) % customers.length], amount_minor: 10_000 + acked.length, currency: 'NGN', method: 'bank_transfer' };
      const idempotencyKey = idem();
      const r = await api('POST', '/v1/payments', { idempotencyKey, body });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      acked.push({ idempotencyKey, body, reply: r.body });
    }));
  }
}

test('kobo cluster image-copy: records past the stream position → the shard is left alone; then runs with new records between → partitions imaged, segments both kept images cover archived, live log within the retained tail plus a segment, position untouched, verify clean, every payment replays the same', { timeout: 120_000 }, async () => {
  const dataDir = tempDataDir('kobo-copy-rules');
  const acked: Acked[] = [];
  let server = await startServer({ keys: [`${key}@rules`], dataDir, shards: SHARDS, env: serverEnv });
  const api = client(server.baseUrl, key);
  // Two customers on each shard, so that both shards' logs grow.
  const customers = await customersOnEveryShard(api, { shards: SHARDS, each: 2, name: 'Rules' });
  await pay(server.baseUrl, customers, acked, 200);
  await server.kill();

  // As a former owner's copy: no position in the stream yet. Nothing is imaged or truncated.
  const untouched = fileState(dataDir);
  assert.deepEqual(imageCopy(dataDir).map((r) => r.skipped), [true, true]);
  assert.deepEqual(fileState(dataDir), untouched);
  assert.ok(untouched.every((s) => s.images === 0 && s.archived === 0));

  // The follower met every record: each written partition is imaged once; one image covers nothing yet.
  setPositions(dataDir, 1);
  const first = imageCopy(dataDir);
  assert.ok(first.every((r) => !r.skipped && r.imaged > 0), JSON.stringify(first));
  assert.ok(first.every((r) => r.archived === 0), `one image per partition archives nothing: ${JSON.stringify(first)}`);

  // More records, a second run: partitions get their second image and the segments both cover leave
  // (the records written since the first run wait: their partitions' older image is below them).
  server = await startServer({ keys: [`${key}@rules`], dataDir, shards: SHARDS, env: serverEnv });
  await pay(server.baseUrl, customers, acked, 200);
  await server.kill();
  setPositions(dataDir, 2);
  const second = imageCopy(dataDir);
  assert.ok(second.every((r) => r.archived > 0), `second run: ${JSON.stringify(second)}`);
  // A few records and a third run: the second run's images are now the older ones, the log is cut down.
  server = await startServer({ keys: [`${key}@rules`], dataDir, shards: SHARDS, env: serverEnv });
  await pay(server.baseUrl, customers, acked, customers.length);
  await server.kill();
  setPositions(dataDir, 3);
  const positions = fileState(dataDir).map((s) => s.position);
  const third = imageCopy(dataDir);
  const after = fileState(dataDir);
  process.stdout.write(`# ${acked.length} payments; second run ${JSON.stringify(second)}; third run ${JSON.stringify(third)}\n`);
  for (const [shard, s] of after.entries()) {
    assert.ok(s.archived > 0, `shard ${shard}: nothing archived (${JSON.stringify(s)})`);
    assert.equal(s.archived + s.live, s.lastLsn, `shard ${shard}: archive and live log hold every record once`);
    assert.ok(s.live <= RETAIN + SEGMENT + BATCH_SLACK, `shard ${shard}: ${s.live} records in the live log`);
    assert.equal(s.position, positions[shard], `shard ${shard}: the stream position is untouched`);
    assert.equal(s.imagesPerPartitionMax, 2, `shard ${shard}: two images kept of a partition`);
  }
  const verify = kobo(dataDir, 'verify');
  assert.equal(verify.status, 0, `verify:\n${verify.stdout}\n${verify.stderr}`);

  // A server on the truncated copy (what a takeover starts) answers every payment the same.
  const archivedIds = archivedText(dataDir);
  const inArchive = acked.filter((a) => archivedIds.includes(a.reply.data.id)).length;
  assert.ok(inArchive > 0, 'some payments were archived');
  server = await startServer({ keys: [`${key}@rules`], dataDir, shards: SHARDS, env: serverEnv });
  try {
    const again = client(server.baseUrl, key);
    for (const a of acked) {
      const r = await again('POST', '/v1/payments', { idempotencyKey: a.idempotencyKey, body: a.body });
      assert.equal(r.status, 201);
      assert.deepEqual(r.body, a.reply, `replay of ${a.idempotencyKey}`);
    }
    process.stdout.write(`# every payment replayed the same, ${inArchive} of them from archived records\n`);
  } finally {
    await server.kill();
  }
});

/** Every record body in the data dir's `log_archive` tables, joined. */
function archivedText(dataDir: string): string {
  const parts: string[] = [];
  for (let shard = 0; shard < SHARDS; shard += 1) {
    const db = new Database(path.join(dataDir, shardFile(shard)), { readonly: true, fileMustExist: true });
    try {
      for (const row of db.prepare('SELECT n, body FROM log_archive ORDER BY lsn_first').all() as Array<{ n: number; body: Buffer }>) {
        for (const record of decodeLogBody(row.body, row.n)) parts.push(record.body);
      }
    } finally {
      db.close();
    }
  }
  return parts.join('\n');
}
