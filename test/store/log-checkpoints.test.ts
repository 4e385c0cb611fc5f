// The live shard file's journal is checkpointed on a worker thread (store/log-checkpoints.ts): the log's
// commits never run sqlite's own checkpoint, and the journal still restarts, so it stays bounded.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ShardStore } from '../../src/store/shard-store.ts';
import { CHECKPOINT_NICE } from '../../src/store/checkpointer.ts';
import { LogCheckpoints } from '../../src/store/log-checkpoints.ts';
import { tempDataDir } from '../helpers/server.ts';
import { logRecords } from '../helpers/log.ts';

/** One batch of `n` records of ~600 characters each (the log does not read inside them). */
function batch(first: number, n: number): Array<{ partition: number; body: string }> {
  return Array.from({ length: n }, (_, i) => ({ partition: (first + i) % 4, body: JSON.stringify([{ t: 'test.filler', n: first + i, pad: 'x'.repeat(600) }]) }));
}

describe('log checkpoints on a worker thread', () => {
  it('many commits → the journal restarts (bounded), sqlite never checkpoints on the writer, every record reads back', async (t) => {
    const file = path.join(tempDataDir('log-checkpoints'), 'shard-0.db');
    const store = new ShardStore(file, { deferredSync: true });
    const checkpoints = store.checkpointLogInWorker(20)!;
    assert.equal(store.db.pragma('wal_autocheckpoint', { simple: true }), 0, "sqlite's automatic checkpoint is off");
    let lsn = 0;
    let walMax = 0;
    for (let commit = 0; commit < 400; commit += 1) {
      store.appendBatch(batch(lsn, 8));
      lsn += 8;
      walMax = Math.max(walMax, fs.statSync(`${file}-wal`).size);
      // Let the worker's answers in, as the shard's loop does between batches.
      if (commit % 5 === 4) await sleep(1);
    }
    for (let i = 0; i < 200 && checkpoints.completed < 3; i += 1) await sleep(5);
    assert.ok(checkpoints.completed >= 3, `checkpoints copied the whole journal ${checkpoints.completed} times`);
    // 400 commits of ~8 KiB of records each is ~3 MiB of log and more journal frames: a journal that never
    // restarted would hold all of them; restarted every ~20 commits it stays a few hundred KiB.
    const logBytes = 400 * 8 * 600;
    assert.ok(walMax < logBytes / 2, `the journal peaked at ${walMax} B for ${logBytes} B of records`);
    t.diagnostic(`journal peak ${walMax} B, ${checkpoints.completed} complete checkpoints, ${checkpoints.finishedHere} finished by the writer`);
    store.close();
    const records = logRecords(file);
    assert.equal(records.length, lsn);
    assert.ok(records.every((r) => r.ok), 'every row passes its checksum');
    assert.deepEqual(records.map((r) => JSON.parse(r.body)[0].n), Array.from({ length: lsn }, (_, i) => i));
  });

  it('the checkpoint thread runs below the writer: nice 10 on Linux, the writer still at the process\'s', { skip: process.platform !== 'linux' }, async () => {
    const niceOf = (tid: string): number => {
      // Field 19 of stat is the nice value; the fields after the command's closing parenthesis start at 3.
      const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
    };
    const niceOfThreads = (): number[] => fs.readdirSync('/proc/self/task').map(niceOf);
    const before = niceOfThreads().filter((nice) => nice === CHECKPOINT_NICE).length;
    const file = path.join(tempDataDir('log-checkpoints'), 'shard-0.db');
    const store = new ShardStore(file, { deferredSync: true });
    const checkpoints = store.checkpointLogInWorker(1)!;
    store.appendBatch(batch(0, 1));
    for (let i = 0; i < 200 && checkpoints.completed < 1; i += 1) await sleep(5);
    assert.equal(checkpoints.completed, 1, 'the worker checkpointed once');
    assert.equal(niceOfThreads().filter((nice) => nice === CHECKPOINT_NICE).length, before + 1, 'one more thread at nice 10');
    assert.equal(niceOf(String(process.pid)), 0, 'the main thread keeps nice 0');
    store.close();
  });

  it('a worker that cannot checkpoint (its file is gone) → the writer checkpoints itself, and the journal still restarts', async () => {
    const file = path.join(tempDataDir('log-checkpoints'), 'shard-0.db');
    const store = new ShardStore(file, { deferredSync: true });
    // The worker opens the file it is given when it starts: one that does not exist makes it fail at once.
    const checkpoints = new LogCheckpoints(store.db, `${file}.missing`, 20);
    // Given time to fail before the first round, so the rounds take the branch for a worker that is gone.
    for (let i = 0; i < 100; i += 1) await sleep(2);
    let lsn = 0;
    let walMax = 0;
    for (let commit = 0; commit < 200; commit += 1) {
      store.appendBatch(batch(lsn, 8));
      checkpoints.afterCommit();
      lsn += 8;
      walMax = Math.max(walMax, fs.statSync(`${file}-wal`).size);
    }
    assert.ok(checkpoints.finishedHere >= 9, `the writer checkpointed ${checkpoints.finishedHere} times`);
    assert.ok(checkpoints.completed >= 9, 'each of them copied the whole journal');
    assert.ok(walMax < (200 * 8 * 600) / 2, `the journal peaked at ${walMax} B`);
    checkpoints.close();
    store.close();
    assert.equal(logRecords(file).length, lsn);
  });

  it('a read-only open → no checkpointer', () => {
    const file = path.join(tempDataDir('log-checkpoints'), 'shard-0.db');
    new ShardStore(file).close();
    const reader = new ShardStore(file, { readonly: true });
    assert.equal(reader.checkpointLogInWorker(), null);
    reader.close();
  });
});
