// The JSON shape policy on raw bytes: depth and member bounds, and top-level numbers written as integers.
// Pure function tests; the HTTP behaviour is in envelope.test.ts and hostile.test.ts.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { jsonShapeRejection } from '../../src/http/json-policy.ts';

const policy = { depthMax: 32, membersMax: 1_000 };
const check = (text: string) => jsonShapeRejection(Buffer.from(text), policy);

describe('jsonShapeRejection: top-level numbers', () => {
  it('integers, true, false, null and strings that look like floats at the top level → accepted', () => {
    for (const text of ['{"a":1,"b":-20000,"c":0}', '{"t":true,"f":false,"n":null}', '{"s":"1.5e3","e":"true"}', '{ "a" : 12 , "b" : 3 }']) {
      assert.equal(check(text), null, text);
    }
  });

  it('a fraction or an exponent at the top level → VALIDATION naming the key', () => {
    for (const [text, key] of [['{"amount_minor":1.0}', 'amount_minor'], ['{"x":1,"seconds":6e1}', 'seconds'], ['{"a":"z","b":-2E2}', 'b'], ['{"k":1e-0}', 'k']] as const) {
      const rejection = check(text);
      assert.equal(rejection?.code, 'VALIDATION', text);
      assert.match(rejection?.message ?? '', new RegExp(`^${key} must be an integer`), text);
    }
  });

  it('floats nested inside objects or arrays (metadata, snapshots) → accepted', () => {
    assert.equal(check('{"metadata":{"rating":4.5,"list":[1.25,2e3]},"amount_minor":100}'), null);
  });

  it('a long key is shown at most 64 bytes long', () => {
    const rejection = check(`{"${'k'.repeat(1_000)}":1.5}`);
    assert.ok(rejection !== null && rejection.message.startsWith(`${'k'.repeat(64)} must`));
  });
});

describe('jsonShapeRejection: bounds', () => {
  it('depth 32 → accepted; 33 → VALIDATION', () => {
    assert.equal(check(`${'['.repeat(32)}${']'.repeat(32)}`), null);
    assert.equal(check(`${'['.repeat(33)}${']'.repeat(33)}`)?.code, 'VALIDATION');
  });

  it(`${policy.membersMax} members → accepted; one more → VALIDATION`, () => {
    assert.equal(check(`[${Array(policy.membersMax).fill('1').join(',')}]`), null);
    assert.equal(check(`[${Array(policy.membersMax + 1).fill('1').join(',')}]`)?.code, 'VALIDATION');
  });
});
