// Images of the whole data dir in the JetStream object store (bucket `kobo-images`): the owner writes a
// backup (the `kobo snapshot` format) every interval and purges each shard stream below what the older
// kept image needs; a node whose copy lacks rows the streams no longer hold restores the newest image.
// Main thread of the node supervisor. Invariant: a stream is purged only below a row an image covers.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { Objm, type ObjectStore } from '@nats-io/obj';
import { spawn, type ChildProcess } from 'node:child_process';
import { restoreBackup } from '../cli/restore.ts';
import { rowOf, streamOf } from './streams.ts';
import type { EncodedRow } from '../journal/log-segments.ts';

export const IMAGE_BUCKET = 'kobo-images';
/** Images kept in the bucket; the streams keep what the oldest of them needs. */
const IMAGES_KEPT = 2;

interface ImageMeta {
  epoch: number;
  /** Per shard: the LSN the image covers, and the stream sequence of the row holding it. */
  lsns: number[];
  seqs: number[];
}

export class ClusterImages {
  private constructor(
    private readonly store: ObjectStore,
    private readonly jsm: JetStreamManager,
    private readonly dataDir: string,
    private readonly shards: number,
  ) {}

  static async open(nc: NatsConnection, jsm: JetStreamManager, options: { dataDir: string; shards: number; replicas: number }): Promise<ClusterImages> {
    const store = await new Objm(nc).create(IMAGE_BUCKET, { replicas: options.replicas });
    return new ClusterImages(store, jsm, options.dataDir, options.shards);
  }

  /** The bucket, for the per-shard images (shard-images.ts). */
  get objects(): ObjectStore {
    return this.store;
  }

  /** The stream sequence of the row holding `lsn`, or null when the stream does not hold it (yet). */
  private async seqHolding(shard: number, lsn: number): Promise<number | null> {
    return (await rowHolding(this.jsm, shard, lsn))?.seq ?? null;
  }

  /** Owner: writes an image, keeps the newest IMAGES_KEPT, purges the streams below the oldest kept. */
  async publish(epoch: number): Promise<boolean> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kobo-image-'));
    try {
      const file = path.join(dir, 'image.kobo');
      await backupInChild(this.dataDir, file);
      const lsns = lsnsOf(file, this.shards);
      const seqs: number[] = [];
      for (let shard = 0; shard < this.shards; shard += 1) {
        // An image may only stand for rows the stream has (a row of the image not yet acknowledged could still be refused).
        const seq = lsns[shard]! === 0 ? 0 : await this.seqHolding(shard, lsns[shard]!);
        if (seq === null) return false;
        seqs.push(seq);
      }
      const meta: ImageMeta = { epoch, lsns, seqs };
      await this.store.putBlob({ name: `image-${String(Date.now()).padStart(15, '0')}`, description: JSON.stringify(meta) }, fs.readFileSync(file));
      const images = (await this.store.list()).filter((i) => i.name.startsWith('image-') && !i.deleted).sort((a, b) => a.name.localeCompare(b.name));
      for (const old of images.slice(0, Math.max(0, images.length - IMAGES_KEPT))) await this.store.delete(old.name);
      const oldest = images.slice(-IMAGES_KEPT)[0];
      if (oldest === undefined) return true;
      const kept = JSON.parse(oldest.description ?? '{}') as ImageMeta;
      for (let shard = 0; shard < this.shards; shard += 1) {
        const seq = kept.seqs[shard] ?? 0;
        if (seq > 1) await this.jsm.streams.purge(streamOf(shard), { seq });
      }
      return true;
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }

  /**
   * Whether a copy at `nextLsn` of `shard` can continue from its stream: the stream's first row must
   * start at or before it.
   */
  async continuable(shard: number, nextLsn: number): Promise<boolean> {
    const state = (await this.jsm.streams.info(streamOf(shard))).state;
    if (state.first_seq <= 1 || state.messages === 0) return true;
    for (let seq = state.first_seq; seq <= state.last_seq; seq += 1) {
      const m = await this.jsm.streams.getMessage(streamOf(shard), { seq });
      const row = m === null ? null : rowOf(m.header, m.data);
      if (row !== null) return row.lsnFirst <= nextLsn;
    }
    return true;
  }

