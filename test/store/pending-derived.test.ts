// PendingDerived (the derived rows waiting after the fsync) against a plain model: every read of a waiting
// cold version, idempotency record or list row, and every slice taken, must match what arrays of the same
// rows, searched naively, give. Random runs of adds and slices, then fixed cases for the edges.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { PendingDerived, type DerivedBatch, type DerivedPart } from '../../src/store/derived-rows.ts';
import type { ColdRow } from '../../src/store/cold-table.ts';
import type { IdemChange } from '../../src/store/idem-log.ts';
import type { ListChange, ListKind } from '../../src/store/list-index.ts';
import type { EntityKind } from '../../src/store/tiers.ts';

const KINDS: EntityKind[] = ['txn', 'payment', 'order'];
const LIST_KINDS: ListKind[] = ['payment', 'transaction'];
const OWNERS = ['test:acct_a', 'test:acct_b'];
const IDS = ['e1', 'e2', 'e3', 'e4'];

/** One random batch; LSNs are assigned in order when the run is built. */
const batchArb = fc.record({
  cold: fc.array(fc.record({ kind: fc.constantFrom(...KINDS), id: fc.constantFrom(...IDS), body: fc.constantFrom('', '{"x":1}') }), { maxLength: 4 }),
  idem: fc.array(fc.constantFrom('k1', 'k2', 'k3'), { maxLength: 2 }),
  list: fc.array(fc.record({ owner: fc.constantFrom(...OWNERS), kind: fc.constantFrom(...LIST_KINDS), id: fc.constantFrom(...IDS), status: fc.constantFrom('pending', 'succeeded') }), { maxLength: 3 }),
  sliceAfter: fc.option(fc.integer({ min: 1, max: 6 }), { nil: undefined }),
  part: fc.constantFrom<DerivedPart>('all', 'lists', 'rows'),
});

interface Model {
  cold: ColdRow[];
  idem: IdemChange[];
  list: ListChange[];
}

function build(raw: ReturnType<typeof batchArb.generate>['value'][], lsnStart: number): Array<{ batch: DerivedBatch; sliceAfter?: number; part: DerivedPart }> {
  let lsn = lsnStart;
  return raw.map((b) => {
    const cold: ColdRow[] = b.cold.map((c) => ({ kind: c.kind, id: c.id, lsn: lsn++, partition: 0, body: c.body }));
    const idem: IdemChange[] = b.idem.map((key) => ({ lsn: lsn++, partition: 0, op: { op: 'put', record: { scope: `test:acct_a:${key}`, fingerprint: 'f', status: 201, atMs: 1, json: '{}' } } }));
    const list: ListChange[] = b.list.map((l) => ({ owner: l.owner, kind: l.kind, id: l.id, customerId: null, status: l.status, body: null, lsn: lsn++ }));
    return { batch: { cold, idem, due: [], list }, part: b.part, ...(b.sliceAfter === undefined ? {} : { sliceAfter: b.sliceAfter }) };
  });
}

/** Checks every read the store makes against the model's arrays. */
function sameReads(pending: PendingDerived, model: Model): void {
  for (const kind of KINDS) {
    assert.deepEqual([...pending.coldIds(kind)].sort(), [...new Set(model.cold.filter((r) => r.kind === kind).map((r) => r.id))].sort(), `coldIds(${kind})`);
    for (const id of IDS) {
      const versions = model.cold.filter((r) => r.kind === kind && r.id === id);
      for (const before of [Number.POSITIVE_INFINITY, ...versions.map((r) => r.lsn), ...versions.map((r) => r.lsn + 1)]) {
        const expected = [...versions].reverse().find((r) => r.lsn < before);
        assert.equal(pending.readCold(kind, id, before), expected, `readCold(${kind}, ${id}, ${before})`);
      }
      for (const r of versions) assert.equal(pending.readColdExact(kind, id, r.lsn), r);
      assert.equal(pending.readColdExact(kind, id, -5), undefined);
    }
  }
  for (const change of model.idem) {
    const scope = change.op.op === 'put' ? change.op.record.scope : '';
    assert.equal(pending.readIdem(scope, change.lsn)?.record, change.op.op === 'put' ? change.op.record : undefined);
    assert.equal(pending.readIdem('test:acct_a:other', change.lsn), undefined, 'another scope at that seq is not found');
  }
  for (const owner of OWNERS) {
    for (const kind of LIST_KINDS) {
      const newest = new Map<string, ListChange>();
      for (const row of model.list) if (row.owner === owner && row.kind === kind) newest.set(row.id, row);
      const waiting = pending.listWaiting(owner, kind);
      assert.deepEqual([...waiting.keys()].sort(), [...newest.keys()].sort(), `listWaiting(${owner}, ${kind})`);
      for (const [id, row] of newest) assert.equal(waiting.get(id), row);
    }
  }
  assert.equal(pending.rows, model.cold.length + model.idem.length + model.list.length);
  assert.equal(pending.listRows, model.list.length);
  assert.equal(pending.otherRows, model.cold.length + model.idem.length);
}

