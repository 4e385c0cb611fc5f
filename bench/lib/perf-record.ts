// Linux perf over a running server for one measured run, and where its CPU went by layer: the kernel
// (syscalls, loopback TCP, the fsync path), sqlite, V8's garbage collector, JIT-compiled JavaScript, uWS
// and the rest of node. A V8 CPU profile (`--profile`) sees the JavaScript thread only and shows a
// syscall as its caller's own time; this counts every thread of the process, kernel time included.
// Bench process only; needs `perf` (Debian: apt-get install linux-perf) and a server started with
// --perf-basic-prof, so JIT frames have names. Every perf run is bounded by the run's duration.
// Diagnosis only: sampling costs the server a few per cent.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** Sampling rate (Hz, per CPU): ~16,000 samples in an 8 s run on one core. */
const FREQUENCY_HZ = 1999;
/** Symbols of V8's collectors (the scavenger's and marker's helper threads included). */
const GC_SYMBOL = /Scaveng|MarkCompact|ConcurrentMarking|MinorGC|Sweep|Heap::|Evacuat|Marking|GCTracer|ArrayBufferSweeper|MemoryAllocator/;

/** `node`: node's and V8's own native code but the collectors (JSON, string flattening, the API bridge). */
export type Layer = 'kernel' | 'sqlite' | 'gc' | 'javascript' | 'uws' | 'libc' | 'node';

export interface PerfSummary {
  file: string;
  samples: number;
  /** Share of the process's samples by layer, 0..1. */
  layers: Record<Layer, number>;
  /** The heaviest symbols by their own samples: [share 0..1, layer, symbol]. */
  top: Array<[number, Layer, string]>;
}

export function perfAvailable(): boolean {
  return spawnSync('perf', ['--version'], { encoding: 'utf8' }).status === 0;
}

/** Starts sampling `pid` for `seconds`; `done()` waits for perf to write its file. */
export function recordPerf(pid: number, seconds: number, file: string): { done: () => Promise<void> } {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const child: ChildProcess = spawn('perf', ['record', '-F', String(FREQUENCY_HZ), '-g', '-p', String(pid), '-o', file, '--', 'sleep', String(seconds)], { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { done: () => exited };
}

function layerOf(dso: string, symbol: string): Layer {
  if (dso.includes('kernel')) return 'kernel';
  if (dso.includes('better_sqlite3')) return 'sqlite';
  if (dso.startsWith('[JIT]') || symbol.startsWith('JS:') || symbol.startsWith('Builtins_')) return GC_SYMBOL.test(symbol) ? 'gc' : 'javascript';
  if (dso.includes('uws_')) return 'uws';
  if (dso.startsWith('libc')) return 'libc';
  return GC_SYMBOL.test(symbol) ? 'gc' : 'node';
}

/** Reads a perf.data file back: each sample counted once, at its own symbol. */
export function summarisePerf(file: string, topCount = 25): PerfSummary {
  const report = spawnSync('perf', ['report', '-i', file, '--no-children', '--sort', 'dso,sym', '-g', 'none', '--stdio', '--percent-limit', '0'], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  if (report.status !== 0) throw new Error(`perf report failed: ${report.stderr}`);
  return { file, ...parsePerfReport(report.stdout, topCount) };
}

/** `perf report --no-children --sort dso,sym -g none --stdio` as layers and the heaviest symbols. */
export function parsePerfReport(text: string, topCount = 25): Omit<PerfSummary, 'file'> {
  const layers: Record<Layer, number> = { kernel: 0, sqlite: 0, gc: 0, javascript: 0, uws: 0, libc: 0, node: 0 };
  const top: Array<[number, Layer, string]> = [];
  let samples = 0;
  for (const line of text.split('\n')) {
    // "# Samples: 17K of event 'cpu-clock:ppp'"
    const counted = /^# Samples: ([\d.]+)([KM]?) /.exec(line);
    if (counted !== null) samples = Math.round(Number(counted[1]) * (counted[2] === 'K' ? 1e3 : counted[2] === 'M' ? 1e6 : 1));
    // "    12.34%  node   [.] symbol" (dso, then the kind of symbol, then its name)
    const row = /^\s+([\d.]+)%\s+(\S.*?)\s+\[([.kgu])\]\s+(.*)$/.exec(line);
    if (row === null) continue;
    const share = Number(row[1]) / 100;
    const layer = layerOf(row[2]!, row[4]!.trim());
    layers[layer] += share;
    if (top.length < topCount) top.push([share, layer, row[4]!.trim()]);
  }
  return { samples, layers, top };
}

/** One line: the layers, heaviest first, as per cents of the process's CPU. */
export function layerLine(summary: PerfSummary): string {
  return (Object.entries(summary.layers) as Array<[Layer, number]>)
    .sort((a, b) => b[1] - a[1])
    .map(([layer, share]) => `${layer} ${(share * 100).toFixed(1)}%`)
    .join(', ');
}
