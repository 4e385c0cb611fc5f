// ChurnMap (src/http/churn-map.ts) against a plain Map: the same answers through many swaps, with keys that
// leave at once, keys that stay long (slow requests) and values changed in place.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ChurnMap } from '../../src/http/churn-map.ts';

/** A small deterministic generator (mulberry32), so a failure repeats. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

test('answers as a Map does through thousands of swaps', () => {
  for (const seed of [1, 2, 3]) {
    const next = random(seed);
    const churn = new ChurnMap<string, number | null>();
    const model = new Map<string, number | null>();
    const live: string[] = [];
    let made = 0;
    for (let step = 0; step < 60_000; step += 1) {
      const roll = next();
      if (roll < 0.45 || live.length === 0) {
        const key = `k${made++}`;
        churn.set(key, null);
        model.set(key, null);
        live.push(key);
      } else if (roll < 0.9) {
        // Most keys leave soon; a few (the oldest) stay far longer.
        const at = next() < 0.95 ? live.length - 1 - Math.floor(next() * Math.min(live.length, 64)) : Math.floor(next() * live.length);
        const [key] = live.splice(at, 1);
        assert.equal(churn.delete(key!), model.delete(key!));
      } else if (roll < 0.95) {
        const key = live[Math.floor(next() * live.length)]!;
        churn.set(key, step);
        model.set(key, step);
      } else {
        const key = next() < 0.5 ? live[Math.floor(next() * live.length)]! : `gone${step}`;
        assert.equal(churn.has(key), model.has(key));
        assert.equal(churn.get(key), model.get(key));
        assert.equal(churn.delete(`never${step}`), false);
      }
      assert.equal(churn.size, model.size);
    }
    for (const [key, value] of model) {
      assert.equal(churn.has(key), true);
      assert.equal(churn.get(key), value);
    }
  }
});

test('a key set again keeps one entry, wherever it lives', () => {
  const churn = new ChurnMap<string, number>();
  churn.set('slow', 1);
  for (let i = 0; i < 1_000; i += 1) {
    churn.set(`fast${i}`, i);
    churn.delete(`fast${i}`);
  }
  churn.set('slow', 2);
  assert.equal(churn.size, 1);
  assert.equal(churn.get('slow'), 2);
  assert.equal(churn.delete('slow'), true);
  assert.equal(churn.delete('slow'), false);
  assert.equal(churn.size, 0);
});
