// What a durable payment costs the disk: the server as `npm start` runs it (dist/, default log level and
// shard count), N bank-transfer POSTs with 64 in flight, and the server process's write_bytes
// (/proc/PID/io) over them; then the stop (which writes the deferred derived rows and the images: its
// write_bytes too, as `writtenBytesPerPaymentWithStop`), and the data dir's size per payment.
// Run: npx tsx bench/disk.bench.ts [--payments N] [--in-flight N] [--trace-writes] (defaults 10,000 and 64). Targets from
// issue #22: ≤ 1,500 bytes written per payment, ≤ 1 KB on disk per payment after a snapshot. `--trace-writes` attaches
// strace (started with the server, --seccomp-bpf) and splits the bytes by file and by b-tree (bench/wal-pages.ts). Talks to 127.0.0.1 only; stops itself.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { startPinned, serverEntryArgs } from './lib/proc.ts';
import { writeResult } from './lib/report.ts';
import { bytesByBtree, perPayment } from './wal-pages.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
/** `--in-flight N`: requests kept in flight (64 by default; the issue measures throughput at 256). */
const IN_FLIGHT = process.argv.includes('--in-flight') ? Number(process.argv[process.argv.indexOf('--in-flight') + 1]) : 64;
if (!Number.isInteger(IN_FLIGHT) || IN_FLIGHT < 1 || IN_FLIGHT > 1_024) throw new Error('--in-flight must be an integer in 1..1024');
const READY = /listening on http:\/\/127\.0\.0\.1:(\d+)/;
const TARGET_WRITTEN_BYTES_MAX = 1_500;
const TARGET_DISK_BYTES_MAX = 1_024;

function paymentsArg(): number {
  const at = process.argv.indexOf('--payments');
  const value = at < 0 ? 10_000 : Number(process.argv[at + 1]);
  if (!Number.isInteger(value) || value < 100 || value > 1_000_000) throw new Error('--payments must be an integer in 100..1,000,000');
  return value;
}

/** How often write_bytes is read while the server stops. */
const STOP_POLL_MS = 5;

function writeBytes(pid: number): number {
  const line = fs.readFileSync(`/proc/${pid}/io`, 'utf8').split('\n').find((l) => l.startsWith('write_bytes:'));
  if (line === undefined) throw new Error('no write_bytes in /proc/PID/io');
  return Number(line.split(':')[1]);
}

/** The process's CPU time so far (user + system), in µs, from /proc/PID/stat. */
function cpuUs(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14 and 15 of stat(5) (utime, stime), counted after the command name's closing parenthesis.
  return ((Number(fields[11]) + Number(fields[12])) * 1_000_000) / CLOCK_TICKS_PER_S;
}

/** sysconf(_SC_CLK_TCK) on Linux. */
const CLOCK_TICKS_PER_S = 100;

function dirBytes(dir: string): number {
  let sum = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    sum += entry.isDirectory() ? dirBytes(full) : fs.statSync(full).size;
  }
  return sum;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: IN_FLIGHT });

function request(port: number, secret: string, method: string, urlPath: string, body?: unknown, idempotencyKey?: string): Promise<{ status: number; json: { data?: Record<string, unknown> } }> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const headers: Record<string, string> = { authorization: `Bearer ${secret}` };
  if (payload !== undefined) headers['content-type'] = 'application/json';
  if (idempotencyKey !== undefined) headers['idempotency-key'] = idempotencyKey;
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path: urlPath, headers, agent, timeout: 30_000 }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, json: text === '' ? {} : (JSON.parse(text) as { data?: Record<string, unknown> }) }));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end(payload);
  });
}

const TRACE_WRITES = process.argv.includes('--trace-writes');
/**
 * The strace that runs the server when `--trace-writes` is given: started with it (not attached later), so
 * `--seccomp-bpf` stops the server only at the traced calls (SQLite's pwrite64 and the syncs) and its
 * batches stay close to an untraced run's. -ttt stamps each call (the run window is cut by time); -x -s 8
 * keeps the first eight bytes of each write, in hex when one is not printable: a frame header's page number
 * (below 2^24 it starts with a zero byte) and its commit mark.
 */
function straceArgs(file: string): string[] {
  return ['-f', '--seccomp-bpf', '-qq', '-ttt', '-y', '-x', '-s', '8', '-e', 'trace=pwrite64,fdatasync,fsync', '-o', file];
}

/** The server's own PID under strace (strace's one child), which /proc/PID/io and stat are read from. */
function tracedChild(stracePid: number): number {
  const children = fs.readFileSync(`/proc/${stracePid}/task/${stracePid}/children`, 'utf8').trim().split(/\s+/);
  if (children.length !== 1 || children[0] === '') throw new Error(`strace ${stracePid} has children [${children.join(', ')}]`);
  return Number(children[0]);
}

/** Bytes written and calls per file (each -wal and db by name, the rest) and syncs, from an strace output. */
function traceSummary(file: string, payments: number): Record<string, { calls: number; bytesPerPayment: number }> {
  const out: Record<string, { calls: number; bytes: number }> = {};
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    const m = /^\d+\s+(?:\d+\.\d+\s+)?(pwrite64|write|writev|fdatasync|fsync)\(\d+<([^>]*)>.*=\s+(\d+)$/.exec(line);
    if (m === null) continue;
    const target = m[2]!.endsWith('-wal') || m[2]!.endsWith('.db') ? path.basename(m[2]!) : m[2]!.startsWith('socket:') || m[2]!.startsWith('pipe:') ? 'sockets' : 'other';
    const key = m[1] === 'fdatasync' || m[1] === 'fsync' ? `${m[1]} ${target}` : target;
    const entry = (out[key] ??= { calls: 0, bytes: 0 });
    entry.calls += 1;
    if (!key.startsWith('f')) entry.bytes += Number(m[3]);
  }
  return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, { calls: v.calls, bytesPerPayment: Math.round(v.bytes / payments) }]));
}

