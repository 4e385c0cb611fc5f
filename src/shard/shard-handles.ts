// What the shard pool posts through besides a worker thread: the handle every shard presents, the inline
// shard that runs on the main thread, and the hints an operator gets with a dying shard's error.
// Main thread. Invariant: what an inline shard keeps and also hands out (outbox, forwards) is cloned first.
import { EventEmitter } from 'node:events';
import { runShard, type ShardInbound, type ShardWorkerData } from './shard-runtime.ts';

/** What an operator should read first when a shard dies of a known fault (by the error's code). */
const FAULT_HINTS: ReadonlyArray<readonly [code: string, hint: string]> = [
  ['SQLITE_FULL', 'the disk holding the data dir is full; free space and restart (what was acknowledged is on disk)'],
  ['ENOSPC', 'the disk holding the data dir is full; free space and restart (what was acknowledged is on disk)'],
  ['SQLITE_READONLY', 'the data dir cannot be written (read-only file system or permissions)'],
  ['SQLITE_IOERR', 'the disk reported an I/O error; check it, then restart and run `kobo verify`'],
  ['SQLITE_CORRUPT', 'a shard file is damaged; run `kobo verify`, and restore from a backup if it fails'],
];

export function faultHint(error: unknown): string {
  const code = typeof error === 'object' && error !== null && 'code' in error ? String((error as { code: unknown }).code) : '';
  const hint = FAULT_HINTS.find(([prefix]) => code.startsWith(prefix));
  return hint === undefined ? '' : ` (${hint[1]})`;
}

/** What the pool needs of a shard: a worker thread, or an inline runtime that behaves like one. */
export interface ShardHandle extends EventEmitter {
  postMessage(message: ShardInbound): void;
}

/**
 * A shard on the main thread. Messages are handed over as they are, without a structured clone: the
 * front end builds a fresh command per request and never touches it again, and a reply carries its
 * body as a JSON string. What the shard keeps in its state and also hands out (outbox events, forwarded
 * commands) is cloned, so no reader here can change the shard's memory behind its WAL.
 */
export class InlineShard extends EventEmitter implements ShardHandle {
  private handler: ((message: ShardInbound) => void) | null = null;

  constructor(data: ShardWorkerData) {
    super();
    // Started on a later turn, once the pool has attached its listeners (as a worker would be).
    setImmediate(() => {
      try {
        runShard(data, {
          post: (message) => this.emit('message', message.type === 'outbox' || message.type === 'forward' ? structuredClone(message) : message),
          onMessage: (handler) => {
            this.handler = handler;
          },
          exit: () => setImmediate(() => this.emit('exit', 0)),
        });
      } catch (error) {
        this.emit('error', error);
      }
    });
  }

  postMessage(message: ShardInbound): void {
    if (this.handler === null) throw new Error('inline shard: a message before the shard started');
    this.handler(message);
  }
}
