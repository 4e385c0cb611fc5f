// The webhook URL policy: every address form classified, host names normalised, ports and schemes
// per environment, and delivery resolution that checks every DNS answer and pins the one it approved.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { classifyAddress, resolveDelivery, urlRejection, type LookupAll } from '../../src/webhooks/url-policy.ts';
import { post } from '../../src/webhooks/dispatcher.ts';

const ADDRESSES: Array<[string, string]> = [
  ['8.8.8.8', 'public'],
  ['1.1.1.1', 'public'],
  ['2606:4700:4700::1111', 'public'],
  ['0.0.0.0', 'unspecified'],
  ['0.1.2.3', 'reserved'],
  ['10.1.2.3', 'private'],
  ['172.16.0.1', 'private'],
  ['172.31.255.255', 'private'],
  ['172.32.0.1', 'public'],
  ['192.168.1.1', 'private'],
  ['127.0.0.1', 'loopback'],
  ['127.255.255.254', 'loopback'],
  ['169.254.169.254', 'link_local'],
  ['100.64.0.1', 'shared'],
  ['100.127.255.255', 'shared'],
  ['100.128.0.1', 'public'],
  ['192.0.0.8', 'reserved'],
  ['192.0.2.10', 'documentation'],
  ['198.51.100.7', 'documentation'],
  ['203.0.113.9', 'documentation'],
  ['198.18.0.1', 'reserved'],
  ['224.0.0.1', 'multicast'],
  ['239.255.255.250', 'multicast'],
  ['240.0.0.1', 'reserved'],
  ['255.255.255.255', 'reserved'],
  ['::', 'unspecified'],
  ['::1', 'loopback'],
  ['::ffff:127.0.0.1', 'loopback'],
  ['::ffff:7f00:1', 'loopback'],
  ['::ffff:10.0.0.1', 'private'],
  ['::ffff:8.8.8.8', 'reserved'],
  ['::127.0.0.1', 'loopback'],
  ['::7f00:1', 'loopback'],
  ['::a9fe:a9fe', 'link_local'],
  ['::ffff:0:127.0.0.1', 'loopback'],
  ['::ffff:0:a9fe:a9fe', 'link_local'],
  ['64:ff9b::a9fe:a9fe', 'link_local'],
  ['64:ff9b::127.0.0.1', 'loopback'],
  ['64:ff9b::808:808', 'public'],
  ['64:ff9b:1::1', 'reserved'],
  ['2002:7f00:1::', 'loopback'],
  ['2002:a00:1::1', 'private'],
  ['2002:808:808::1', 'public'],
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'reserved'],
  ['2001:db8::1', 'documentation'],
  ['3fff::1', 'documentation'],
  ['fc00::1', 'private'],
  ['fd12:3456::1', 'private'],
  ['fe80::1', 'link_local'],
  ['fec0::1', 'private'],
  ['ff02::1', 'multicast'],
  ['100::1', 'reserved'],
  ['1::1', 'reserved'],
  ['1:2:3:4:5:6:7.8.9.10', 'reserved'],
  ['[::1]', 'loopback'],
  ['not-an-ip', 'reserved'],
];

describe('classifyAddress', () => {
  for (const [address, expected] of ADDRESSES) {
    it(`classifyAddress: ${address} → ${expected}`, () => assert.equal(classifyAddress(address), expected));
  }
});

const LIVE_REFUSED = [
  'https://localhost./hook',
  'https://LOCALHOST/hook',
  'https://foo.localhost/hook',
  'https://foo.internal./hook',
  'https://metadata/hook',
  'https://[::127.0.0.1]/hook',
  'https://[::ffff:0:127.0.0.1]/hook',
  'https://[64:ff9b::a9fe:a9fe]/hook',
  'https://[2002:7f00:1::]/hook',
  'https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/hook',
  'https://[::ffff:127.0.0.1]/hook',
  'https://127.1/hook',
  'https://2130706433/hook',
  'https://0x7f.0.0.1/hook',
  'https://169.254.169.254/latest',
  'https://100.64.1.1/hook',
  'https://192.0.2.1/hook',
  'https://198.51.100.1/hook',
  'https://203.0.113.1/hook',
  'https://[2001:db8::1]/hook',
  'https://224.0.0.1/hook',
  'https://0.0.0.0/hook',
  'https://[::]/hook',
  'https://[fe80::1]/hook',
  'https://example.com:8443/hook',
  'https://example.com:80/hook',
  'http://example.com/hook',
  'ftp://example.com/hook',
  'https://user:pw@example.com/hook',
];

