// Per-shard images in the object store (bucket `kobo-images`, objects `shard-<n>-image-<ms>`), for
// per-shard ownership: the node holding a shard copies that shard's files (shard-copy.ts, in a process of
// its own), stores the copy with the stream sequence of its last row, keeps the newest two and purges the
// shard's stream below what the older one (and every live follower) still needs; a node whose copy cannot
// continue from the purged stream puts the newest image in place of its files and follows from there.
// Main thread of the node supervisor. Invariant: an image stands only for rows the stream holds, byte for byte.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { JetStreamManager } from '@nats-io/jetstream';
import type { ObjectStore } from '@nats-io/obj';
import { ShardStore } from '../store/shard-store.ts';
import { derivedFileOf } from '../store/derived-file.ts';
import { shardFile } from '../shard/layout.ts';
import { koboInChild, rowHolding, type ClusterImages } from './images.ts';
import type { ShardFollower } from './follower.ts';
import type { ShardOwners } from './shard-owners.ts';
import { streamOf } from './streams.ts';
import { POSITION_META } from './follower.ts';
import type { ShardCopy } from './shard-copy.ts';

/** Images kept per shard; the stream keeps what the oldest of them needs. */
const SHARD_IMAGES_KEPT = 2;
/** Bytes of the length prefix that separates the shard file from its derived file in one object. */
const LENGTH_BYTES = 8;

interface ShardImageMeta {
  shard: number;
  epoch: number;
  /** The copy's last LSN, and the stream sequence of the row ending there. */
  lsn: number;
  seq: number;
}

export type Published = { kind: 'written'; name: string; meta: ShardImageMeta; purgedBelow: number } | { kind: 'skipped'; why: string };

const prefixOf = (shard: number): string => `shard-${shard}-image-`;

export class ShardImages {
  constructor(
    private readonly store: ObjectStore,
    private readonly jsm: JetStreamManager,
    private readonly dataDir: string,
  ) {}

  /** This shard's images, oldest first. */
  private async list(shard: number): Promise<Array<{ name: string; meta: ShardImageMeta }>> {
    const prefix = prefixOf(shard);
    return (await this.store.list())
      .filter((i) => i.name.startsWith(prefix) && !i.deleted)
      .sort((a, b) => a.name.localeCompare(b.name))
      .map((i) => ({ name: i.name, meta: JSON.parse(i.description ?? '{}') as ShardImageMeta }));
  }

