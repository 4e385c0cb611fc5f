// Which b-tree each written page belongs to: reads an strace of a server's pwrite64 calls (as
// `bench/disk.bench.ts --trace-writes` records them) and a shard file, and splits the bytes written to
// the -wal (journal frames, by the page number in each frame's header) and to the file itself
// (checkpoints, by offset) by the b-tree dbstat gives that page in the final file. Bench tool only.
// Run: npx tsx bench/wal-pages.ts --trace FILE --db shard-0.db [--payments N] [--from MS --to MS]
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';

/** Bytes of one WAL frame header (page number, commit size, salts, checksums). */
const WAL_FRAME_HEADER_BYTES = 24;

/** Journal commits (frames whose header carries the file's size in pages) by the b-tree of their last page. */
export const COMMITS = 'commits (count, not bytes)';

export interface PageBytes {
  /** Bytes written to the -wal for pages of this b-tree (frame headers included). */
  journal: number;
  /** Bytes written into the shard file itself (checkpoints) for its pages. */
  file: number;
  /** Journal frames of it. */
  frames: number;
}

/** The b-tree a page of the final file belongs to; the log's segment tables are one name, page 1 its own. */
export function pageOwners(dbFile: string): { owners: Map<number, string>; pageSizeBytes: number } {
  const db = new Database(dbFile, { readonly: true });
  try {
    const pageSizeBytes = db.pragma('page_size', { simple: true }) as number;
    const owners = new Map<number, string>();
    for (const row of db.prepare('SELECT name, pageno FROM dbstat').iterate() as IterableIterator<{ name: string; pageno: number }>) {
      owners.set(row.pageno, row.pageno === 1 ? 'page 1 (header)' : /^log_\d+$/.test(row.name) ? 'log segments' : row.name);
    }
    return { owners, pageSizeBytes };
  } finally {
    db.close();
  }
}

// `PID [SECONDS.MICROS] pwrite64(FD<path>, "\x..", LEN, OFFSET) = RET`
const PWRITE = /^\d+\s+(?:(\d+\.\d+)\s+)?pwrite64\(\d+<([^>]*)>, "(.*)"(?:\.\.\.)?, (\d+), (\d+)\) = (\d+)$/;

/**
 * Bytes by b-tree of the pwrite64 calls to `<dbFile>-wal` and `dbFile` in `traceFile`, only those
 * between `fromMs` and `toMs` (epoch milliseconds; needs strace's -ttt) when given.
 */
export function bytesByBtree(traceFile: string, dbFile: string, window: { fromMs?: number; toMs?: number } = {}): Map<string, PageBytes> {
  const { owners, pageSizeBytes } = pageOwners(dbFile);
  const dbName = path.basename(dbFile);
  const out = new Map<string, PageBytes>();
  const add = (name: string, part: 'journal' | 'file', bytes: number, frame: boolean): void => {
    let entry = out.get(name);
    if (entry === undefined) out.set(name, (entry = { journal: 0, file: 0, frames: 0 }));
    entry[part] += bytes;
    if (frame) entry.frames += 1;
  };
  // The page of the frame whose header was just written, per -wal path (its data follows in the next call).
  const framePage = new Map<string, number>();
  for (const line of fs.readFileSync(traceFile, 'utf8').split('\n')) {
    const m = PWRITE.exec(line);
    if (m === null) continue;
    const [, seconds, file, hex, , offsetText, writtenText] = m;
    const atMs = seconds === undefined ? 0 : Number(seconds) * 1000;
    const inWindow = (window.fromMs === undefined || atMs >= window.fromMs) && (window.toMs === undefined || atMs <= window.toMs);
    const written = Number(writtenText);
    const base = path.basename(file!);
    if (base === `${dbName}-wal`) {
      if (written === WAL_FRAME_HEADER_BYTES) {
        // strace prints the bytes as \xNN when any of them is not printable (a page number below 2^24 always).
        const bytes = /^(\\x[0-9a-f]{2})+$/.test(hex!) ? Buffer.from(hex!.replaceAll('\\x', ''), 'hex') : Buffer.alloc(0);
        const page = bytes.length >= 4 ? bytes.readUInt32BE(0) : 0;
        framePage.set(file!, page);
        if (inWindow) add(owners.get(page) ?? 'freed or moved since', 'journal', written, true);
        // Bytes 4–7: the file's size in pages on a transaction's last frame, 0 on the others.
        if (inWindow && bytes.length >= 8 && bytes.readUInt32BE(4) !== 0) add(COMMITS, 'journal', 0, true);
      } else if (written === pageSizeBytes) {
        const page = framePage.get(file!) ?? 0;
        if (inWindow) add(owners.get(page) ?? 'freed or moved since', 'journal', written, false);
      } else if (inWindow) add('wal header', 'journal', written, false);
    } else if (base === dbName) {
      const page = Math.floor(Number(offsetText) / pageSizeBytes) + 1;
      if (inWindow) add(owners.get(page) ?? 'freed or moved since', 'file', written, false);
    }
  }
  return out;
}

/** Rows of bytes a payment by b-tree, largest first, with the total. */
export function perPayment(bytes: Map<string, PageBytes>, payments: number): Array<{ btree: string; journal: number; file: number; frames: number }> {
  const rows = [...bytes.entries()].map(([btree, b]) => ({ btree, journal: Math.round(b.journal / payments), file: Math.round(b.file / payments), frames: b.frames }));
  rows.sort((a, b) => b.journal + b.file - (a.journal + a.file));
  const total = rows.reduce((t, r) => ({ btree: 'total', journal: t.journal + r.journal, file: t.file + r.file, frames: t.frames + r.frames }), { btree: 'total', journal: 0, file: 0, frames: 0 });
  return [...rows, total];
}

function arg(name: string): string | undefined {
  const at = process.argv.indexOf(name);
  return at < 0 ? undefined : process.argv[at + 1];
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith('wal-pages.ts') === true) {
  const trace = arg('--trace');
  const db = arg('--db');
  if (trace === undefined || db === undefined) throw new Error('usage: npx tsx bench/wal-pages.ts --trace FILE --db FILE [--payments N] [--from MS --to MS]');
  const payments = Number(arg('--payments') ?? '1');
  const from = arg('--from');
  const to = arg('--to');
  const rows = perPayment(bytesByBtree(trace, db, { fromMs: from === undefined ? undefined : Number(from), toMs: to === undefined ? undefined : Number(to) }), payments);
  process.stdout.write(`${'b-tree'.padEnd(32)} ${'journal'.padStart(8)} ${'file'.padStart(8)} ${'frames'.padStart(8)}\n`);
  for (const r of rows) process.stdout.write(`${r.btree.padEnd(32)} ${String(r.journal).padStart(8)} ${String(r.file).padStart(8)} ${String(r.frames).padStart(8)}\n`);
}
