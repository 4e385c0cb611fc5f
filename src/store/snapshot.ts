// Snapshot rows: an encoded partition image (see src/shard/partition-image.ts) gzipped and checksummed.
// Runs in shard workers and the CLI. Compression runs on libuv's thread pool (zlib async) so the shard
// thread keeps serving commands meanwhile.
// Invariant: a row's checksum covers its partition, LSN and body.
import { gunzipSync, gzip, gzipSync } from 'node:zlib';
import { promisify } from 'node:util';
import { snapshotChecksum, type SnapshotRow } from './shard-store.ts';

const gzipAsync = promisify(gzip);

export function snapshotRow(options: { partition: number; lsn: number; takenAtMs: number; body: Buffer }): SnapshotRow {
  return Object.assign({}, options, { crc: snapshotChecksum(options.partition, options.lsn, options.body) });
}

export async function compressImage(json: string): Promise<Buffer> {
  return gzipAsync(json);
}

export function compressImageSync(json: string): Buffer {
  return gzipSync(json);
}

export function decompressImage(body: Buffer): string {
  return gunzipSync(body).toString('utf8');
}