describe('urlRejection', () => {
  for (const url of LIVE_REFUSED) {
    it(`urlRejection live: ${url} → refused`, () => assert.notEqual(urlRejection(url, 'live'), null));
  }
  it('urlRejection live: public https on 443 → allowed (also with an explicit :443 and IDNA names)', () => {
    assert.equal(urlRejection('https://hooks.example.com/kobo', 'live'), null);
    assert.equal(urlRejection('https://hooks.example.com:443/kobo', 'live'), null);
    assert.equal(urlRejection('https://hooks.example.com./kobo', 'live'), null);
    assert.equal(urlRejection('https://bücher.example/kobo', 'live'), null);
    assert.equal(urlRejection('https://8.8.8.8/kobo', 'live'), null);
  });
  it('urlRejection live: another port only when the knob lists it', () => {
    assert.notEqual(urlRejection('https://hooks.example.com:8443/kobo', 'live'), null);
    assert.equal(urlRejection('https://hooks.example.com:8443/kobo', 'live', { livePorts: [8443] }), null);
  });
  it('urlRejection sandbox: loopback over http on any port stays allowed; private stays refused', () => {
    assert.equal(urlRejection('http://127.0.0.1:4000/hook', 'test'), null);
    assert.equal(urlRejection('http://[::1]:4000/hook', 'test'), null);
    assert.equal(urlRejection('http://localhost:4000/hook', 'test'), null);
    assert.equal(urlRejection('http://localhost.:4000/hook', 'test'), null);
    assert.notEqual(urlRejection('http://10.0.0.1:4000/hook', 'test'), null);
    assert.notEqual(urlRejection('https://[::ffff:0:a9fe:a9fe]/hook', 'test'), null);
    assert.notEqual(urlRejection('http://example.com/hook', 'test'), null);
  });
});

const fixed = (answers: string[][]): { lookup: LookupAll; calls: () => number } => {
  let n = 0;
  return {
    lookup: async () => (answers[Math.min(n++, answers.length - 1)] ?? []).map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
    calls: () => n,
  };
};

describe('resolveDelivery', () => {
  it('resolveDelivery: a name resolving to a private, link-local or loopback (live) address → refused', async () => {
    for (const answer of [['10.0.0.5'], ['169.254.169.254'], ['8.8.8.8', '192.168.0.1'], ['::ffff:127.0.0.1'], ['fd00::1']]) {
      const result = await resolveDelivery('https://hooks.example.com/kobo', 'live', fixed([answer]).lookup);
      assert.equal(typeof result, 'string', JSON.stringify(answer));
    }
    assert.equal(typeof (await resolveDelivery('https://hooks.example.com/kobo', 'live', fixed([['127.0.0.1']]).lookup)), 'string');
    assert.equal(typeof (await resolveDelivery('https://hooks.example.com/kobo', 'live', fixed([[]]).lookup)), 'string');
  });
  it('resolveDelivery: a public answer → the target pins that address and keeps the name', async () => {
    const result = await resolveDelivery('https://Hooks.Example.com./kobo', 'live', fixed([['93.184.216.34']]).lookup);
    assert.ok(typeof result !== 'string');
    assert.equal(result.address, '93.184.216.34');
    assert.equal(result.host, 'hooks.example.com');
  });
  it('post: connects to the pinned address once, whatever DNS answers later (no rebinding window)', async () => {
    const seen: Array<{ host: string | undefined; body: string }> = [];
    const receiver = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({ host: req.headers.host, body });
        res.writeHead(302, { location: 'http://127.0.0.1:1/elsewhere' }).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const port = (receiver.address() as AddressInfo).port;
    try {
      // First answer loopback (allowed in the sandbox), later answers an internal host: never asked again.
      const dns = fixed([['127.0.0.1'], ['10.9.9.9']]);
      const target = await resolveDelivery(`http://hooks.localhost:${port}/in`, 'test', dns.lookup);
      assert.ok(typeof target !== 'string', String(target));
      const status = await post(target, { 'content-type': 'application/json' }, '{"ok":true}', 2_000);
      assert.equal(status, 302, 'a redirect is returned as is, never followed');
      assert.equal(dns.calls(), 1);
      assert.equal(seen.length, 1);
      assert.equal(seen[0]!.host, `hooks.localhost:${port}`);
      assert.equal(seen[0]!.body, '{"ok":true}');
    } finally {
      receiver.close();
    }
  });
});

describe('post: every approved address', () => {
  it('post: a name answering ::1 first still reaches a receiver that listens on 127.0.0.1 only', async () => {
    const receiver = http.createServer((_req, res) => res.writeHead(204).end());
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const port = (receiver.address() as AddressInfo).port;
    try {
      const target = await resolveDelivery(`http://localhost:${port}/in`, 'test', fixed([['::1', '127.0.0.1']]).lookup);
      assert.ok(typeof target !== 'string', String(target));
      assert.equal(await post(target, {}, '{}', 3_000), 204);
    } finally {
      receiver.close();
    }
  });
});
