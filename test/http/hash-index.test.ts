// The typed-array multimap behind the front end's idempotency index, checked against a plain model
// over random operations (with forced collisions and growth), and at the bound that made a Map unfit.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { HashIndex } from '../../src/http/hash-index.ts';
import { SplitMap } from '../../src/http/split-map.ts';
import { scopeHash } from '../../src/store/scope-hash.ts';

type Op = { kind: 'add' | 'remove'; hash: number; value: number };

function modelGet(model: Map<number, number[]>, hash: number): number[] {
  return [...(model.get(hash) ?? [])].sort((a, b) => a - b);
}

describe('HashIndex', () => {
  it('random adds and removes (few distinct hashes, so probe runs collide and wrap) → same answers as a model', () => {
    const op = fc.record({
      kind: fc.constantFrom<'add' | 'remove'>('add', 'add', 'remove'),
      // Hashes that share a part (multiples of 1,024 apart: the same low bits) and wrap around its 64 first
      // slots (they are 4 apart there), and large 48-bit ones.
      hash: fc.oneof(fc.integer({ min: 0, max: 40 }).map((n) => n * 1024 + 1020), fc.integer({ min: 0, max: 2 ** 48 - 1 }), fc.constant(0)),
      value: fc.integer({ min: -5, max: 5 }).map((n) => n * 1024 + 7),
    });
    fc.assert(
      fc.property(fc.array(op, { maxLength: 3_000 }), (ops: Op[]) => {
        const index = new HashIndex();
        const model = new Map<number, number[]>();
        for (const { kind, hash, value } of ops) {
          const list = model.get(hash) ?? [];
          if (kind === 'add') {
            index.add(hash, value);
            if (!list.includes(value)) model.set(hash, [...list, value]);
          } else {
            assert.equal(index.remove(hash, value), list.includes(value));
            model.set(hash, list.filter((v) => v !== value));
          }
        }
        let size = 0;
        for (const [hash, values] of model) {
          size += values.length;
          assert.deepEqual([...index.get(hash)].sort((a, b) => a - b), modelGet(model, hash));
        }
        assert.equal(index.size, size);
      }),
      { numRuns: 60, seed: 8 },
    );
  });

  it('scope hashes spread over the parts, so a growth moves a small share of the keys (the loop stall it costs)', () => {
    const index = new HashIndex();
    const keys = 200_000;
    const hashes = Array.from({ length: keys }, (_, i) => scopeHash(`test:acct_1:key-${i}`));
    for (const [i, hash] of hashes.entries()) index.add(hash, i);
    assert.equal(index.size, keys);
    const sizes = index.partSizes();
    assert.equal(sizes.reduce((a, b) => a + b, 0), keys);
    assert.ok(Math.max(...sizes) < (1.5 * keys) / sizes.length, `the largest part holds ${Math.max(...sizes)} of ${keys} keys`);
    for (const i of [0, 1, 99_999, keys - 1]) assert.ok(index.get(hashes[i]!).includes(i));
  });

  it('past 2^24 keys (where a Map throws RangeError) → still answers every key', () => {
    const keys = 2 ** 24 + 1_000;
    const index = new HashIndex(2 ** 25);
    for (let i = 0; i < keys; i += 1) index.add(i * 7_919 + 3, i);
    assert.equal(index.size, keys);
    for (const i of [0, 1, 2 ** 23, keys - 1]) assert.deepEqual(index.get(i * 7_919 + 3), [i]);
    assert.deepEqual(index.get(5), []);
  });
});

describe('SplitMap', () => {
  it('a million customer keys → spread evenly over its parts (so no part nears V8\'s 2^24 cap until ~4 billion keys); get and delete work', () => {
    const map = new SplitMap<number>();
    const keys = 1_000_000;
    for (let i = 0; i < keys; i += 1) map.set(`test:acct|e|c${i}@example.com`, i);
    assert.equal(map.size, keys);
    const sizes = map.partSizes();
    assert.equal(sizes.length, 256);
    assert.ok(Math.max(...sizes) < (2 * keys) / sizes.length, `largest part ${Math.max(...sizes)} of ${keys}`);
    assert.equal(map.get('test:acct|e|c0@example.com'), 0);
    assert.equal(map.delete('test:acct|e|c7@example.com'), true);
    assert.equal(map.get('test:acct|e|c7@example.com'), undefined);
    assert.equal(map.size, keys - 1);
  });
});
