// Structured JSON logs (pino, one line per event on stdout): the request log, start/stop, shard activity
// at debug. Main thread. `log(message, fields?)` keeps the plain call-site shape the code already uses.
// Invariant: stacks go to this server-side log only; clients see a request id, never a stack.
import { pino, type Logger } from 'pino';
import { LogWriter } from './log-writer.ts';
import type { Config } from '../config.ts';
import { isoTime } from '../iso-time.ts';

export type LogFields = Record<string, unknown>;
export type Log = (message: string, fields?: LogFields) => void;

export interface Logging {
  logger: Logger;
  info: Log;
  /** Start and stop lines: written at every level but silent (supervisors and tests wait for them). */
  lifecycle: Log;
  debug: Log;
  warn: Log;
  error: (message: string, error: unknown, fields?: LogFields) => void;
  /** The reason the process stops: at level fatal, so every level but silent writes it. */
  fatal: Log;
  /** The request log's line for one answered request (level info; nothing below it). */
  request: (fields: RequestLine) => void;
  /** Writes what is buffered (before process.exit). */
  flush: () => void;
}

export interface RequestLine {
  reqId: string;
  method: string;
  route: string;
  path: string;
  status: number;
  ms: number;
  ip: string;
  /** The authenticated key's id and account (null before or without authentication); never its secret. */
  keyId: string | null;
  account: string | null;
}

/**
 * Every line goes through one LogWriter, which writes in 64 KiB chunks and at least every LOG_FLUSH_MS;
 * warnings, errors, fatal and start/stop lines start a write at once. The request log cost ~17 µs of a
 * durable POST's 125 µs at 256 connections through pino's object serialiser and destination. A kill -9
 * can lose the last LOG_FLUSH_MS of info lines, never one that started a write.
 */
const LOG_FLUSH_MS = 200;

/** Characters a JSON string may hold as they are (no quote, backslash or control character). */
const JSON_PLAIN = /^[\w .:/@+=,;~!*'()$&?%[\]{}^`|<>#-]*$/;

/** A JSON string literal: most values (ids, methods, routes, paths, addresses) need no escaping at all. */
function quoted(value: string): string {
  return JSON_PLAIN.test(value) ? `"${value}"` : JSON.stringify(value);
}

/**
 * `quoted` remembering its last value: a field that repeats from line to line (the method, the client's
 * address, its account and key) is checked once per change rather than once per line.
 */
function lastQuoted(): (value: string) => string {
  let last = '';
  let lastQuotedValue = '""';
  return (value) => {
    if (value !== last) {
      last = value;
      lastQuotedValue = quoted(value);
    }
    return lastQuotedValue;
  };
}

export function createLogging(level: Config['logLevel']): Logging {
  const destination = new LogWriter(1, LOG_FLUSH_MS);
  const handOver = (): void => destination.flush();
  // The request line is written by hand in pino's shape (level, time, pid, name, fields, msg): building
  // it through pino's object serialiser cost more than the rest of the line's work.
  const head = `{"level":"info","time":"`;
  const base = `","pid":${process.pid},"name":"kobo","req_id":`;
  /** The line's time, formatted once per millisecond. */
  let isoAtMs = 0;
  let iso = '';
  const logger = pino(
    {
      level,
      base: { pid: process.pid, name: 'kobo' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
  const lifecycle = logger.child({}, { level: level === 'silent' ? 'silent' : 'info' });
  const infoOn = logger.isLevelEnabled('info');
  const methodQuoted = lastQuoted();
  const ipQuoted = lastQuoted();
  const accountQuoted = lastQuoted();
  const keyQuoted = lastQuoted();
  return {
    logger,
    info: (message, fields) => logger.info(fields ?? {}, message),
    lifecycle: (message, fields) => {
      lifecycle.info(fields ?? {}, message);
      handOver();
    },
    debug: (message, fields) => logger.debug(fields ?? {}, message),
    warn: (message, fields) => {
      logger.warn(fields ?? {}, message);
      handOver();
    },
    error: (message, error, fields) => {
      logger.error({ ...fields, err: error }, message);
      handOver();
    },
    fatal: (message, fields) => {
      logger.fatal(fields ?? {}, message);
      handOver();
    },
    request: (r) => {
      if (!infoOn) return;
      const nowMs = Date.now();
      if (nowMs !== isoAtMs) {
        isoAtMs = nowMs;
        iso = isoTime(nowMs);
      }
      destination.write(
        // The request id and the route template are kobo's own (base-36 digits, a path from the route
        // table): written as they are. What a client sent (method, path), the address, account and key are
        // quoted (the repeating ones through their last value).
        `${head}${iso}${base}"${r.reqId}","method":${methodQuoted(r.method)},"route":${r.route === '' ? 'null' : `"${r.route}"`},` +
          `"path":${quoted(r.path)},"status":${r.status},"ms":${r.ms},"ip":${ipQuoted(r.ip)},` +
          `"account":${r.account === null ? 'null' : accountQuoted(r.account)},"key_id":${r.keyId === null ? 'null' : keyQuoted(r.keyId)},"msg":"request"}\n`,
      );
    },
    flush: () => destination.flushSync(),
  };
}
