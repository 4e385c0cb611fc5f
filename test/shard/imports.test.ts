// The shard's import graph, read from the source: imports flow one way (handlers → lifecycle → machines,
// ledger, rails), with no cycle among shard modules, the lifecycle never importing a handler, and no
// handler importing a sandbox simulator (rails.ts chooses the rail).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src');
const SHARD = path.join(SRC, 'shard');

function tsFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    return entry.isDirectory() ? tsFiles(full) : entry.name.endsWith('.ts') ? [full] : [];
  });
}

/** Relative imports and re-exports of a file (type-only ones included: they shape the design too). */
function importsOf(file: string): string[] {
  const text = fs.readFileSync(file, 'utf8');
  return [...text.matchAll(/^(?:import|export)\s[^;]*?\sfrom\s+'(\.{1,2}\/[^']+)'/gms)].map((m) => path.resolve(path.dirname(file), m[1]!));
}

/** A cycle in the graph restricted to `nodes`, as a list of files, or null. */
export function findCycle(graph: ReadonlyMap<string, readonly string[]>): string[] | null {
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (node: string): string[] | null => {
    state.set(node, 'open');
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue;
      if (state.get(next) === 'open') return [...stack.slice(stack.indexOf(next)), next];
      if (state.get(next) === undefined) {
        const found = visit(next);
        if (found !== null) return found;
      }
    }
    stack.pop();
    state.set(node, 'done');
    return null;
  };
  for (const node of graph.keys()) {
    if (state.get(node) !== undefined) continue;
    const found = visit(node);
    if (found !== null) return found;
  }
  return null;
}

const shardGraph = new Map(tsFiles(SHARD).map((file) => [file, importsOf(file)]));
const rel = (file: string): string => path.relative(SRC, file);

test('findCycle: a → b → a is found; a → b → c is not', () => {
  assert.deepEqual(findCycle(new Map([['a', ['b']], ['b', ['a']]])), ['a', 'b', 'a']);
  assert.equal(findCycle(new Map([['a', ['b']], ['b', ['c']], ['c', []]])), null);
});

test('src/shard: no import cycle among its modules (handlers, lifecycle, store glue)', () => {
  const cycle = findCycle(shardGraph);
  assert.equal(cycle, null, `import cycle: ${(cycle ?? []).map(rel).join(' → ')}`);
});

test('src/shard/lifecycle never imports a handler; handlers never import a sandbox simulator', () => {
  for (const [file, imports] of shardGraph) {
    const r = rel(file);
    if (r.startsWith(`shard${path.sep}lifecycle`)) {
      assert.deepEqual(imports.filter((i) => i.includes(`${path.sep}handlers${path.sep}`)).map(rel), [], `${r} imports a handler`);
    }
    if (r.startsWith(`shard${path.sep}handlers`) || r.startsWith(`shard${path.sep}lifecycle`)) {
      assert.deepEqual(imports.filter((i) => path.basename(i).startsWith('sandbox-')).map(rel), [], `${r} imports a sandbox simulator`);
    }
  }
});
