// Tidy test: layers point one way. Reads the import statements of every source file (src/, machines/)
// and fails on an import that goes against the layering written in docs/decisions.md ("Money and
// layers"). Type-only imports count: they shape the design too. Pure; reads files only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

interface Rule {
  name: string;
  /** Files under these folders (relative to the repository, with a trailing slash)… */
  from: readonly string[];
  /** …import nothing under these. */
  forbidden: readonly string[];
  /** Allowed although under a forbidden folder (a folder's own files, for a folder that may use itself). */
  allowed?: readonly string[];
}

const RULES: readonly Rule[] = [
  { name: 'the front end (http) and the schemas import nothing from the shard', from: ['src/http/', 'src/schemas/'], forbidden: ['src/shard/'] },
  { name: 'reference data (catalogue) imports no rail', from: ['src/catalogue/'], forbidden: ['src/rails/'] },
  { name: 'machines and the ledger import nothing from http, shard, store or rails', from: ['machines/', 'src/ledger/'], forbidden: ['src/http/', 'src/shard/', 'src/store/', 'src/rails/'] },
  { name: 'shard handlers reach each other only through the lifecycle (src/shard/lifecycle/)', from: ['src/shard/handlers/'], forbidden: ['src/shard/handlers/'] },
  { name: 'money is a leaf: src/money imports only itself', from: ['src/money/'], forbidden: ['src/', 'machines/'], allowed: ['src/money/'] },
];

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return /\.(ts|mjs)$/.test(entry.name) ? [full] : [];
  });
}

/**
 * The relative specifiers a source imports: `import … from`, `export … from`, `import type`, a bare
 * `import '…'`, and `import('…')`. Comments are not stripped: a commented-out import counts (rare, and
 * it would be on its way back).
 */
export function importSpecifiers(text: string): string[] {
  const patterns = [
    /^\s*(?:import|export)\s[^;]*?\sfrom\s+['"]([^'"]+)['"]/gms,
    /^\s*import\s+['"]([^'"]+)['"]/gm,
    /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g,
  ];
  return patterns.flatMap((pattern) => [...text.matchAll(pattern)].map((m) => m[1]!)).filter((s) => s.startsWith('.'));
}

/** Every source file with the repository-relative paths of what it imports. */
function importGraph(): Map<string, string[]> {
  const files = [...sourceFiles(path.join(ROOT, 'src')), ...sourceFiles(path.join(ROOT, 'machines'))];
  return new Map(files.map((file) => [
    path.relative(ROOT, file).split(path.sep).join('/'),
    importSpecifiers(fs.readFileSync(file, 'utf8')).map((s) => path.relative(ROOT, path.resolve(path.dirname(file), s)).split(path.sep).join('/')),
  ]));
}

const graph = importGraph();

test('importSpecifiers: multi-line, type-only, re-export, bare and dynamic imports → all found; packages → skipped', () => {
  const text = [
    "import fs from 'node:fs';",
    'import {',
    '  a,',
    '  type B,',
    "} from '../shard/state.ts';",
    "import type { C } from './c.ts';",
    "export { d } from '../d.ts';",
    "export * from './e.ts';",
    "import './side-effect.ts';",
    "const f = await import('../f.ts');",
  ].join('\n');
  assert.deepEqual(importSpecifiers(text).sort(), ['../d.ts', '../f.ts', '../shard/state.ts', './c.ts', './e.ts', './side-effect.ts']);
});

test('layers: every rule looks at files that exist (the test cannot pass by reading nothing)', () => {
  for (const rule of RULES) {
    for (const folder of rule.from) assert.ok([...graph.keys()].some((f) => f.startsWith(folder)), `${rule.name}: no source under ${folder}`);
  }
  assert.ok([...graph.values()].flat().length > 500, 'the import graph is suspiciously small');
});

for (const rule of RULES) {
  test(`layers: ${rule.name}`, () => {
    const broken = [...graph].flatMap(([file, imports]) => {
      if (!rule.from.some((folder) => file.startsWith(folder))) return [];
      return imports
        .filter((target) => rule.forbidden.some((folder) => target.startsWith(folder)))
        .filter((target) => !(rule.allowed ?? []).some((folder) => target.startsWith(folder)))
        .map((target) => `${file} → ${target}`);
    });
    assert.deepEqual(broken, [], `imports against the layering:\n  ${broken.join('\n  ')}`);
  });
}
