// The log's row format, version 2: one row per group commit, whose body holds the batch's records (one
// per command that changed state), compressed as one stream. Store layer: used by the shard that owns
// the file and by the CLI; imports nothing from the shard. The format is described in docs/log-format.md.
// Invariant: decode(encode(records)) === records, and a row whose checksum fails is never decoded.
import { crc32, deflateRawSync, inflateRawSync } from 'node:zlib';

/** One command's record as the shard hands it over: its partition and its events as JSON. */
export interface LogRecord {
  partition: number;
  body: string;
}

export const LOG_FORMAT_VERSION = 2;
/** Body codecs: the records' frames as they are, or deflated (raw deflate, level 1) as one stream. */
const CODEC_RAW = 0;
const CODEC_DEFLATE = 1;
/** Below this many bytes of frames a batch is stored raw: deflate's fixed cost buys nothing there. */
const DEFLATE_FROM_BYTES = 512;
/** A record's frame header: partition (u16) and JSON length (u32). */
const FRAME_HEADER_BYTES = 6;
/** The largest body a row may inflate to (a batch is at most KOBO_BATCH_COMMANDS_MAX records). */
export const LOG_ROW_INFLATED_BYTES_MAX = 512 * 1024 * 1024;

/** The checksum of a row: crc32 over its numbering and its stored body, so a row moved or renumbered fails too. */
export function logRowChecksum(lsnFirst: number, n: number, batch: number, body: Buffer): number {
  return crc32(body, crc32(`${lsnFirst}:${n}:${batch}:`));
}

/**
 * Frames are written into one reused buffer (encoding is synchronous and its result never aliases it),
 * sized by the UTF-8 bound of 3 bytes a UTF-16 unit, so no record's byte length is measured first: that
 * measure walked every record once more and allocated (Buffer.byteLength was ~4% of a POST's allocations).
 * A batch larger than the kept bound gets a buffer of its own.
 */
const FRAMES_KEPT_BYTES_MAX = 4 * 1024 * 1024;
let framesScratch = Buffer.allocUnsafe(64 * 1024);

/** The row body for a batch's records: [version][codec][frames, maybe deflated]. */
export function encodeLogBody(records: readonly LogRecord[]): Buffer {
  let bound = 0;
  for (const record of records) bound += FRAME_HEADER_BYTES + 3 * record.body.length;
  let frames = framesScratch;
  if (frames.length < bound) {
    frames = Buffer.allocUnsafe(bound);
    if (bound <= FRAMES_KEPT_BYTES_MAX) framesScratch = frames;
  }
  let at = 0;
  for (const record of records) {
    const length = frames.write(record.body, at + FRAME_HEADER_BYTES, 'utf8');
    frames.writeUInt16LE(record.partition, at);
    frames.writeUInt32LE(length, at + 2);
    at += FRAME_HEADER_BYTES + length;
  }
  const used = frames.subarray(0, at);
  const deflate = at >= DEFLATE_FROM_BYTES;
  const payload = deflate ? deflateRawSync(used, { level: 1 }) : used;
  // concat copies, so the raw codec's frames do not stay tied to the scratch buffer.
  return Buffer.concat([Buffer.from([LOG_FORMAT_VERSION, deflate ? CODEC_DEFLATE : CODEC_RAW]), payload]);
}

/** The records of a row body, in order; throws if the body is not a well-formed version-2 body of `n` records. */
export function decodeLogBody(body: Buffer, n: number): LogRecord[] {
  if (body.length < 2 || body[0] !== LOG_FORMAT_VERSION) throw new Error(`log row: format version ${body[0]} is not ${LOG_FORMAT_VERSION}`);
  const codec = body[1];
  if (codec !== CODEC_RAW && codec !== CODEC_DEFLATE) throw new Error(`log row: unknown codec ${codec}`);
  const frames = codec === CODEC_DEFLATE ? inflateRawSync(body.subarray(2), { maxOutputLength: LOG_ROW_INFLATED_BYTES_MAX }) : body.subarray(2);
  const records: LogRecord[] = [];
  let at = 0;
  while (at < frames.length) {
    if (at + FRAME_HEADER_BYTES > frames.length) throw new Error('log row: a frame header runs past the body');
    const partition = frames.readUInt16LE(at);
    const length = frames.readUInt32LE(at + 2);
    const end = at + FRAME_HEADER_BYTES + length;
    if (end > frames.length) throw new Error('log row: a record runs past the body');
    records.push({ partition, body: frames.toString('utf8', at + FRAME_HEADER_BYTES, end) });
    at = end;
  }
  if (records.length !== n) throw new Error(`log row: ${records.length} records where the row says ${n}`);
  return records;
}
