// Cluster mode over 3 nats-servers and 3 kobo nodes on 127.0.0.1: a follower images its own copy of
// the log as it follows, so the node that takes over after a kill -9 of the owner replays only the
// records after that image, and still answers every acknowledged request the same.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, secretKey, uniqueEmail, uniquePhone } from '../helpers/server.ts';
import { NODE_WIDE_ENV, startKoboCluster } from '../helpers/cluster.ts';
import { natsServerBinary } from '../helpers/nats.ts';
import { kobo } from '../helpers/cli.ts';
import { until } from '../helpers/wait.ts';

const key = secretKey();
const skip = natsServerBinary() !== null ? false : 'nats-server is not installed (apt-get install nats-server)';

/** The WAL records the last server start of a node replayed, from its "recovered" line. */
function replayedAtLastStart(output: string): number | null {
  const all = [...output.matchAll(/recovered \d+ shard\(s\) in \d+ ms \((\d+) WAL records replayed\)/g)];
  const last = all[all.length - 1];
  return last === undefined ? null : Number(last[1]);
}

test('cluster: followers image their copies as they follow → after a kill -9 of the owner the new owner replays only what came after the image (not the whole log), every acknowledged customer is found, verify clean', { skip, timeout: 180_000 }, async () => {
  const cluster = await startKoboCluster({ keys: [`${key}@cluster`], env: { ...NODE_WIDE_ENV, KOBO_CLUSTER_COPY_IMAGE_SECONDS: '2' } });
  try {
    const first = await cluster.owner();
    const api = client(cluster.nodes[first]!.server.baseUrl, key);
    const made: Array<{ idempotencyKey: string; body: unknown; reply: unknown }> = [];
    for (let i = 0; i < 300; i += 8) {
      await Promise.all(Array.from({ length: 8 }, async () => {
        const body = { name: 'Imaged', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' };
        const idempotencyKey = idem();
        const r = await api('POST', '/v1/customers', { idempotencyKey, body });
        assert.equal(r.status, 201, JSON.stringify(r.body));
        made.push({ idempotencyKey, body, reply: r.body });
      }));
    }
    // Every follower images its copy again once it holds the rows written (it logs a line each time).
    const followers = [0, 1, 2].filter((i) => i !== first);
    const marks = followers.map((i) => cluster.nodes[i]!.server.output().length);
    for (const [n, i] of followers.entries()) {
      const node = cluster.nodes[i]!;
      await until(async () => /imaged its copy/.test(node.server.output().slice(marks[n])), (seen) => seen, `${node.name} imaging its copy`, 30_000);
    }
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    await cluster.nodes[first]!.server.kill();
    const next = await cluster.owner(30_000, first);
    const replayed = replayedAtLastStart(cluster.nodes[next]!.server.output());
    assert.notEqual(replayed, null, 'the new owner logged its recovery');
    process.stdout.write(`# ${made.length} customers written; the new owner replayed ${replayed} WAL records\n`);
    assert.ok(replayed! < 30, `the new owner replayed ${replayed} records, not the ~${made.length} the log holds`);
    const after = client(cluster.nodes[next]!.server.baseUrl, key);
    for (const m of made) {
      const again = await after('POST', '/v1/customers', { idempotencyKey: m.idempotencyKey, body: m.body });
      assert.equal(again.status, 201);
      assert.deepEqual(again.body, m.reply);
    }
    const verify = kobo(cluster.nodes[next]!.server.dataDir, 'verify');
    assert.equal(verify.status, 0, `verify on the new owner:\n${verify.stdout}\n${verify.stderr}`);
  } catch (error) {
    for (const node of cluster.nodes) process.stderr.write(`--- ${node.name}\n${node.server.output().split('\n').filter((l) => !/"msg":"request"/.test(l)).slice(-30).join('\n')}\n`);
    throw error;
  } finally {
    await cluster.stop();
  }
});
