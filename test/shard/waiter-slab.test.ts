// WaiterSlab (src/shard/waiter-slab.ts): the numbers commands carry to their shard and back.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WaiterSlab } from '../../src/shard/waiter-slab.ts';

test('a value is found under its number until it is taken, once', () => {
  const slab = new WaiterSlab<string>();
  const a = slab.add('a');
  const b = slab.add('b');
  assert.notEqual(a, b);
  assert.equal(slab.size, 2);
  assert.equal(slab.get(a), 'a');
  assert.equal(slab.take(a), 'a');
  assert.equal(slab.take(a), undefined, 'a number is answered once');
  assert.equal(slab.get(a), undefined);
  assert.equal(slab.get(b), 'b');
  assert.equal(slab.size, 1);
});

test('a reused slot gets a new number: a late answer for the old one finds nothing', () => {
  const slab = new WaiterSlab<string>();
  const first = slab.add('first');
  slab.take(first);
  const second = slab.add('second');
  assert.notEqual(second, first, 'same slot, another generation');
  assert.equal(slab.get(first), undefined);
  assert.equal(slab.take(first), undefined);
  assert.equal(slab.get(second), 'second');
  assert.ok(Number.isSafeInteger(second) && second >= 0);
});

test('numbers stay unique over many adds and takes, and entries lists exactly what waits', () => {
  const slab = new WaiterSlab<number>();
  const seen = new Set<number>();
  const waiting = new Map<number, number>();
  for (let i = 0; i < 10_000; i += 1) {
    const n = slab.add(i);
    assert.ok(!seen.has(n), `number ${n} handed out twice`);
    seen.add(n);
    waiting.set(n, i);
    // Answer in an order other than sending, as shards do.
    if (i % 3 === 2) {
      for (const [m, value] of [...waiting].slice(0, 2)) {
        assert.equal(slab.take(m), value);
        waiting.delete(m);
      }
    }
  }
  assert.equal(slab.size, waiting.size);
  assert.deepEqual(new Map(slab.entries()), waiting);
  for (const [n, value] of waiting) assert.equal(slab.take(n), value);
  assert.equal(slab.size, 0);
  assert.deepEqual([...slab.entries()], []);
});

test('taking while walking the entries (a failed link answers its commands) leaves the others', () => {
  const slab = new WaiterSlab<{ shard: number }>();
  const numbers = Array.from({ length: 8 }, (_, i) => slab.add({ shard: i % 2 }));
  for (const [n, value] of slab.entries()) if (value.shard === 1) slab.take(n);
  assert.equal(slab.size, 4);
  for (const [i, n] of numbers.entries()) assert.equal(slab.get(n)?.shard, i % 2 === 0 ? 0 : undefined);
});
