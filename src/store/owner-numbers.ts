// The owner numbers of a shard file's idempotency and expiry rows: `idem_log` names a key's owner
// (`env:account`) by a small integer from `owner_numbers` and keeps only the key after it, and `due` keys
// its rows by that number, instead of the owner's ~22 characters. Store layer: the thread that opens the file.
// Invariant: a number names one owner for the life of the file; each mapping row carries a checksum,
// checked whenever it is read, so a damaged mapping never makes one account's key another's.
import type Database from 'better-sqlite3';
import { Statements } from './statements.ts';
import { DamagedRowError, ownerNumberChecksum } from './row-checks.ts';
import { ownerOfScope } from './tiers.ts';

export const OWNER_NUMBERS_SQL = `
  CREATE TABLE IF NOT EXISTS owner_numbers (n INTEGER PRIMARY KEY, owner TEXT NOT NULL UNIQUE, crc INTEGER NOT NULL);`;

/** The number of rows whose scope does not split as `owner:key` (not made by kobo): their `key` is the whole scope. */
export const WHOLE_SCOPE = 0;

/** Numbers remembered in each direction (a cache: a miss costs one checked lookup). */
const OWNERS_CACHED_MAX = 100_000;

/** A scope as a row stores it: the owner's part and the key after it, or WHOLE_SCOPE and the scope itself. */
export function splitScope(scope: string): { owner: string; key: string } | null {
  const owner = ownerOfScope(scope);
  return scope.charCodeAt(owner.length) === 58 /* ':' */ ? { owner, key: scope.slice(owner.length + 1) } : null;
}

export class OwnerNumbers {
  private readonly statements: Statements;
  private readonly numbers = new Map<string, number>();
  private readonly owners = new Map<number, string>();

  /** `table`: whose rows name owners through this (what a damaged mapping is reported against). */
  constructor(
    db: Database.Database,
    private readonly table: 'idem_log' | 'due' = 'idem_log',
  ) {
    this.statements = new Statements(db);
  }

  /** The owner's number, made on first use when `create` (inside the caller's write transaction). */
  numberOf(owner: string, create: boolean): number | undefined {
    const cached = this.numbers.get(owner);
    if (cached !== undefined) return cached;
    const row = this.statements.get('SELECT n, crc FROM owner_numbers WHERE owner = ?').get(owner) as { n: number; crc: number } | undefined;
    let n: number | undefined;
    if (row !== undefined) {
      if (ownerNumberChecksum(row.n, owner) !== row.crc) throw new DamagedRowError(this.table, `owner number ${row.n} (${owner})`);
      n = row.n;
    } else if (create) {
      n = Number(this.statements.get('SELECT coalesce(max(n), 0) + 1 FROM owner_numbers').pluck().get());
      this.statements.get('INSERT INTO owner_numbers (n, owner, crc) VALUES (?, ?, ?)').run(n, owner, ownerNumberChecksum(n, owner));
    }
    if (n !== undefined) this.remember(n, owner);
    return n;
  }

  /** The owner a number names (a number with no sound mapping row is damage). */
  ownerOf(n: number): string {
    const cached = this.owners.get(n);
    if (cached !== undefined) return cached;
    const row = this.statements.get('SELECT owner, crc FROM owner_numbers WHERE n = ?').get(n) as { owner: string; crc: number } | undefined;
    if (row === undefined || ownerNumberChecksum(n, row.owner) !== row.crc) throw new DamagedRowError(this.table, `owner number ${n}`);
    this.remember(n, row.owner);
    return row.owner;
  }

  /** Forgets every cached number: a write transaction that made some was rolled back. */
  forget(): void {
    this.numbers.clear();
    this.owners.clear();
  }

  private remember(n: number, owner: string): void {
    if (this.numbers.size >= OWNERS_CACHED_MAX) (this.numbers.clear(), this.owners.clear());
    this.numbers.set(owner, n);
    this.owners.set(n, owner);
  }
}