test('pending derived rows: random adds and slices → reads and slices match a model of plain arrays', () => {
  fc.assert(
    fc.property(fc.array(batchArb, { minLength: 1, maxLength: 12 }), (raw) => {
      const pending = new PendingDerived();
      const model: Model = { cold: [], idem: [], list: [] };
      for (const { batch, sliceAfter, part } of build(raw, 1)) {
        pending.add(batch);
        model.cold.push(...batch.cold);
        model.idem.push(...batch.idem);
        model.list.push(...(batch.list ?? []));
        sameReads(pending, model);
        if (sliceAfter === undefined) continue;
        const taken = pending.takeSome(sliceAfter, part);
        // List rows leave first, then the cold and idempotency rows of the lowest LSNs (each table oldest
        // first); a slice of one part takes nothing of the other.
        const list = part === 'rows' ? [] : model.list.splice(0, Math.min(sliceAfter, model.list.length));
        const othersMax = part === 'lists' ? 0 : sliceAfter - list.length;
        const oldest = [...model.cold.map((r) => r.lsn), ...model.idem.map((c) => c.lsn)].sort((a, b) => a - b).slice(0, othersMax);
        const lsnMax = oldest.length === 0 ? Number.NEGATIVE_INFINITY : oldest[oldest.length - 1]!;
        const cold = model.cold.splice(0, model.cold.filter((r) => r.lsn <= lsnMax).length);
        const idem = model.idem.splice(0, model.idem.filter((c) => c.lsn <= lsnMax).length);
        assert.deepEqual(taken.list, list);
        assert.deepEqual(taken.cold, cold);
        assert.deepEqual(taken.idem, idem);
        sameReads(pending, model);
      }
      const rest = pending.take();
      assert.deepEqual(rest.cold, model.cold);
      assert.deepEqual(rest.list, model.list);
      sameReads(pending, { cold: [], idem: [], list: [] });
      assert.equal(pending.weight, 0);
    }),
    { numRuns: 300 },
  );
});

test('pending derived rows: two versions of one entity, the older taken → the newer still found, then none', () => {
  const pending = new PendingDerived();
  const first: ColdRow = { kind: 'payment', id: 'p1', lsn: 10, partition: 0, body: '{"v":1}' };
  const second: ColdRow = { kind: 'payment', id: 'p1', lsn: 20, partition: 0, body: '{"v":2}' };
  pending.add({ cold: [first], idem: [], due: [] });
  pending.add({ cold: [second], idem: [], due: [] });
  assert.equal(pending.readCold('payment', 'p1', 15), first);
  assert.equal(pending.readCold('payment', 'p1', Number.POSITIVE_INFINITY), second);
  assert.deepEqual(pending.takeSome(1).cold, [first]);
  assert.equal(pending.readCold('payment', 'p1', 15), undefined, 'the older version left with its slice');
  assert.equal(pending.readCold('payment', 'p1', Number.POSITIVE_INFINITY), second);
  assert.equal(pending.readCold('txn', 'p1', Number.POSITIVE_INFINITY), undefined, 'another kind with that id is another entity');
  pending.take();
  assert.equal(pending.readCold('payment', 'p1', Number.POSITIVE_INFINITY), undefined);
  assert.deepEqual([...pending.coldIds('payment')], []);
});

test('pending derived rows: weight counts each row at least 100 and falls back to 0 as slices leave', () => {
  const pending = new PendingDerived();
  const body = 'x'.repeat(500);
  pending.add({ cold: [{ kind: 'order', id: 'o1', lsn: 1, partition: 0, body }, { kind: 'order', id: 'o2', lsn: 2, partition: 0, body: '' }], idem: [], due: [{ lsn: 3, partition: 0, op: 'set', entry: { id: 'p', owner: 'test:acct_a', expiresAtMs: 5 } }] });
  assert.equal(pending.weight, 500 + 100 + 100);
  pending.takeSome(1);
  assert.equal(pending.weight, 200);
  pending.takeSome(5);
  assert.equal(pending.weight, 0);
  assert.equal(pending.rows, 0);
});
