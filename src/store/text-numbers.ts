// Small integers standing for long text in a shard file's rows (an owner `env:account`, a customer id):
// a mapping table `(n, <text>, crc)` and a cache of it both ways. Store layer: the thread that opens the
// file. Invariant: a number names one text for the life of the file; each mapping row's checksum is
// checked whenever it is read, so a damaged mapping never makes one owner's or customer's rows another's.
import type Database from 'better-sqlite3';
import { Statements } from './statements.ts';
import { DamagedRowError } from './row-checks.ts';

/** Numbers remembered in each direction (a cache: a miss costs one checked lookup). */
const TEXTS_CACHED_MAX = 100_000;

export interface TextNumbering {
  /** The mapping table and its text column. */
  table: string;
  column: string;
  /** The checksum a mapping row carries. */
  checksum: (n: number, text: string) => number;
  /** Whose rows name texts through this: what a damaged mapping is reported against. */
  reportedAs: DamagedRowError['table'];
  /** What a number is called in that report ("owner number", "customer number"). */
  noun: string;
}

export class TextNumbers {
  private readonly statements: Statements;
  private readonly numbers = new Map<string, number>();
  private readonly texts = new Map<number, string>();

  constructor(db: Database.Database, private readonly numbering: TextNumbering) {
    this.statements = new Statements(db);
  }

  /** The text's number, made on first use when `create` (inside the caller's write transaction). */
  numberOf(text: string, create: boolean): number | undefined {
    const cached = this.numbers.get(text);
    if (cached !== undefined) return cached;
    const { table, column, checksum } = this.numbering;
    const row = this.statements.get(`SELECT n, crc FROM ${table} WHERE ${column} = ?`).get(text) as { n: number; crc: number } | undefined;
    let n: number | undefined;
    if (row !== undefined) {
      if (checksum(row.n, text) !== row.crc) throw new DamagedRowError(this.numbering.reportedAs, `${this.numbering.noun} ${row.n} (${text})`);
      n = row.n;
    } else if (create) {
      n = Number(this.statements.get(`SELECT coalesce(max(n), 0) + 1 FROM ${table}`).pluck().get());
      this.statements.get(`INSERT INTO ${table} (n, ${column}, crc) VALUES (?, ?, ?)`).run(n, text, checksum(n, text));
    }
    if (n !== undefined) this.remember(n, text);
    return n;
  }

  /** The text a number names (a number with no sound mapping row is damage). */
  textOf(n: number): string {
    const cached = this.texts.get(n);
    if (cached !== undefined) return cached;
    const { table, column, checksum } = this.numbering;
    const row = this.statements.get(`SELECT ${column} AS text, crc FROM ${table} WHERE n = ?`).get(n) as { text: string; crc: number } | undefined;
    if (row === undefined || checksum(n, row.text) !== row.crc) throw new DamagedRowError(this.numbering.reportedAs, `${this.numbering.noun} ${n}`);
    this.remember(n, row.text);
    return row.text;
  }

  /** Forgets every cached number: a write transaction that made some was rolled back. */
  forget(): void {
    this.numbers.clear();
    this.texts.clear();
  }

  private remember(n: number, text: string): void {
    if (this.numbers.size >= TEXTS_CACHED_MAX) (this.numbers.clear(), this.texts.clear());
    this.numbers.set(text, n);
    this.texts.set(n, text);
  }
}
