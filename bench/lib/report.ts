// Formatting and recording of bench results: aligned text tables on stdout, JSON under bench/.out/.
// Runs in bench processes. bench/.out/ is git-ignored; RESULTS.md is written by hand from these files.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const BENCH_DIR = path.resolve(import.meta.dirname, '..');
export const ROOT = path.resolve(BENCH_DIR, '..');
export const OUT_DIR = path.join(BENCH_DIR, '.out');

export function machine(): { nproc: number; cpu: string; node: string; platform: string; memoryGiB: number } {
  return {
    nproc: os.availableParallelism(),
    cpu: os.cpus()[0]?.model ?? 'unknown',
    node: process.version,
    platform: `${process.platform}/${process.arch}`,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
  };
}

export function writeResult(name: string, data: unknown): string {
  fs.mkdirSync(OUT_DIR, { recursive: true });
  const file = path.join(OUT_DIR, `${name}.json`);
  fs.writeFileSync(file, JSON.stringify({ at: new Date().toISOString(), machine: machine(), ...(data as object) }, null, 2));
  return file;
}

/** A plain text table: the first row is the header; numbers are right-aligned. */
export function table(rows: ReadonlyArray<ReadonlyArray<string>>): string {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  const line = (row: ReadonlyArray<string>): string =>
    row.map((cell, i) => (i === 0 || !/^[-+0-9.,×x%]+$/.test(cell) ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ');
  const [head, ...body] = rows;
  if (head === undefined) return '';
  return [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}

export function fmt(value: number, digits = 2): string {
  if (!Number.isFinite(value)) return 'n/a';
  if (Math.abs(value) >= 1000) return Math.round(value).toLocaleString('en-US');
  return value.toFixed(digits);
}

/** The middle value (the mean of the two middle ones for an even count). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** The value after `--name` on the command line, or `fallback`. */
export function flag(name: string, fallback: string): string {
  const at = process.argv.indexOf(`--${name}`);
  return at < 0 ? fallback : (process.argv[at + 1] ?? fallback);
}

/** heapUsed after full collections (several passes: weak references and finalizers free more later). */
export function heapAfterGc(): number {
  const gc = globalThis.gc;
  if (gc === undefined) throw new Error(`run with node --expose-gc --import tsx ${process.argv[1] ?? 'this bench'}`);
  for (let i = 0; i < 4; i += 1) gc();
  // Typed arrays keep their bytes outside the V8 heap (the idempotency index does): count them too.
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.arrayBuffers;
}
