// The console's session store at its bounds, on a simulated clock: the sessions kept at once, the idle
// limit, the absolute limit; and the cookie parser.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SessionStore, sessionIdOf, tokensEqual } from '../../src/console/session.ts';

const KEY = { secret: 'sk_test_abcdefgh', keyId: 'key_1', prefix: 'sk_test_ab', account: 'acme', env: 'test' as const };

describe('SessionStore', () => {
  it('create: at sessionsMax → the session seen longest ago is signed out, the others stay', () => {
    const store = new SessionStore({ idleMsMax: 60_000, ageMsMax: 600_000, sessionsMax: 3 });
    const [a, b, c] = [store.create(KEY, 0), store.create(KEY, 1), store.create(KEY, 2)];
    assert.ok(store.touch(a.id, 3) !== undefined, 'a is now the most recently seen');
    const d = store.create(KEY, 4);
    assert.equal(store.size, 3);
    assert.equal(store.touch(b.id, 5), undefined, 'b was seen longest ago');
    for (const s of [a, c, d]) assert.ok(store.touch(s.id, 6) !== undefined);
  });

  it('touch: idle past idleMsMax → gone; in use past ageMsMax → gone', () => {
    const store = new SessionStore({ idleMsMax: 1_000, ageMsMax: 3_000, sessionsMax: 10 });
    const idle = store.create(KEY, 0);
    assert.equal(store.touch(idle.id, 1_001), undefined);
    const busy = store.create(KEY, 10_000);
    for (let t = 10_500; t <= 13_000; t += 500) assert.ok(store.touch(busy.id, t) !== undefined, `alive at ${t}`);
    assert.equal(store.touch(busy.id, 13_001), undefined);
  });

  it('ids and tokens: 256-bit random, distinct per session', () => {
    const store = new SessionStore({ idleMsMax: 1_000, ageMsMax: 3_000, sessionsMax: 10 });
    const [a, b] = [store.create(KEY, 0), store.create(KEY, 0)];
    assert.match(a.id, /^[A-Za-z0-9_-]{43}$/);
    assert.notEqual(a.id, b.id);
    assert.notEqual(a.csrf, b.csrf);
    assert.ok(!a.id.includes(KEY.secret));
  });
});

describe('cookies and tokens', () => {
  it('sessionIdOf: the kobo_console value among others; absent → ""', () => {
    assert.equal(sessionIdOf('a=1; kobo_console=abc-_9; b=2'), 'abc-_9');
    assert.equal(sessionIdOf('kobo_consolex=1'), '');
    assert.equal(sessionIdOf(''), '');
  });

  it('tokensEqual: same → true; different or another length → false', () => {
    assert.equal(tokensEqual('abc', 'abc'), true);
    assert.equal(tokensEqual('abd', 'abc'), false);
    assert.equal(tokensEqual('ab', 'abc'), false);
  });
});
