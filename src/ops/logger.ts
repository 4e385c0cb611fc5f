// Structured JSON logs (pino, one line per event on stdout): the request log, start/stop, shard activity
// at debug. Main thread. `log(message, fields?)` keeps the plain call-site shape the code already uses.
// Invariant: stacks go to this server-side log only; clients see a request id, never a stack.
import { pino, type Logger } from 'pino';
import type { Config } from '../config.ts';

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
  /** Writes what is buffered (before process.exit). */
  flush: () => void;
}

export function createLogging(level: Config['logLevel']): Logging {
  const destination = pino.destination({ dest: 1, sync: false });
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
  return {
    logger,
    info: (message, fields) => logger.info(fields ?? {}, message),
    lifecycle: (message, fields) => lifecycle.info(fields ?? {}, message),
    debug: (message, fields) => logger.debug(fields ?? {}, message),
    warn: (message, fields) => logger.warn(fields ?? {}, message),
    error: (message, error, fields) => logger.error({ ...fields, err: error }, message),
    fatal: (message, fields) => logger.fatal(fields ?? {}, message),
    flush: () => {
      try {
        destination.flushSync();
      } catch {
        // Not yet open or already closed: nothing buffered to lose.
      }
    },
  };
}
