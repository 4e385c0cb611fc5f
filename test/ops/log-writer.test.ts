// LogWriter: every line leaves whole and in order, whatever its characters and size (it sizes its buffer
// by an upper bound of the UTF-8 length, not the exact one). Writes to a real temporary file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LogWriter } from '../../src/ops/log-writer.ts';

function written(lines: readonly string[]): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kobo-logwriter-'));
  const file = path.join(dir, 'out.log');
  const fd = fs.openSync(file, 'w');
  try {
    const writer = new LogWriter(fd, 60_000);
    for (const line of lines) writer.write(line);
    writer.close();
    return fs.readFileSync(file, 'utf8');
  } finally {
    fs.closeSync(fd);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

test('LogWriter: ASCII, 2-, 3- and 4-byte characters and lines larger than a chunk → the same text, in order', () => {
  const lines: string[] = [];
  for (let i = 0; i < 3_000; i += 1) {
    const kind = i % 5;
    if (kind === 0) lines.push(`{"n":${i},"msg":"plain"}\n`);
    else if (kind === 1) lines.push(`{"n":${i},"msg":"naïra ₦ ${'é'.repeat(i % 50)}"}\n`);
    else if (kind === 2) lines.push(`{"n":${i},"msg":"${'😀'.repeat(i % 40)}"}\n`);
    else if (kind === 3) lines.push(`{"n":${i},"msg":"${'日本'.repeat(i % 70)}"}\n`);
    else lines.push(`{"n":${i},"big":"${'x'.repeat(i === 4 ? 200_000 : 10)}"}\n`);
  }
  const out = written(lines);
  assert.equal(out, lines.join(''));
  assert.equal(Buffer.byteLength(out), lines.reduce((sum, line) => sum + Buffer.byteLength(line), 0));
});
