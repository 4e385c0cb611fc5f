// Starts a real kobo server process for a test (own data dir, own keys, port chosen by the OS) and
// offers a small JSON client. Tests talk to it over real HTTP; crash tests kill it with SIGKILL.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { ROOT, entryArgs } from './build.ts';

export { ROOT };

export interface TestServer {
  baseUrl: string;
  port: number;
  dataDir: string;
  child: ChildProcess;
  output: () => string;
  /** SIGKILL: no snapshot, no cleanup; what was acknowledged must be on disk. */
  kill: () => Promise<void>;
  /** SIGTERM: graceful stop. */
  stop: () => Promise<void>;
}

export interface StartOptions {
  keys?: string[];
  dataDir?: string;
  env?: Record<string, string>;
  /** null: KOBO_SHARDS left unset (the data dir's recorded count, or the CPU count when new). */
  shards?: number | null;
}

export function tempDataDir(label = 'kobo'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `${label}-`));
}

export function secretKey(env: 'test' | 'live' = 'test'): string {
  return `sk_${env}_${randomBytes(12).toString('hex')}`;
}

export async function startServer(options: StartOptions = {}): Promise<TestServer> {
  const dataDir = options.dataDir ?? tempDataDir();
  const env: Record<string, string> = {
    ...process.env as Record<string, string>,
    PORT: '0',
    HOST: '127.0.0.1',
    KOBO_DATA_DIR: dataDir,
    ...(options.shards === null ? {} : { KOBO_SHARDS: String(options.shards ?? 2) }),
    KOBO_API_KEYS: (options.keys ?? []).join(','),
    KOBO_RATE_LIMIT_READ_PER_MIN: '100000',
    KOBO_RATE_LIMIT_WRITE_PER_MIN: '100000',
    KOBO_RAIL_LATENCY_MS: '5',
    ...options.env,
  };
  if (options.shards === null) delete env.KOBO_SHARDS;
  const child = spawn(process.execPath, entryArgs('main'), { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const port = await new Promise<number>((resolve, reject) => {
    // A server that never listens is killed here: the caller has no handle on it yet, and an orphan
    // would keep the test file's process (and the whole run) waiting on it.
    const timer = setTimeout(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      reject(new Error(`server did not start in 30 s:\n${output}`));
    }, 30_000);
    const check = (): void => {
      // HOST may be another address (`::` logs `http://:::PORT`); the port follows the last colon.
      const match = /listening on http:\/\/\S*:(\d+) /.exec(output);
      if (match !== null) {
        clearTimeout(timer);
        resolve(Number(match[1]));
      }
    };
    child.stdout!.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before listening:\n${output}`));
    });
  });
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    port,
    dataDir,
    child,
    output: () => output,
    kill: async () => {
      if (child.exitCode === null) child.kill('SIGKILL');
      await exited;
    },
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

export interface RequestOptions {
  key?: string | null;
  body?: unknown;
  rawBody?: string;
  idempotencyKey?: string;
  headers?: Record<string, string>;
}

export function client(baseUrl: string, defaultKey?: string) {
  return async function request<T = any>(method: string, urlPath: string, options: RequestOptions = {}): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...options.headers };
    const key = options.key === undefined ? defaultKey : options.key;
    if (key !== undefined && key !== null) headers.authorization = `Bearer ${key}`;
    if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
    let body: string | undefined;
    if (options.rawBody !== undefined) body = options.rawBody;
    else if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    // A pooled keep-alive connection the server closed while the test's event loop was blocked (a
    // spawnSync CLI run outlasting the idle timeout) fails before the request is sent. Like a real
    // client, retry once, only where a retry is safe: a GET, or a request carrying an Idempotency-Key.
    const retrySafe = method === 'GET' || headers['idempotency-key'] !== undefined;
    let response: Response;
    try {
      response = await fetch(baseUrl + urlPath, { method, headers, body });
    } catch (error) {
      const code = ((error as Error).cause as { code?: string } | undefined)?.code;
      if (!retrySafe || !(code === 'UND_ERR_SOCKET' || code === 'ECONNRESET')) throw error;
      response = await fetch(baseUrl + urlPath, { method, headers, body });
    }
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = text === '' ? null : JSON.parse(text);
    } catch {
      parsed = text;
    }
    return { status: response.status, headers: response.headers, body: parsed as T };
  };
}

let seq = 0;
/** A fresh idempotency key. */
export function idem(label = 'k'): string {
  seq += 1;
  return `${label}-${Date.now()}-${seq}-${randomBytes(4).toString('hex')}`;
}

/** A valid, unique Nigerian mobile number. */
export function uniquePhone(): string {
  return `+23480${String(30_000_000 + Math.floor(Math.random() * 69_999_999)).padStart(8, '0')}`;
}

export function uniqueEmail(): string {
  return `user-${randomBytes(6).toString('hex')}@example.com`;
}
