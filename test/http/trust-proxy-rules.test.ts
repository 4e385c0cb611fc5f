// The trust-proxy rules as pure functions: KOBO_TRUST_PROXY parsing, the walk back through
// X-Forwarded-For and Forwarded, hop counts as Express's `trust proxy` counts them, malformed hops,
// IPv6 forms, and the bound on how far a chain is walked. No server (trust-proxy.test.ts has those).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { FORWARDED_HOPS_MAX, TrustProxy, forwardedAddress, forwardedFors, readForwarded, type TrustProxyConfig } from '../../src/http/trust-proxy.ts';

function policy(setting: string, header = 'x-forwarded-for'): TrustProxy | null {
  return TrustProxy.of(loadConfig({ KOBO_TRUST_PROXY: setting, KOBO_TRUST_PROXY_HEADER: header }).trustProxy);
}

function trusted(setting: string, header?: string): TrustProxy {
  const p = policy(setting, header);
  assert.ok(p !== null);
  return p;
}

describe('KOBO_TRUST_PROXY: parsing', () => {
  it('config: unset, empty or 0 → no policy (the header is never read)', () => {
    assert.equal(TrustProxy.of(loadConfig({}).trustProxy), null);
    assert.equal(policy(''), null);
    assert.equal(policy('0'), null);
  });

  it('config: a count, a list with spaces, a header name in any case → accepted', () => {
    assert.deepEqual(loadConfig({ KOBO_TRUST_PROXY: '2' }).trustProxy, { hops: 2, cidrs: [], header: 'x-forwarded-for' } satisfies TrustProxyConfig);
    assert.deepEqual(loadConfig({ KOBO_TRUST_PROXY: ' 10.0.0.0/8 , ::1,fd00::/8', KOBO_TRUST_PROXY_HEADER: 'Forwarded' }).trustProxy, { hops: 0, cidrs: ['10.0.0.0/8', '::1', 'fd00::/8'], header: 'forwarded' });
  });

  it('config: a count above the bound, a word, a bad block or an unknown header → ConfigError naming the variable', () => {
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ KOBO_TRUST_PROXY: String(FORWARDED_HOPS_MAX + 1) }, /^config: KOBO_TRUST_PROXY must be a hop count from 0 to 32 or a comma-separated list/],
      [{ KOBO_TRUST_PROXY: 'true' }, /^config: KOBO_TRUST_PROXY: "true" is not an IP address or CIDR block/],
      [{ KOBO_TRUST_PROXY: '10.0.0.0/33' }, /^config: KOBO_TRUST_PROXY: "10.0.0.0\/33" is not an IP address or CIDR block/],
      [{ KOBO_TRUST_PROXY: '1', KOBO_TRUST_PROXY_HEADER: 'x-real-ip' }, /^config: KOBO_TRUST_PROXY_HEADER must be one of x-forwarded-for, forwarded, got "x-real-ip"$/],
    ];
    for (const [env, message] of cases) assert.throws(() => loadConfig(env), (error: unknown) => error instanceof ConfigError && message.test(error.message));
  });
});

