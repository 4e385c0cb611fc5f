// Checkpoints one SQLite file's journal (`-wal`) from a worker thread of its own, so copying its pages into
// the database file and the two fsyncs around that never hold the writer's event loop. Created by the
// thread that writes the file (a shard worker, or the main thread for an inline shard).
// Invariant: at most one checkpoint runs at a time; PASSIVE mode, so it never waits for (or blocks) the writer.
import { Worker } from 'node:worker_threads';
import { createRequire } from 'node:module';

/** The worker: opens the file once, answers each request with one PASSIVE checkpoint's counts. */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
// Below the writer's priority: on a machine with one core for the server, a checkpoint's copying took
// that core from the loop in bursts. Linux names a thread by its id under /proc/thread-self; elsewhere the
// checkpoint runs at the process's priority.
try {
  const tid = Number(require('node:fs').readlinkSync('/proc/thread-self').split('/').pop());
  if (Number.isInteger(tid) && tid > 0) require('node:os').setPriority(tid, workerData.nice);
} catch {}
const Database = require(workerData.sqlite);
const db = new Database(workerData.file, { fileMustExist: true });
parentPort.on('message', () => {
  try {
    const [row] = db.pragma('wal_checkpoint(PASSIVE)');
    parentPort.postMessage({ ok: true, busy: row.busy, log: row.log, checkpointed: row.checkpointed });
  } catch (error) {
    parentPort.postMessage({ ok: false, message: String(error && error.message || error) });
  }
});
`;

/** The checkpoint thread's nice value (the process's is 0 unless its operator set one; higher is lower). */
export const CHECKPOINT_NICE = 10;

export interface CheckpointResult {
  /** Frames in the journal, and how many of them are now in the database file. */
  log: number;
  checkpointed: number;
}

export class Checkpointer {
  private readonly worker: Worker;
  private done: ((error: Error | null, result: CheckpointResult | null) => void) | null = null;

  constructor(file: string) {
    const sqlite = createRequire(import.meta.url).resolve('better-sqlite3');
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { sqlite, file, nice: CHECKPOINT_NICE } });
    this.worker.unref();
    this.worker.on('message', (m: { ok: true; log: number; checkpointed: number } | { ok: false; message: string }) => {
      const done = this.done;
      this.done = null;
      if (done === null) return;
      if (m.ok) done(null, { log: m.log, checkpointed: m.checkpointed });
      else done(new Error(`checkpoint failed: ${m.message}`), null);
    });
    // A worker that failed or exited answers nothing more: the owner checkpoints on its own thread instead
    // (a request posted to it would wait for ever, and the journal grow with it).
    const ended = (error: Error): void => {
      this.dead = true;
      const done = this.done;
      this.done = null;
      done?.(error, null);
    };
    this.worker.on('error', ended);
    this.worker.on('exit', (code) => ended(new Error(`checkpoint worker exited (code ${code})`)));
  }

  private dead = false;

  get running(): boolean {
    return this.done !== null;
  }

  /** False once the worker failed or exited: nothing more will be checkpointed here. */
  get usable(): boolean {
    return !this.dead;
  }

  /** Runs one checkpoint and calls back; false (nothing started) while one runs or the worker is gone. */
  run(done: (error: Error | null, result: CheckpointResult | null) => void): boolean {
    if (this.done !== null || this.dead) return false;
    this.done = done;
    this.worker.postMessage(null);
    return true;
  }

  close(): void {
    this.done = null;
    void this.worker.terminate();
  }
}
