// A/B rounds of kobo's HTTP scenarios: this tree against another commit, alternating, so that a change
// worth a few percent can be told from this host's drift (the same build ranges ±20% run to run here).
// Run: npx tsx bench/ab.ts --base <git ref> [--rounds 4] [--duration 6] [--scenarios bank] [--connections 64]
// The base is checked out in a temporary git worktree with this tree's bench/ copied over it (one
// harness for both sides), built, and removed in a finally. Each round runs bench/http.bench.ts
// --kobo-only yes on both sides, in alternating order; the report is the per-side median.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { flag, fmt, median, ROOT, table } from './lib/report.ts';

const BASE = flag('base', '');
const ROUNDS = Number(flag('rounds', '4'));
const DURATION_S = Number(flag('duration', '6'));
const SCENARIOS = flag('scenarios', 'bank');
const CONNECTIONS = flag('connections', '64');
const ROUND_TIMEOUT_MS = 300_000;
if (BASE === '' || !(ROUNDS >= 1 && ROUNDS <= 20) || !(DURATION_S >= 1 && DURATION_S <= 60)) {
  throw new Error('usage: ab.ts --base <git ref> [--rounds 1..20] [--duration 1..60] [--scenarios bank,get,...]');
}

interface Sample {
  scenario: string;
  requestsPerSec: number;
  cpuUsPerRequest: number;
  /** The run's p99 latency (wrk), ms. */
  p99Ms: number;
}

const LINE = /^(.+): ([\d,]+) req\/s, ([\d,.]+) µs CPU a request$/;
/** The detailed line of the same scenario, e.g. `kobo GET read path: 57,613 req/s, p50 4.1 ms, p99 6.7 ms, …`. */
const DETAIL = /^kobo (.+): [\d,]+ req\/s, p50 [\d.]+ ms, p99 ([\d.]+) ms/;

/** One --kobo-only run of the HTTP bench in `root`: a sample per scenario. */
function runOnce(root: string): Sample[] {
  const run = spawnSync(process.execPath, ['--import', 'tsx', path.join(root, 'bench/http.bench.ts'), '--kobo-only', 'yes', '--scenarios', SCENARIOS, '--duration', String(DURATION_S), '--warmup', '2', '--connections', CONNECTIONS], {
    cwd: root,
    encoding: 'utf8',
    timeout: ROUND_TIMEOUT_MS,
  });
  if (run.status !== 0) throw new Error(`http bench failed in ${root}:\n${run.stdout}\n${run.stderr}`);
  const samples: Sample[] = [];
  const p99 = new Map<string, number>();
  for (const line of run.stdout.split('\n')) {
    // A repeated run (the bench repeats one disturbed by other processes) overwrites the earlier p99.
    const detail = DETAIL.exec(line.trim());
    if (detail !== null) p99.set(detail[1]!, Number(detail[2]!));
    const m = LINE.exec(line.trim());
    if (m !== null) samples.push({ scenario: m[1]!, requestsPerSec: Number(m[2]!.replaceAll(',', '')), cpuUsPerRequest: Number(m[3]!.replaceAll(',', '')), p99Ms: p99.get(m[1]!) ?? Number.NaN });
  }
  if (samples.length === 0) throw new Error(`no result lines from the http bench in ${root}:\n${run.stdout}`);
  return samples;
}

function main(): void {
  const commit = execFileSync('git', ['rev-parse', '--short', BASE], { cwd: ROOT, encoding: 'utf8' }).trim();
  const worktree = fs.mkdtempSync(path.join(os.tmpdir(), 'kobo-ab-'));
  execFileSync('git', ['worktree', 'add', '--detach', worktree, commit], { cwd: ROOT, stdio: 'ignore' });
  try {
    fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(worktree, 'node_modules'));
    fs.rmSync(path.join(worktree, 'bench'), { recursive: true, force: true });
    fs.cpSync(path.join(ROOT, 'bench'), path.join(worktree, 'bench'), { recursive: true, filter: (src) => !src.includes(`${path.sep}.out`) });
    for (const root of [worktree, ROOT]) execFileSync(process.execPath, [path.join(root, 'scripts/build.mjs')], { cwd: root, stdio: 'ignore' });
    const sides = { base: [] as Sample[], this: [] as Sample[] };
    for (let round = 1; round <= ROUNDS; round += 1) {
      // Alternate which side goes first, so a drift within a round favours neither.
      const order: Array<'base' | 'this'> = round % 2 === 1 ? ['base', 'this'] : ['this', 'base'];
      for (const side of order) {
        const samples = runOnce(side === 'base' ? worktree : ROOT);
        sides[side].push(...samples);
        for (const s of samples) process.stdout.write(`round ${round} ${side.padEnd(4)} ${s.scenario}: ${fmt(s.requestsPerSec, 0)} req/s, ${fmt(s.cpuUsPerRequest, 0)} µs, p99 ${fmt(s.p99Ms, 1)} ms\n`);
      }
    }
    const rows = [['scenario', `base ${commit} µs (median)`, 'this tree µs (median)', 'this/base CPU', 'base req/s', 'this req/s', 'base p99 ms', 'this p99 ms']];
    for (const scenario of new Set(sides.this.map((s) => s.scenario))) {
      const of = (side: Sample[]) => side.filter((s) => s.scenario === scenario);
      const baseUs = median(of(sides.base).map((s) => s.cpuUsPerRequest));
      const thisUs = median(of(sides.this).map((s) => s.cpuUsPerRequest));
      rows.push([scenario, fmt(baseUs, 1), fmt(thisUs, 1), fmt(thisUs / baseUs, 3), fmt(median(of(sides.base).map((s) => s.requestsPerSec)), 0), fmt(median(of(sides.this).map((s) => s.requestsPerSec)), 0), fmt(median(of(sides.base).map((s) => s.p99Ms)), 1), fmt(median(of(sides.this).map((s) => s.p99Ms)), 1)]);
    }
    process.stdout.write(`\n${ROUNDS} alternating rounds of ${DURATION_S} s, scenarios ${SCENARIOS}\n${table(rows)}\n`);
  } finally {
    execFileSync('git', ['worktree', 'remove', '--force', worktree], { cwd: ROOT, stdio: 'ignore' });
  }
}

main();
