// Start and CLI times (bench/RESULTS.md "Operations"): `node dist/main.js` to its "listening" line on an
// empty data dir, after N WAL records with no snapshot (full replay) and after a clean stop (snapshots),
// and `kobo` CLI commands. Run: npx tsx bench/start.bench.ts [--records 1000000] [--shards 2]
// Builds its data dir through the shard's own execute() + ShardStore (the worker's code path, no HTTP).
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureLayout, partitionsOf, shardFile } from '../src/shard/layout.ts';
import { ShardStore } from '../src/store/shard-store.ts';
import { recoverShard } from '../src/shard/recovery.ts';
import { execute } from '../src/shard/dispatch.ts';
import { mintId } from '../src/ids.ts';
import type { Command } from '../src/shard/protocol.ts';
import { median } from './lib/report.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const arg = (name: string, fallback: number): number => {
  const at = process.argv.indexOf(`--${name}`);
  return at < 0 ? fallback : Number(process.argv[at + 1]);
};
const RECORDS = arg('records', 1_000_000);
const SHARDS = arg('shards', 2);
const CUSTOMERS_PER_PARTITION = 100;
const BATCH = 1_000;
const KEY = 'sk_test_startbench0000000000';

/** CPU ms (user + system, every thread) a process has used so far, from /proc (100 ticks a second). */
function cpuMs(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

const startCpu: number[] = [];

/** ms from spawn to the "listening" line; the server is stopped with SIGTERM (a snapshot) afterwards. */
async function timeStart(dataDir: string, stop: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): Promise<number> {
  const started = performance.now();
  const child = spawn(process.execPath, [path.join(ROOT, 'dist', 'main.js')], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', KOBO_DATA_DIR: dataDir, KOBO_SHARDS: String(SHARDS), KOBO_API_KEYS: KEY, KOBO_LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const ms = await new Promise<number>((resolve, reject) => {
    const onData = (c: Buffer): void => {
      output += c.toString();
      if (output.includes('listening on')) {
        startCpu.push(cpuMs(child.pid!));
        resolve(performance.now() - started);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => reject(new Error(`exited ${code}:\n${output}`)));
  });
  child.kill(stop);
  await exited;
  return ms;
}

/** Writes `records` WAL records (customers, then name updates: state stays small) across the shards. */
function buildDataDir(dataDir: string, records: number): void {
  ensureLayout(dataDir, SHARDS);
  const nowMs = Date.now();
  let written = 0;
  for (let shard = 0; shard < SHARDS; shard += 1) {
    const store = new ShardStore(path.join(dataDir, shardFile(shard)));
    const partitions = partitionsOf(shard, SHARDS);
    const { states } = recoverShard(store, { partitions });
    const customers = new Map<number, string[]>();
    const target = Math.round(records / SHARDS);
    let mine = 0;
    let seq = 0;
    while (mine < target) {
      const batch: Array<{ partition: number; body: string }> = [];
      for (let i = 0; i < BATCH && mine < target; i += 1, mine += 1, seq += 1) {
        const partition = partitions[seq % partitions.length]!;
        const ids = customers.get(partition) ?? [];
        const cmd: Command = ids.length < CUSTOMERS_PER_PARTITION
          ? { k: 'customer.create', owner: 'test:bench', nowMs, partition, body: { name: `Bench ${seq}`, email: `b${shard}-${seq}@example.com`, phone: `+2348${String(shard * 1e8 + seq).padStart(9, '0').slice(-9)}`, countryCode: 'NG', duplicate: null } }
          : { k: 'customer.update', owner: 'test:bench', nowMs, partition, id: ids[seq % ids.length]!, patch: { name: `Renamed ${seq}` } };
        const executed = execute({ state: states.get(partition)!, nowMs, mintId: () => mintId(partition, nowMs), railLatencyMs: 0 }, cmd);
        if (executed.events.length === 0) throw new Error(`no events for ${cmd.k}: ${JSON.stringify(executed.reply)}`);
        if (cmd.k === 'customer.create') customers.set(partition, [...ids, (JSON.parse(executed.reply.json!) as { data: { id: string } }).data.id]);
        batch.push({ partition, body: JSON.stringify(executed.events) });
      }
      store.appendBatch(batch);
      written += batch.length;
    }
    store.close();
  }
  process.stderr.write(`  … wrote ${written} WAL records\n`);
}

function timeCli(args: string[], dataDir: string, viaNpm: boolean): number {
  const started = performance.now();
  const result = viaNpm
    ? spawnSync('npm', ['run', '--silent', 'kobo', '--', ...args], { cwd: ROOT, env: { ...process.env, KOBO_DATA_DIR: dataDir }, encoding: 'utf8' })
    : spawnSync(process.execPath, [path.join(ROOT, 'dist', 'kobo.js'), ...args], { cwd: ROOT, env: { ...process.env, KOBO_DATA_DIR: dataDir }, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`kobo ${args.join(' ')}: ${result.stderr}`);
  return performance.now() - started;
}

spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'build.mjs'), '--if-stale'], { cwd: ROOT, stdio: 'inherit' });
const rows: string[] = [];
const empty: number[] = [];
for (let i = 0; i < 5; i += 1) empty.push(await timeStart(fs.mkdtempSync(path.join(os.tmpdir(), 'kobo-start-'))));
rows.push(`| start, empty data dir (${SHARDS} shards) | ${Math.round(median(empty))} ms | ${median(startCpu.splice(0))} ms | ${empty.map(Math.round).join(', ')} |`);

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kobo-start-wal-'));
const built = performance.now();
buildDataDir(dataDir, RECORDS);
process.stderr.write(`  … built in ${Math.round(performance.now() - built)} ms\n`);
const replay = await timeStart(dataDir, 'SIGTERM');
rows.push(`| start after ${RECORDS.toLocaleString('en')} WAL records, no snapshot (full replay) | ${Math.round(replay)} ms | ${median(startCpu.splice(0))} ms | 1 run |`);
const afterStop: number[] = [];
for (let i = 0; i < 3; i += 1) afterStop.push(await timeStart(dataDir));
rows.push(`| start after ${RECORDS.toLocaleString('en')} WAL records, after a clean stop (snapshots) | ${Math.round(median(afterStop))} ms | ${median(startCpu.splice(0))} ms | ${afterStop.map(Math.round).join(', ')} |`);

for (const [label, args] of [['kobo keys list', ['keys', 'list']], ['kobo verify', ['verify']]] as const) {
  const direct: number[] = [];
  for (let i = 0; i < (label === 'kobo verify' ? 1 : 5); i += 1) direct.push(timeCli([...args], dataDir, false));
  rows.push(`| \`node dist/kobo.js ${args.join(' ')}\`${label === 'kobo verify' ? ` (${RECORDS.toLocaleString('en')} records)` : ''} | ${Math.round(median(direct))} ms | | ${direct.map(Math.round).join(', ')} |`);
}
const npm: number[] = [];
for (let i = 0; i < 3; i += 1) npm.push(timeCli(['keys', 'list'], dataDir, true));
rows.push(`| \`npm run kobo -- keys list\` | ${Math.round(median(npm))} ms | | ${npm.map(Math.round).join(', ')} |`);

process.stdout.write(`load average at the end: ${os.loadavg().map((l) => l.toFixed(1)).join(' ')} on ${os.availableParallelism()} cores\n\n| what | median wall | server CPU to listening | runs (wall, ms) |\n|---|---|---|---|\n${rows.join('\n')}\n`);
fs.rmSync(dataDir, { recursive: true, force: true });