  /** Restores the newest image into the data dir (no server and no follower may have it open). */
  async restoreNewest(): Promise<string | null> {
    const images = (await this.store.list()).filter((i) => i.name.startsWith('image-') && !i.deleted).sort((a, b) => a.name.localeCompare(b.name));
    const newest = images[images.length - 1];
    if (newest === undefined) return null;
    const data = await this.store.getBlob(newest.name);
    if (data === null) return null;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kobo-image-'));
    try {
      const file = path.join(dir, 'image.kobo');
      fs.writeFileSync(file, data);
      restoreBackup(this.dataDir, file);
      return newest.name;
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }
}

/** The stream sequence and the row holding `lsn` in a shard's stream, or null when the stream does not hold it (yet). */
export async function rowHolding(jsm: JetStreamManager, shard: number, lsn: number): Promise<{ seq: number; row: EncodedRow } | null> {
  const state = (await jsm.streams.info(streamOf(shard))).state;
  let lo = state.first_seq;
  let hi = state.last_seq;
  while (lo <= hi) {
    const mid = Math.floor((lo + hi) / 2);
    // Epoch markers hold no row: the first row at or after mid stands for it.
    let at = mid;
    let row = null;
    for (; at <= hi && row === null; at += 1) {
      const m = await jsm.streams.getMessage(streamOf(shard), { seq: at });
      row = m === null ? null : rowOf(m.header, m.data);
    }
    if (row === null) {
      hi = mid - 1;
      continue;
    }
    const seq = at - 1;
    if (row.lsnFirst + row.n - 1 < lsn) lo = seq + 1;
    else if (row.lsnFirst > lsn) hi = mid - 1;
    else return { seq, row };
  }
  return null;
}

/** Per shard, the LSN a backup file's images cover (partition p belongs to shard p % shards). */
function lsnsOf(file: string, shards: number): number[] {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const lsns = new Array<number>(shards).fill(0);
    for (const row of db.prepare('SELECT partition, lsn FROM partitions').all() as Array<{ partition: number; lsn: number }>) {
      const shard = row.partition % shards;
      lsns[shard] = Math.max(lsns[shard]!, row.lsn);
    }
    return lsns;
  } finally {
    db.close();
  }
}

/** How long writing an image may take before it is abandoned. */
const IMAGE_WRITE_MS_MAX = 300_000;

/**
 * Runs `kobo snapshot --out FILE` as its own process: reading every shard is synchronous work that
 * would otherwise hold this event loop (and with it the lease renewals and the forwarding).
 */
function backupInChild(dataDir: string, file: string): Promise<void> {
  return koboInChild(dataDir, ['snapshot', '--out', file]).done.then(() => {});
}

/**
 * Runs the kobo CLI on `dataDir` as a process of its own (bounded by IMAGE_WRITE_MS_MAX); `done`
 * resolves with its output, or rejects with its exit code and error output.
 */
export function koboInChild(dataDir: string, args: string[]): { child: ChildProcess; done: Promise<string> } {
  const main = process.argv[1]!;
  const cli = main.endsWith('.ts') ? path.join(path.dirname(main), 'cli', 'kobo.ts') : path.join(path.dirname(main), 'kobo.js');
  const child = spawn(process.execPath, [...process.execArgv, cli, ...args], { env: { ...process.env, KOBO_DATA_DIR: dataDir }, stdio: ['ignore', 'pipe', 'pipe'], timeout: IMAGE_WRITE_MS_MAX });
  const done = new Promise<string>((resolve, reject) => {
    let out = '';
    let err = '';
    child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code, signal) => (code === 0 ? resolve(out) : reject(new Error(`kobo ${args[0]} exited with ${signal ?? code}: ${err.trim()}`))));
  });
  return { child, done };
}
