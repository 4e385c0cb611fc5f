// Finished bodies stored deflated with a dictionary per kind: every body reads back byte for byte, the
// dictionaries never change once shipped (their digests are pinned), and a stored body that does not
// decode is a damaged row, never a guess.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import path from 'node:path';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { crc32 } from 'node:zlib';
import { COLD_CODEC_VERSION, COLD_DICTIONARIES_V1, decodeColdBody, encodeColdBody } from '../../src/store/cold-codec.ts';
import { COLD_SQL, ColdTable } from '../../src/store/cold-table.ts';
import { DamagedRowError } from '../../src/store/row-checks.ts';
import { ENTITY_KINDS } from '../../src/store/tiers.ts';
import { tempDataDir } from '../helpers/server.ts';

/** SHA-256 of each version-1 dictionary: rows on disk depend on these exact bytes. */
const PINNED_V1: Record<string, string> = {
  txn: 'dc7ffa5d4ccf71eafbf0237c006b0a3f3485cf22b58b85e084b0036bfe7749b5',
  payment: 'ffb401d24cb08f83c622be815e5b448b7f6bd2f06987e359b3b4ecd922ae0157',
  transfer: 'ad1afc8d034284525a26be093cc6c4e698812a15379cd03f37f83c3d3849e4c3',
  order: 'd510cb5c3e2b7735040ef529d0bab6c434d268a6352d1def83b1187f1c1c61f6',
  exchange: '45ad85ad56dff7a9707f9e5e0f099386d0455d1f17a30fe6c949695f4051cc1c',
  credit: 'a79a3e31799a0f39dceb9e2bc7fb556f8b5df392b0fe092d2032a1259d39bd64',
  fx_quote: '179879d3d9bb93415bd3cd1068d742dde60eec792b371bdf143d5f29f31afbe7',
  service_quote: 'fe2520bb8c1597ebcc9dbca0121e5f719482f411bb601a27e591e91d21315a68',
};

describe('cold body codec', () => {
  it('the version-1 dictionaries → exactly the bytes rows were written with (a change needs a new version byte)', () => {
    for (const kind of ENTITY_KINDS) {
      assert.equal(createHash('sha256').update(COLD_DICTIONARIES_V1[kind]).digest('hex'), PINNED_V1[kind], kind);
    }
  });

  it('each kind\'s typical body → stored in at most a third of its JSON, read back byte for byte', () => {
    for (const kind of ENTITY_KINDS) {
      const json = COLD_DICTIONARIES_V1[kind].replaceAll('""', '"01M8CZ8JS01T19ZVCDW2H0P0MK"');
      const stored = encodeColdBody(kind, json);
      assert.ok(Buffer.isBuffer(stored), kind);
      assert.equal(stored[0], COLD_CODEC_VERSION);
      assert.ok(stored.length * 3 <= Buffer.byteLength(json), `${kind}: ${stored.length} of ${json.length} B`);
      assert.equal(decodeColdBody(kind, stored), json);
    }
  });

  it('any JSON text of any kind → read back byte for byte; what deflating would not shrink stays text', () => {
    fc.assert(
      fc.property(fc.constantFrom(...ENTITY_KINDS), fc.jsonValue(), (kind, value) => {
        const json = JSON.stringify(value) ?? 'null';
        const stored = encodeColdBody(kind, json);
        if (typeof stored === 'string') assert.equal(stored, json);
        else assert.ok(stored.length < Buffer.byteLength(json));
        assert.equal(decodeColdBody(kind, stored), json);
      }),
      { numRuns: 300, seed: 7 },
    );
  });

  it('a stored body with an unknown version byte, or that does not inflate (its checksum matching) → DamagedRowError on read', () => {
    const db = new Database(path.join(tempDataDir('cold-codec'), 'shard-0.db'));
    db.exec(COLD_SQL);
    const cold = new ColdTable(db);
    const body = COLD_DICTIONARIES_V1.payment.replaceAll('""', '"01M8CZ8JS01T19ZVCDW2H0P0MK"');
    cold.write([{ kind: 'payment', id: 'A', lsn: 1, partition: 0, body }, { kind: 'payment', id: 'B', lsn: 2, partition: 0, body }]);
    assert.equal(cold.read('payment', 'A', Number.POSITIVE_INFINITY), body);
    const stored = db.prepare("SELECT body FROM cold WHERE id = 'A'").pluck().get() as Buffer;
    const wrongVersion = Buffer.from(stored);
    wrongVersion[0] = 0x7f;
    const garbage = Buffer.concat([Buffer.from([COLD_CODEC_VERSION]), Buffer.alloc(12, 0xff)]);
    const update = db.prepare('UPDATE cold SET body = ?, crc = ? WHERE id = ?');
    update.run(wrongVersion, crc32(wrongVersion), 'A');
    update.run(garbage, crc32(garbage), 'B');
    assert.throws(() => cold.read('payment', 'A', Number.POSITIVE_INFINITY), DamagedRowError);
    assert.throws(() => cold.read('payment', 'B', Number.POSITIVE_INFINITY), DamagedRowError);
    db.close();
  });
});
