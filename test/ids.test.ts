// mintId: every id is a ULID of its time, carries its partition, and does not repeat (it writes its
// characters into one reused buffer and caches the time part per millisecond, so both are checked here).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeTime } from 'ulid';
import { isUlid, mintId, partitionOfId } from '../src/ids.ts';

test('mintId: any partition < 1024 and time → a ULID of that time carrying that partition', () => {
  const base = Date.UTC(2026, 10, 27);
  for (let i = 0; i < 20_000; i += 1) {
    const partition = (i * 37) % 1024;
    const timeMs = base + Math.floor(i / 3) * 17 + (i % 2 === 0 ? 0 : 2 ** 40);
    const id = mintId(partition, timeMs);
    assert.ok(isUlid(id), id);
    assert.equal(partitionOfId(id), partition, id);
    assert.equal(decodeTime(id), timeMs, id);
  }
});

test('mintId: 100,000 ids in one millisecond of one partition → all distinct, random characters spread over the alphabet', () => {
  const seen = new Set<string>();
  const counts = new Map<string, number>();
  for (let i = 0; i < 100_000; i += 1) {
    const id = mintId(7, 1_795_750_936_640);
    seen.add(id);
    for (const c of id.slice(12)) counts.set(c, (counts.get(c) ?? 0) + 1);
  }
  assert.equal(seen.size, 100_000);
  assert.equal(counts.size, 32, 'every Crockford character appears');
  const expected = (100_000 * 14) / 32;
  for (const [c, n] of counts) assert.ok(Math.abs(n - expected) < expected * 0.05, `${c}: ${n} against ~${expected}`);
});

test('mintId: an earlier time after a later one → that earlier time (the cached time part is per millisecond, not a high-water mark)', () => {
  const late = mintId(1, 2_000_000_000_000);
  const early = mintId(1, 1_000_000_000_000);
  assert.equal(decodeTime(late), 2_000_000_000_000);
  assert.equal(decodeTime(early), 1_000_000_000_000);
});
