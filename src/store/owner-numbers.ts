// The owner numbers of a shard file's idempotency and expiry rows: `idem_log` names a key's owner
// (`env:account`) by a small integer from `owner_numbers` and keeps only the key after it, and `due` keys
// its rows by that number, instead of the owner's ~22 characters. Store layer: the thread that opens the file.
// Invariant: a number names one owner for the life of the file; each mapping row carries a checksum,
// checked whenever it is read, so a damaged mapping never makes one account's key another's.
import type Database from 'better-sqlite3';
import { ownerNumberChecksum } from './row-checks.ts';
import { TextNumbers } from './text-numbers.ts';
import { ownerOfScope } from './tiers.ts';

export const OWNER_NUMBERS_SQL = `
  CREATE TABLE IF NOT EXISTS owner_numbers (n INTEGER PRIMARY KEY, owner TEXT NOT NULL UNIQUE, crc INTEGER NOT NULL);`;

/** The number of rows whose scope does not split as `owner:key` (not made by kobo): their `key` is the whole scope. */
export const WHOLE_SCOPE = 0;

/** A scope as a row stores it: the owner's part and the key after it, or WHOLE_SCOPE and the scope itself. */
export function splitScope(scope: string): { owner: string; key: string } | null {
  const owner = ownerOfScope(scope);
  return scope.charCodeAt(owner.length) === 58 /* ':' */ ? { owner, key: scope.slice(owner.length + 1) } : null;
}

export class OwnerNumbers extends TextNumbers {
  /** `table`: whose rows name owners through this (what a damaged mapping is reported against). */
  constructor(db: Database.Database, table: 'idem_log' | 'due' = 'idem_log') {
    super(db, { table: 'owner_numbers', column: 'owner', checksum: ownerNumberChecksum, reportedAs: table, noun: 'owner number' });
  }

  /** The owner a number names (a number with no sound mapping row is damage). */
  ownerOf(n: number): string {
    return this.textOf(n);
  }
}
