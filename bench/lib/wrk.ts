// Runs wrk pinned to a core against a loopback URL for a bounded time and parses its report; writes the
// POST scripts (a fresh Idempotency-Key a request) the HTTP and cluster benches share.
// Bench process only. wrk comes from Debian (apt-get install -y wrk); the URL must be 127.0.0.1.
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';

export interface WrkResult {
  requests: number;
  durationS: number;
  requestsPerSec: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  non2xx: number;
  socketErrors: number;
  /** CPU seconds wrk itself used (bash `times` of its children). */
  clientCpuSeconds: number;
  raw: string;
}

export interface WrkOptions {
  url: string;
  core: number;
  threads: number;
  connections: number;
  durationS: number;
  script?: string;
  scriptArgs?: string[];
  headers?: string[];
}

const DURATION_S_MAX = 120;

function toMs(value: string, unit: string): number {
  const n = Number(value);
  switch (unit) {
    case 'us': return n / 1000;
    case 'ms': return n;
    case 's': return n * 1000;
    case 'm': return n * 60_000;
    default: throw new Error(`wrk: unknown latency unit ${unit}`);
  }
}

export function parseWrk(raw: string): Omit<WrkResult, 'clientCpuSeconds'> {
  const latency = (pct: string): number => {
    const match = new RegExp(`^\\s*${pct}%\\s+([0-9.]+)(us|ms|s|m)\\s*$`, 'm').exec(raw);
    if (match === null) throw new Error(`wrk: no ${pct}% latency in:\n${raw}`);
    return toMs(match[1]!, match[2]!);
  };
  const total = /(\d+) requests in ([0-9.]+)(ms|s|m)/.exec(raw);
  const rps = /Requests\/sec:\s+([0-9.]+)/.exec(raw);
  if (total === null || rps === null) throw new Error(`wrk: unexpected output:\n${raw}`);
  const non2xx = /Non-2xx or 3xx responses:\s+(\d+)/.exec(raw);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(raw);
  return {
    requests: Number(total[1]),
    durationS: toMs(total[2]!, total[3]!) / 1000,
    requestsPerSec: Number(rps[1]),
    latencyP50Ms: latency('50'),
    latencyP99Ms: latency('99'),
    non2xx: non2xx === null ? 0 : Number(non2xx[1]),
    socketErrors: socket === null ? 0 : socket.slice(1).reduce((sum, n) => sum + Number(n), 0),
    raw,
  };
}

/** The wrk command line for `options`, as it is run (shown in RESULTS.md). */
export function wrkArgs(options: WrkOptions): string[] {
  const args = ['-c', String(options.core), 'wrk', `-t${options.threads}`, `-c${options.connections}`, `-d${options.durationS}s`, '--latency'];
  for (const header of options.headers ?? []) args.push('-H', header);
  if (options.script !== undefined) args.push('-s', options.script);
  args.push(options.url);
  if (options.scriptArgs !== undefined) args.push('--', ...options.scriptArgs);
  return args;
}

export async function runWrk(options: WrkOptions): Promise<WrkResult> {
  if (!/^http:\/\/127\.0\.0\.1:\d+\//.test(options.url)) throw new Error(`wrk: refusing non-loopback URL ${options.url}`);
  if (options.durationS > DURATION_S_MAX) throw new Error(`wrk: duration above ${DURATION_S_MAX} s`);
  // bash's `times` reports the CPU time of its children (taskset exec'd into wrk) on stderr.
  const child = spawn('bash', ['-c', 'taskset "$@"; code=$?; times >&2; exit $code', 'bash', ...wrkArgs(options)], {
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true, // its own process group, so a hung run can be ended whole (bash and wrk) by that id
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  // wrk stops by itself after -d; the timer only guards against a hung client.
  const timer = setTimeout(() => {
    if (child.pid !== undefined && child.exitCode === null) process.kill(-child.pid, 'SIGKILL');
  }, (options.durationS + 30) * 1000);
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', resolve);
  });
  clearTimeout(timer);
  if (code !== 0) throw new Error(`wrk exited with ${String(code)}:\n${out}\n${err}`);
  const times = [...err.matchAll(/(\d+)m([0-9.]+)s\s+(\d+)m([0-9.]+)s/g)];
  const children = times[1];
  const clientCpuSeconds = children === undefined ? Number.NaN : Number(children[1]) * 60 + Number(children[2]) + Number(children[3]) * 60 + Number(children[4]);
  return { ...parseWrk(out), clientCpuSeconds };
}

/**
 * A POST script: rotates over pre-rendered JSON bodies (one per customer) and sends a never-repeated
 * Idempotency-Key (nonce-thread-counter), so every request is a new money-moving command.
 */
export function postScript(dir: string, options: { name: string; bodies: string[]; authorization: string }): string {
  const file = path.join(dir, `${options.name}.lua`);
  const lua = `-- written by bench/: ${options.name}, one fresh Idempotency-Key per request
local bodies = { ${options.bodies.map((b) => `'${b}'`).join(', ')} }
local nonce = "run"
local counter = 0
tid = 0
local threads = 0

function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end

function init(args)
  if args[1] ~= nil then nonce = args[1] end
end

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = ${JSON.stringify(options.authorization)}

function request()
  counter = counter + 1
  wrk.headers["Idempotency-Key"] = nonce .. "-" .. tid .. "-" .. counter
  return wrk.format(nil, nil, nil, bodies[(counter % #bodies) + 1])
end
`;
  fs.writeFileSync(file, lua);
  return file;
}
