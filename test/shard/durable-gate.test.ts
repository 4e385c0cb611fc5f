// The pipelined group commit's ordering rule, with a sync the test finishes by hand: nothing leaves
// before a sync that began after its commit has ended, releases keep their order, and one sync
// covers every commit made while the previous one ran.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DurableGate } from '../../src/shard/durable-gate.ts';

function harness() {
  const syncs: Array<(error: Error | null) => void> = [];
  const released: string[] = [];
  const gate = new DurableGate<string>((done) => syncs.push(done), (item) => released.push(item));
  return { gate, syncs, released };
}

describe('DurableGate: replies wait for their own fsync', () => {
  it('a commit → its outputs wait until the sync begun after it ends', () => {
    const { gate, syncs, released } = harness();
    gate.committedOne();
    gate.afterCommits('batch-1');
    assert.deepEqual(released, [], 'nothing leaves before the sync');
    assert.equal(syncs.length, 1, 'one sync started');
    syncs[0]!(null);
    assert.deepEqual(released, ['batch-1']);
  });

  it('commits during a sync → not covered by it; the next sync covers all of them at once', () => {
    const { gate, syncs, released } = harness();
    gate.committedOne();
    gate.afterCommits('batch-1');
    gate.committedOne();
    gate.afterCommits('batch-2');
    gate.committedOne();
    gate.afterCommits('batch-3');
    assert.equal(syncs.length, 1, 'one sync at a time');
    syncs[0]!(null);
    assert.deepEqual(released, ['batch-1'], 'batches 2 and 3 committed after the first sync began');
    assert.equal(syncs.length, 2, 'a second sync starts at once');
    syncs[1]!(null);
    assert.deepEqual(released, ['batch-1', 'batch-2', 'batch-3']);
    assert.equal(gate.pending, 0);
  });

  it('a read after earlier commits → waits for them; with nothing pending → leaves at once, in order', () => {
    const { gate, syncs, released } = harness();
    gate.afterCommits('read-0');
    assert.deepEqual(released, ['read-0'], 'nothing committed yet: at once');
    assert.equal(syncs.length, 0, 'and no sync needed');
    gate.committedOne();
    gate.afterCommits('write-1');
    gate.afterCommits('read-1');
    assert.deepEqual(released, ['read-0'], 'the read saw write-1: it waits too');
    syncs[0]!(null);
    assert.deepEqual(released, ['read-0', 'write-1', 'read-1']);
    gate.afterCommits('read-2');
    assert.deepEqual(released.at(-1), 'read-2', 'all durable again: at once');
  });

  it('a failed sync → throws, and nothing waiting is released', () => {
    const { gate, syncs, released } = harness();
    gate.committedOne();
    gate.afterCommits('batch-1');
    assert.throws(() => syncs[0]!(new Error('EIO')), /EIO/);
    assert.deepEqual(released, []);
  });
});
