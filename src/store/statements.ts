// Prepared statements, each prepared once per connection and reused (preparing is the costly part of
// a sqlite call). Store layer, on whichever thread owns the connection.
import type Database from 'better-sqlite3';

export class Statements {
  private readonly cache = new Map<string, Database.Statement>();

  constructor(private readonly db: Database.Database) {}

  get(sql: string): Database.Statement {
    let statement = this.cache.get(sql);
    if (statement === undefined) {
      statement = this.db.prepare(sql);
      this.cache.set(sql, statement);
    }
    return statement;
  }
}
