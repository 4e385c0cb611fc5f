// Child processes of the HTTP bench: start one pinned to a core, wait for its "listening" line, stop it
// by its own PID (SIGTERM, then SIGKILL after a bound). Bench process only; never signals anything else.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';

export interface Pinned {
  child: ChildProcess;
  pid: number;
  port: number;
  output: () => string;
  stop: () => Promise<void>;
}

const START_MS_MAX = 60_000;
const STOP_MS_MAX = 30_000;
/** Server output kept for error messages. */
const OUTPUT_CHARS_MAX = 64 * 1024;

/**
 * Spawns `command args` under `taskset -c core` (taskset execs the command, so the PID is the server's)
 * and resolves once its output matches `ready`, whose first group is the port.
 */
export async function startPinned(options: {
  /** A core, or a list as taskset takes it (`0,1`). */
  core: number | string;
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
  ready: RegExp;
}): Promise<Pinned> {
  const child = spawn('taskset', ['-c', String(options.core), options.command, ...options.args], {
    cwd: options.cwd,
    env: options.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // The server's output, its last OUTPUT_CHARS_MAX characters only: a server logging every request
  // would otherwise grow this (and the work of reading it) with the run, on the client's core.
  let output = '';
  const keep = (chunk: Buffer): void => {
    output += chunk.toString();
    if (output.length > 2 * OUTPUT_CHARS_MAX) output = output.slice(-OUTPUT_CHARS_MAX);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
    process.kill(child.pid, 'SIGTERM');
    const timer = setTimeout(() => {
      if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) process.kill(child.pid, 'SIGKILL');
    }, STOP_MS_MAX);
    await exited;
    clearTimeout(timer);
  };
  try {
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${options.command} did not start in ${START_MS_MAX} ms:\n${output}`)), START_MS_MAX);
      const check = (): void => {
        const match = options.ready.exec(output);
        if (match === null) return;
        clearTimeout(timer);
        child.stdout!.off('data', check);
        resolve(Number(match[1]));
      };
      child.stdout!.on('data', check);
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`${options.command} exited with ${String(code)} before listening:\n${output}`));
      });
    });
    return { child, pid: child.pid!, port, output: () => output, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Pins this process (all its threads) to one core, so its own work never lands on the server's core. */
export async function pinSelf(core: number): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const child = spawn('taskset', ['-a', '-p', '-c', String(core), String(process.pid)], { stdio: 'ignore' });
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`taskset -p exited with ${String(code)}`))));
  });
}

/** Jiffies per core from /proc/stat: [busy, steal, total]; Linux only (the bench machine). */
function cpuTimes(): Map<string, { busy: number; steal: number; total: number }> {
  const times = new Map<string, { busy: number; steal: number; total: number }>();
  for (const line of fs.readFileSync('/proc/stat', 'utf8').split('\n')) {
    const match = /^(cpu\d+)\s+(.*)$/.exec(line);
    if (match === null) continue;
    const [user, nice, system, idle, iowait, irq, softirq, steal] = match[2]!.split(/\s+/).map(Number) as number[];
    const total = user! + nice! + system! + idle! + iowait! + irq! + softirq! + steal!;
    times.set(match[1]!, { busy: total - idle! - iowait! - steal!, steal: steal!, total });
  }
  return times;
}

export interface CoreUse {
  core: string;
  busyPct: number;
  stealPct: number;
}

/** Starts counting; the returned function gives each core's busy and steal share since then. */
export function coreUse(): () => CoreUse[] {
  const before = cpuTimes();
  return () => {
    const after = cpuTimes();
    return [...after.entries()].map(([core, a]) => {
      const b = before.get(core) ?? { busy: 0, steal: 0, total: 0 };
      const total = Math.max(1, a.total - b.total);
      return { core, busyPct: (100 * (a.busy - b.busy)) / total, stealPct: (100 * (a.steal - b.steal)) / total };
    });
  };
}

const CLOCK_TICKS_PER_S = 100; // USER_HZ: /proc/stat and /proc/<pid>/stat count in these on Linux

/** A /proc stat line's fields after the command name (fields[1] is the parent pid); null when it is gone. */
function statFields(statFile: string): string[] | null {
  try {
    const stat = fs.readFileSync(statFile, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

/** User + system CPU seconds of a stat line's fields. */
const cpuSecondsOf = (fields: readonly string[]): number => (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_S;

/** Bytes the process caused to be written to storage so far (/proc/PID/io write_bytes: page-cache pages it dirtied). */
export function processWriteBytes(pid: number): number {
  const line = fs.readFileSync(`/proc/${pid}/io`, 'utf8').split('\n').find((l) => l.startsWith('write_bytes:'));
  if (line === undefined) throw new Error('no write_bytes in /proc/PID/io');
  return Number(line.split(':')[1]);
}

/** CPU seconds (user + system, all threads) a live process has used; 0 when it is gone. */
export function processCpuSeconds(pid: number, statFile = `/proc/${pid}/stat`): number {
  const fields = statFields(statFile);
  return fields === null ? 0 : cpuSecondsOf(fields);
}

/**
 * CPU seconds per thread of a process, summed by thread name (main thread, the shard workers, libuv's
 * pool, V8's helpers): which thread a server's CPU goes to, read from /proc/PID/task.
 */
export function threadCpuSeconds(pid: number): Map<string, number> {
  const byName = new Map<string, number>();
  let tids: string[] = [];
  try {
    tids = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return byName;
  }
  for (const tid of tids) {
    try {
      const name = fs.readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      const label = tid === String(pid) ? `${name} (main)` : name;
      byName.set(label, (byName.get(label) ?? 0) + processCpuSeconds(Number(tid), `/proc/${pid}/task/${tid}/stat`));
    } catch {
      // The thread ended between listing and reading.
    }
  }
  return byName;
}

/**
 * CPU seconds used by the kernel's own threads (children of kthreadd, pid 2): writeback, the journal
 * (jbd2), workqueues. A server that fsyncs makes them busy itself, so a bench reports them apart from
 * other processes instead of taking them for a neighbour's load.
 */
export function kernelThreadCpuSeconds(): number {
  let seconds = 0;
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = statFields(`/proc/${entry}/stat`); // null: it ended between listing and reading
    if (fields !== null && fields[1] === '2') seconds += cpuSecondsOf(fields); // kernel threads all descend from kthreadd
  }
  return seconds;
}

/** CPU seconds every core (or only `core`) has spent busy since boot (steal and iowait excluded). */
export function machineBusySeconds(core?: number): number {
  let busy = 0;
  for (const [name, use] of cpuTimes()) if (core === undefined || name === `cpu${core}`) busy += use.busy;
  return busy / CLOCK_TICKS_PER_S;
}

/**
 * Waits until the machine (or only `core`) is quiet, since other work can share it: busy less than
 * `busyCoresMax` over one second. Gives up after `waitMsMax` and reports what it saw.
 */
export async function waitForQuiet(options: { busyCoresMax: number; waitMsMax: number; core?: number }): Promise<{ quiet: boolean; busyCores: number }> {
  const started = Date.now();
  for (;;) {
    const before = machineBusySeconds(options.core);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const busyCores = machineBusySeconds(options.core) - before;
    if (busyCores < options.busyCoresMax) return { quiet: true, busyCores };
    if (Date.now() - started > options.waitMsMax) return { quiet: false, busyCores };
  }
}

/**
 * node arguments for the kobo server as `npm start` runs it: the dist/ bundle, rebuilt first when a
 * source is newer. `--from-source` on the bench's command line runs src/main.ts through tsx instead.
 */
export function serverEntryArgs(root: string): string[] {
  if (process.argv.includes('--from-source')) return ['--import', 'tsx', `${root}/src/main.ts`];
  const built = spawnSync(process.execPath, [`${root}/scripts/build.mjs`, '--if-stale'], { cwd: root, encoding: 'utf8' });
  if (built.status !== 0) throw new Error(`build failed:\n${built.stderr}`);
  // The node flags of `npm start` (package.json), so the bench measures what a user runs.
  return ['--max-semi-space-size=16', `${root}/dist/main.js`];
}
