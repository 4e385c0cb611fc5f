// In Node 20's V8 an object literal with anything after a spread (`{ ...a, b }`, `{ ...a, ...b }`) takes
// a slow runtime path: ~0.4 µs each, ~2.4 µs for the command the front built per request, a quarter of
// a durable POST's CPU with all of them (bench/RESULTS.md). A plain copy (`{ ...a }`) stays fast, so
// does `Object.assign({}, a, { b })` with the same key order. A tidy test over the request path's
// source keeps the slow form out of it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src');
/** The code every request runs through: the front, the shard, the store, the ledger, money. */
const REQUEST_PATH = ['http', 'shard', 'store', 'ledger', 'money', 'journal', 'api/deps.ts'];

function sources(entry: string): string[] {
  const full = path.join(SRC, entry);
  if (fs.statSync(full).isFile()) return [full];
  return fs.readdirSync(full, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts')).map((f) => path.join(full, f));
}

/** A spread inside an object literal followed by another member: `{ ...a, b }`, `{ ...a, ...b }`. */
const SPREAD_THEN_MEMBER = /\{\s*\.\.\.[\w.$!?()[\]]+\s*,/;

test('request path: no object literal with members after a spread → Object.assign({}, a, { b }) instead', () => {
  const found: string[] = [];
  for (const entry of REQUEST_PATH) {
    for (const file of sources(entry)) {
      fs.readFileSync(file, 'utf8').split('\n').forEach((line, i) => {
        if (line.trim().startsWith('//') || line.trim().startsWith('*')) return;
        if (SPREAD_THEN_MEMBER.test(line)) found.push(`${path.relative(SRC, file)}:${i + 1}: ${line.trim()}`);
      });
    }
  }
  assert.deepEqual(found, []);
});

test('the tidy pattern: catches the slow forms, passes the fast ones', () => {
  for (const slow of ['{ ...base, partition }', 'x = { ...a, ...b }', '{ ...ctx, nowMs: 1 }', '({ ...row, lsn })']) assert.ok(SPREAD_THEN_MEMBER.test(slow), slow);
  for (const fast of ['{ ...event.payment }', 'Object.assign({}, a, { b })', '[...list, item]', '{ k: 1, ...a }']) assert.ok(!SPREAD_THEN_MEMBER.test(fast), fast);
});