async function main(): Promise<void> {
  const payments = paymentsArg();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kobo-disk-'));
  const secret = `sk_test_${randomBytes(12).toString('hex')}`;
  const traceFile = `${dataDir}.strace`;
  const server = await startPinned({
    core: 0,
    command: TRACE_WRITES ? 'strace' : process.execPath,
    args: TRACE_WRITES ? [...straceArgs(traceFile), process.execPath, ...serverEntryArgs(ROOT)] : serverEntryArgs(ROOT),
    // The defaults of `npm start`, but a budget that lets one key send N POSTs.
    env: { ...process.env, PORT: '0', KOBO_DATA_DIR: dataDir, KOBO_API_KEYS: secret, KOBO_RATE_LIMIT_READ_PER_MIN: '1000000000', KOBO_RATE_LIMIT_WRITE_PER_MIN: '1000000000' },
    cwd: ROOT,
    ready: READY,
  });
  const pid = TRACE_WRITES ? tracedChild(server.pid) : server.pid;
  try {
    const port = server.port;
    const customer = await request(port, secret, 'POST', '/v1/customers', { name: 'Disk Bench', email: 'disk@example.com', phone: '+2348030000001', country_code: 'NG' }, 'disk-c');
    if (customer.status !== 201) throw new Error(`customer: ${customer.status}`);
    const customerId = String(customer.json.data!.id);
    const tier = await request(port, secret, 'PATCH', `/v1/customers/${customerId}`, { tier: 'tier_3' });
    if (tier.status !== 200) throw new Error(`tier: ${tier.status}`);
    await new Promise((r) => setTimeout(r, 500));
    const before = writeBytes(pid);
    const cpuBefore = cpuUs(pid);
    const startedAtMs = Date.now();
    const started = performance.now();
    let next = 0;
    let failed = 0;
    const worker = async (): Promise<void> => {
      for (let i = next++; i < payments; i = next++) {
        const r = await request(port, secret, 'POST', '/v1/payments', { customer_id: customerId, amount_minor: 500_000, currency: 'NGN', method: 'bank_transfer' }, `disk-${i}`);
        if (r.status !== 201) failed += 1;
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    const elapsedS = (performance.now() - started) / 1000;
    const written = writeBytes(pid) - before;
    const cpuRun = cpuUs(pid) - cpuBefore;
    const endedAtMs = Date.now();
    // The stop writes what the run deferred (derived rows past the fsync, the partition images, the
    // final checkpoint): its write_bytes, read every few ms until the process is gone (a lower bound:
    // the last few milliseconds before exit can be missed).
    let lastSeen = written + before;
    let lastCpu = cpuRun + cpuBefore;
    const watch = setInterval(() => {
      try {
        lastSeen = writeBytes(pid);
        lastCpu = cpuUs(pid);
      } catch {
        // gone: the last reading stands
      }
    }, STOP_POLL_MS);
    // Under strace the server is strace's child: it is stopped by its own PID, and strace ends with it.
    if (TRACE_WRITES) process.kill(pid, 'SIGTERM');
    await server.stop();
    clearInterval(watch);
    const writtenWithStop = lastSeen - before;
    const diskBytes = dirBytes(dataDir);
    const result = {
      payments,
      failed,
      elapsedS: Number(elapsedS.toFixed(2)),
      writtenBytesPerPayment: Math.round(written / payments),
      writtenBytesPerPaymentWithStop: Math.round(writtenWithStop / payments),
      diskBytesPerPaymentAfterSnapshot: Math.round(diskBytes / payments),
      // The server's CPU (all threads) a payment, in the run and with the stop's writes (polled: a lower bound).
      cpuUsPerPayment: Math.round(cpuRun / payments),
      cpuUsPerPaymentWithStop: Math.round((lastCpu - cpuBefore) / payments),
      writesByFile: TRACE_WRITES ? traceSummary(traceFile, payments) : undefined,
      // Bytes a payment by b-tree (bench/wal-pages.ts), in the run window and over the whole life (with the stop).
      pagesInRun: TRACE_WRITES ? perPayment(bytesByBtree(traceFile, path.join(dataDir, 'shard-0.db'), { fromMs: startedAtMs, toMs: endedAtMs }), payments) : undefined,
      pagesWithStop: TRACE_WRITES ? perPayment(bytesByBtree(traceFile, path.join(dataDir, 'shard-0.db'), { fromMs: startedAtMs }), payments) : undefined,
      // The same for the derived file (list, cold, idempotency and expiry rows).
      derivedPagesInRun: TRACE_WRITES ? perPayment(bytesByBtree(traceFile, path.join(dataDir, 'shard-0-lists.db'), { fromMs: startedAtMs, toMs: endedAtMs }), payments) : undefined,
      derivedPagesWithStop: TRACE_WRITES ? perPayment(bytesByBtree(traceFile, path.join(dataDir, 'shard-0-lists.db'), { fromMs: startedAtMs }), payments) : undefined,
      targets: { writtenBytesPerPaymentMax: TARGET_WRITTEN_BYTES_MAX, diskBytesPerPaymentMax: TARGET_DISK_BYTES_MAX },
    };
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    writeResult('disk', result);
  } finally {
    await server.stop();
    agent.destroy();
    if (process.argv.includes('--keep')) process.stdout.write(`data dir kept: ${dataDir}\n`);
    else fs.rmSync(dataDir, { recursive: true, force: true });
    if (!process.argv.includes("--keep")) fs.rmSync(`${dataDir}.strace`, { force: true });
  }
}

await main();
