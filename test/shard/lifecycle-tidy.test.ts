// The lifecycle module decides status changes by consulting the machines' compiled tables, never by
// comparing a record's status with a literal (a tidy test over the source, as the style asks).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const LIFECYCLE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src/shard/lifecycle');

test('src/shard/lifecycle: no record status compared with a literal → the tables decide', () => {
  const found: string[] = [];
  for (const name of fs.readdirSync(LIFECYCLE).filter((f) => f.endsWith('.ts'))) {
    fs.readFileSync(path.join(LIFECYCLE, name), 'utf8').split('\n').forEach((line, i) => {
      if (/\b(txn|transaction|payment|transfer|order)\.status\s*[!=]==?\s*'/.test(line)) found.push(`${name}:${i + 1}: ${line.trim()}`);
    });
  }
  assert.deepEqual(found, []);
});