  /**
   * The holder of `shard`: copies its files, stores the copy if the stream holds its last row (the same
   * row), keeps the newest SHARD_IMAGES_KEPT, and purges the stream below the older kept image's row and
   * below `followersNeed` (the first sequence a live follower has yet to apply).
   */
  async publish(shard: number, epoch: number, followersNeed: number): Promise<Published> {
    // Nothing written since the newest image (markers aside, which a restored copy meets again): no copy.
    const newest = (await this.list(shard)).pop();
    if (newest !== undefined && (await this.jsm.streams.info(streamOf(shard))).state.last_seq <= newest.meta.seq + 1) return { kind: 'skipped', why: 'nothing new since the last image' };
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), `kobo-shard-${shard}-image-`));
    try {
      const out = path.join(dir, 'copy');
      const copy = JSON.parse((await koboInChild(this.dataDir, ['cluster', 'image-shard', '--shard', String(shard), '--out', out]).done).trim().split('\n').pop()!) as ShardCopy;
      if (copy.lastLsn === 0) return { kind: 'skipped', why: 'the shard has no log yet' };
      const held = await rowHolding(this.jsm, shard, copy.lastLsn);
      // A row of the copy not yet acknowledged could still be refused: the image waits for the next round.
      if (held === null) return { kind: 'skipped', why: `the stream does not hold LSN ${copy.lastLsn} yet` };
      if (held.row.lsnFirst !== copy.lsnFirst || held.row.n !== copy.n || held.row.crc !== copy.crc) return { kind: 'skipped', why: `the stream's row at LSN ${copy.lastLsn} is not the copy's` };
      const file = path.join(out, shardFile(shard));
      const main = fs.readFileSync(file);
      const lists = fs.existsSync(derivedFileOf(file)) ? fs.readFileSync(derivedFileOf(file)) : Buffer.alloc(0);
      const length = Buffer.alloc(LENGTH_BYTES);
      length.writeBigUInt64BE(BigInt(main.length));
      const meta: ShardImageMeta = { shard, epoch, lsn: copy.lastLsn, seq: held.seq };
      const name = `${prefixOf(shard)}${String(Date.now()).padStart(15, '0')}`;
      await this.store.putBlob({ name, description: JSON.stringify(meta) }, Buffer.concat([length, main, lists]));
      const images = await this.list(shard);
      for (const old of images.slice(0, Math.max(0, images.length - SHARD_IMAGES_KEPT))) await this.store.delete(old.name);
      const oldest = images.slice(-SHARD_IMAGES_KEPT)[0]!;
      // The row at the image's sequence is kept: a restored copy continues after it, and skips it.
      const below = Math.min(oldest.meta.seq, followersNeed);
      if (below > 1) await this.jsm.streams.purge(streamOf(shard), { seq: below });
      return { kind: 'written', name, meta, purgedBelow: below };
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }

  /**
   * Puts the newest image of `shard` in place of this node's files of it (nothing may have them open),
   * positioned at the image's stream sequence; null when there is none.
   */
  async restoreNewest(shard: number): Promise<string | null> {
    const newest = (await this.list(shard)).pop();
    if (newest === undefined) return null;
    const data = await this.store.getBlob(newest.name);
    if (data === null) return null;
    const mainBytes = Number(Buffer.from(data.buffer, data.byteOffset, LENGTH_BYTES).readBigUInt64BE());
    const file = path.join(this.dataDir, shardFile(shard));
    const staged = `${file}.image`;
    for (const f of [staged, derivedFileOf(staged)]) fs.rmSync(f, { force: true });
    fs.writeFileSync(staged, data.subarray(LENGTH_BYTES, LENGTH_BYTES + mainBytes));
    fs.writeFileSync(derivedFileOf(staged), data.subarray(LENGTH_BYTES + mainBytes));
    for (const f of [file, derivedFileOf(file)]) for (const suffix of ['', '-wal', '-shm']) fs.rmSync(`${f}${suffix}`, { force: true });
    fs.renameSync(derivedFileOf(staged), derivedFileOf(file));
    fs.renameSync(staged, file);
    // The copy was the holder's file: its own stream position is older than its rows. It stands for the
    // stream through the image's sequence, and its follower continues after it.
    const store = new ShardStore(file);
    try {
      store.setMeta(POSITION_META, `${newest.meta.seq}:${newest.meta.lsn}`);
    } finally {
      store.close();
    }
    return newest.name;
  }
}

/** A follower of `shard` whose copy its stream can continue: if the stream was purged past the copy, the shard's newest image is put in place first. */
export async function continuableFollower(shard: number, open: () => ShardFollower, images: ClusterImages, shardImages: ShardImages, log: (message: string) => void): Promise<ShardFollower> {
  const follower = open();
  if (await images.continuable(shard, follower.nextLsn)) return follower;
  follower.close();
  const restored = await shardImages.restoreNewest(shard);
  log(`'s copy of shard ${shard} is behind its purged stream; restored image ${restored ?? '(none found)'}`);
  return open();
}

/** One image round of a node: each shard it serves, one at a time. */
export async function imageServedShards(owners: ShardOwners, shardImages: ShardImages, options: { node: string; stopping: () => boolean; log: (message: string) => void }): Promise<void> {
  for (const { shard, epoch } of owners.serving()) {
    if (options.stopping()) return;
    const startedAt = Date.now();
    const done = await shardImages.publish(shard, epoch, owners.followersNeedOf(shard)).catch((error: unknown) => ({ kind: 'skipped' as const, why: `failed: ${(error as Error).message}` }));
    if (done.kind === 'written') options.log(`cluster: ${options.node} imaged shard ${shard} at LSN ${done.meta.lsn} (stream sequence ${done.meta.seq}) in ${Date.now() - startedAt} ms; stream purged below ${done.purgedBelow}`);
    else options.log(`cluster: ${options.node}: no image of shard ${shard} this round (${done.why})`);
  }
}
