// The pool's gate on cross-shard forwards: a hold is granted only once every forward already sent is
// answered, held forwards go out exactly once when it ends, and it ends at its bounds (time, count).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ForwardGate, HELD_FORWARDS_MAX } from '../../src/shard/forward-gate.ts';
import type { Command } from '../../src/shard/protocol.ts';
import type { StoredReply } from '../../src/shard/state.ts';

/** A shard that answers when told to: `sent` in order, `answer()` replies to the oldest. */
function shard() {
  const sent: Command[] = [];
  const waiting: Array<(reply: StoredReply) => void> = [];
  return {
    sent,
    send: (cmd: Command) => new Promise<StoredReply>((resolve) => {
      sent.push(cmd);
      waiting.push(resolve);
    }),
    answer: () => waiting.shift()?.({ status: 200, json: '{}' }),
  };
}

const cmd = (n: number): Command => ({ k: 'txn.get', id: `t${n}`, owner: 'test:a', nowMs: n, partition: 1 }) as Command;
const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('ForwardGate', () => {
  it('hold: granted only after the forward in flight is answered; forwards meanwhile wait, then go once on release', async () => {
    const s = shard();
    const gate = new ForwardGate(s.send);
    gate.forward(cmd(1));
    let granted: boolean | null = null;
    void gate.start('h1', 5_000).then((ok) => (granted = ok));
    await tick();
    assert.equal(granted, null, 'not while forward 1 is unanswered');
    gate.forward(cmd(2));
    assert.equal(s.sent.length, 1, 'forward 2 is held');
    s.answer();
    await tick();
    assert.equal(granted, true);
    assert.equal(gate.release('h1'), true);
    assert.deepEqual(s.sent.map((c) => (c as { id: string }).id), ['t1', 't2']);
    assert.equal(gate.release('h1'), false, 'a hold ends once');
  });

  it('two holds at once (two backups): both granted, forwards wait until the second is released, and neither ends the other', async () => {
    const s = shard();
    const gate = new ForwardGate(s.send);
    assert.equal(await gate.start('a', 5_000), true);
    assert.equal(await gate.start('b', 5_000), true);
    gate.forward(cmd(7));
    assert.equal(gate.release('a'), true);
    assert.equal(s.sent.length, 0, 'hold b still in force');
    assert.equal(gate.release('b'), true);
    assert.equal(s.sent.length, 1);
  });

  it('hold: expires after its time (release then says it had ended) and sends what it held', async () => {
    const s = shard();
    const gate = new ForwardGate(s.send);
    assert.equal(await gate.start('h2', 20), true);
    gate.forward(cmd(3));
    await new Promise((resolve) => setTimeout(resolve, 60));
    assert.equal(s.sent.length, 1);
    assert.equal(gate.release('h2'), false);
  });

  it(`hold: ${HELD_FORWARDS_MAX} held forwards keep it; one more ends it and all go out in order`, async () => {
    const s = shard();
    const gate = new ForwardGate(s.send);
    assert.equal(await gate.start('h3', 60_000), true);
    for (let i = 0; i < HELD_FORWARDS_MAX; i += 1) gate.forward(cmd(i));
    assert.equal(s.sent.length, 0);
    gate.forward(cmd(HELD_FORWARDS_MAX));
    assert.equal(s.sent.length, HELD_FORWARDS_MAX + 1);
    assert.equal((s.sent[HELD_FORWARDS_MAX] as { id: string }).id, `t${HELD_FORWARDS_MAX}`);
    assert.equal(gate.release('h3'), false);
  });
});