describe('trust proxy: the walk back', () => {
  it('hops N: the Nth address from the right of the header (the peer counts as hop 0)', () => {
    const chain = '198.51.100.1, 203.0.113.7, 10.0.0.2, 10.0.0.3';
    assert.equal(trusted('1').clientOf('10.0.0.9', chain), '10.0.0.3');
    assert.equal(trusted('2').clientOf('10.0.0.9', chain), '10.0.0.2');
    assert.equal(trusted('3').clientOf('10.0.0.9', chain), '203.0.113.7');
  });

  it('hops N with fewer addresses than N → the furthest one (the leftmost)', () => {
    assert.equal(trusted('5').clientOf('10.0.0.9', '203.0.113.7, 10.0.0.2'), '203.0.113.7');
  });

  it('hops N, no header → the peer', () => {
    assert.equal(trusted('1').clientOf('10.0.0.9', ''), '10.0.0.9');
  });

  it('list: an untrusted peer → the peer, whatever the header says', () => {
    assert.equal(trusted('10.0.0.0/8').clientOf('192.0.2.1', '203.0.113.7'), '192.0.2.1');
  });

  it('list: trusted hops are passed over until the first untrusted one; all trusted → the leftmost', () => {
    const p = trusted('10.0.0.0/8, 2001:db8::/32');
    assert.equal(p.clientOf('10.0.0.9', '198.51.100.1, 203.0.113.7, 10.1.1.1, 2001:db8::5'), '203.0.113.7');
    assert.equal(p.clientOf('10.0.0.9', '10.1.1.1, 10.2.2.2'), '10.1.1.1');
  });

  it('a malformed or unnamed hop → the proxy that wrote it (the address to its right)', () => {
    const p = trusted('10.0.0.0/8');
    assert.equal(p.clientOf('10.0.0.9', 'unknown'), '10.0.0.9');
    assert.equal(p.clientOf('10.0.0.9', '203.0.113.7, junk, 10.0.0.5'), '10.0.0.5');
    assert.equal(p.clientOf('10.0.0.9', '203.0.113.7,'), '10.0.0.9');
  });

  it(`a chain of trusted hops longer than ${FORWARDED_HOPS_MAX} → walked ${FORWARDED_HOPS_MAX} hops back, no further`, () => {
    const hops = Array.from({ length: FORWARDED_HOPS_MAX + 8 }, (_, i) => `10.0.${Math.floor(i / 250)}.${(i % 250) + 1}`);
    assert.equal(trusted('10.0.0.0/8').clientOf('10.9.9.9', hops.join(',')), hops[hops.length - FORWARDED_HOPS_MAX]);
  });

  it('the trust memo past its bound (5,000 distinct peers) → starts over; every decision stays right', () => {
    const p = trusted('10.0.0.0/8');
    for (let i = 0; i < 5_000; i++) {
      const peer = `192.0.${Math.floor(i / 250)}.${i % 250}`;
      assert.equal(p.clientOf(peer, '203.0.113.7'), peer);
    }
    assert.equal(p.clientOf('10.0.0.9', '203.0.113.7'), '203.0.113.7');
    assert.equal(p.clientOf('192.0.1.1', '203.0.113.7'), '192.0.1.1');
  });

  it('IPv4-mapped IPv6 in the header → the IPv4 address; upper-case IPv6 → lower case', () => {
    assert.equal(trusted('1').clientOf('::1', '::ffff:203.0.113.7'), '203.0.113.7');
    assert.equal(trusted('1').clientOf('::1', '2001:DB8::A'), '2001:db8::a');
  });
});

describe('trust proxy: header forms', () => {
  it('forwardedAddress: ports and brackets dropped; anything else that is no address → null', () => {
    assert.equal(forwardedAddress(' 203.0.113.7 '), '203.0.113.7');
    assert.equal(forwardedAddress('203.0.113.7:8080'), '203.0.113.7');
    assert.equal(forwardedAddress('[2001:db8::17]:4711'), '2001:db8::17');
    assert.equal(forwardedAddress('[2001:db8::17]'), '2001:db8::17');
    for (const bad of ['', 'unknown', '_hidden', '[2001:db8::17', '[2001:db8::17]x', '203.0.113.7:http', '2001:db8::17:99999x', '999.0.0.1']) assert.equal(forwardedAddress(bad), null, bad);
  });

  it('forwardedFors: each element\'s for=, quoted values unquoted, commas and semicolons inside quotes kept', () => {
    assert.deepEqual(forwardedFors('for=192.0.2.60;proto=http;by=203.0.113.43'), ['192.0.2.60']);
    assert.deepEqual(forwardedFors('For="[2001:db8:cafe::17]:4711", for=198.51.100.17'), ['[2001:db8:cafe::17]:4711', '198.51.100.17']);
    assert.deepEqual(forwardedFors('by="a,b;c";for=192.0.2.1, proto=https'), ['192.0.2.1', '']);
  });

  it('Forwarded policy: hops 1 → the rightmost element\'s for=', () => {
    assert.equal(trusted('1', 'forwarded').clientOf('10.0.0.9', 'for=198.51.100.1, for="[2001:db8::9]:443";proto=https'), '2001:db8::9');
  });

  it('readForwarded: absent → "" without walking the headers; several lines → joined with commas in order', () => {
    let walked = false;
    const none = { getHeader: () => '', forEach: () => { walked = true; } };
    assert.equal(readForwarded(none, 'x-forwarded-for'), '');
    assert.equal(walked, false);
    const lines: Array<[string, string]> = [['host', 'x'], ['x-forwarded-for', '1.1.1.1'], ['forwarded', 'for=9.9.9.9'], ['x-forwarded-for', '2.2.2.2, 3.3.3.3']];
    const two = { getHeader: (name: string) => lines.find(([n]) => n === name)?.[1] ?? '', forEach: (cb: (n: string, v: string) => void) => lines.forEach(([n, v]) => cb(n, v)) };
    assert.equal(readForwarded(two, 'x-forwarded-for'), '1.1.1.1,2.2.2.2, 3.3.3.3');
  });
});
