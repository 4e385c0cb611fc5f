// The list index's pages against a brute-force answer over the same rows, in a real sqlite file: a
// customer's page with no status merges its per-status ranges; no page's query plan scans the table.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { CUSTOMER_STATUSES_MAX, LIST_SQL, ListIndex, type ListChange, type ListQuery } from '../../src/store/list-index.ts';
import { tempDataDir } from '../helpers/server.ts';

const OWNER = 'test:acme';
const STATUSES = ['pending', 'completed', 'failed', 'expired', null, ''] as const;

function openIndex(): { db: Database.Database; index: ListIndex } {
  const db = new Database(path.join(tempDataDir('list-index'), 'shard-0.db'));
  db.exec(LIST_SQL);
  return { db, index: new ListIndex(db) };
}

function row(i: number, customer: string, status: string | null): ListChange {
  return { kind: 'payment', id: `01P${String(i).padStart(6, '0')}`, owner: OWNER, customerId: customer, status, body: null, lsn: i };
}

function brute(rows: readonly ListChange[], q: ListQuery): string[] {
  const hits = rows.filter((r) => r.owner === q.owner && r.kind === q.kind && (q.customerId === null || r.customerId === q.customerId) && (q.status === null || r.status === q.status) && r.id > q.idAbove && r.id < q.idBelow);
  hits.sort((a, b) => (a.id < b.id ? 1 : -1) * (q.order === 'desc' ? 1 : -1));
  return hits.slice(0, q.rows).map((r) => r.id);
}

describe('list index', () => {
  it('a customer page without a status → the same rows, in the same order, as a brute-force filter (both directions, any cursor)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 2 }), fc.constantFrom(...STATUSES)), { minLength: 1, maxLength: 80 }),
        fc.integer({ min: 1, max: 25 }),
        fc.integer({ min: 0, max: 90 }),
        fc.boolean(),
        (specs, rowsMax, cursor, desc) => {
          const { db, index } = openIndex();
          const rows = specs.map(([c, status], i) => row(i, `cus_${c}`, status));
          index.apply(rows, []);
          const cursorId = `01P${String(cursor).padStart(6, '0')}`;
          const q: ListQuery = { owner: OWNER, kind: 'payment', customerId: 'cus_1', status: null, idAbove: desc ? '' : cursorId, idBelow: desc ? cursorId : '~', order: desc ? 'desc' : 'asc', rows: rowsMax };
          assert.deepEqual(index.page(q).map((r) => r.id), brute(rows, q));
          db.close();
        },
      ),
      { numRuns: 60, seed: 22 },
    );
  });

  it('every page query → an index search, never a scan of the table (EXPLAIN QUERY PLAN)', () => {
    const { db, index } = openIndex();
    index.apply([row(1, 'cus_1', 'pending')], []);
    const seen: string[] = [];
    const original = db.prepare.bind(db);
    (db as { prepare: typeof db.prepare }).prepare = ((sql: string) => {
      seen.push(sql);
      return original(sql);
    }) as typeof db.prepare;
    const fresh = new ListIndex(db);
    for (const [customerId, status] of [[null, null], ['cus_1', null], [null, 'pending'], ['cus_1', 'pending']] as const) {
      fresh.page({ owner: OWNER, kind: 'payment', customerId, status, idAbove: '', idBelow: '~', order: 'desc', rows: 21 });
    }
    const selects = seen.filter((sql) => sql.trimStart().startsWith('SELECT') && sql.includes('FROM lists'));
    assert.ok(selects.length >= 4, `page statements seen: ${selects.length}`);
    for (const sql of selects) {
      const args = (sql.match(/\?/g) ?? []).map(() => 1);
      const plan = (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...args) as Array<{ detail: string }>).map((p) => p.detail).join('; ');
      assert.doesNotMatch(plan, /\bSCAN\b/, `${sql} → ${plan}`);
    }
    db.close();
  });

  it(`a customer with more than CUSTOMER_STATUSES_MAX (${CUSTOMER_STATUSES_MAX}) statuses of one kind → the page asserts (the bound is a bug, not a slow page)`, () => {
    const { db, index } = openIndex();
    index.apply(Array.from({ length: CUSTOMER_STATUSES_MAX }, (_, i) => row(i, 'cus_1', `s${String(i).padStart(3, '0')}`)), []);
    const q: ListQuery = { owner: OWNER, kind: 'payment', customerId: 'cus_1', status: null, idAbove: '', idBelow: '~', order: 'desc', rows: 5 };
    assert.equal(index.page(q).length, 5, 'at the bound: served');
    index.apply([row(CUSTOMER_STATUSES_MAX, 'cus_1', 'one_more')], []);
    assert.throws(() => index.page(q), /more than 64 statuses/);
    db.close();
  });
});
