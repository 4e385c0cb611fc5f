// Which webhook URLs a subscription may use: https on a public address in live; in sandbox also
// http(s) to loopback (127.0.0.1, [::1], localhost) so integrators can test locally. Private, link-local
// and other internal ranges are refused everywhere (no SSRF). Main thread.
// Invariant: a URL is checked at subscription time and its address again before every delivery.
import net from 'node:net';
import { lookup } from 'node:dns/promises';

const PRIVATE = new net.BlockList();
for (const [address, bits] of [['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['169.254.0.0', 16], ['172.16.0.0', 12], ['192.0.0.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['224.0.0.0', 4], ['240.0.0.0', 4]] as const) {
  PRIVATE.addSubnet(address, bits, 'ipv4');
}
for (const [address, bits] of [['fc00::', 7], ['fe80::', 10], ['::', 128], ['ff00::', 8]] as const) PRIVATE.addSubnet(address, bits, 'ipv6');
const LOOPBACK = new net.BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

export type AddressClass = 'public' | 'loopback' | 'private';

export function classifyAddress(ip: string): AddressClass {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  const address = mapped?.[1] ?? ip;
  const type = net.isIPv6(address) ? 'ipv6' : 'ipv4';
  if (LOOPBACK.check(address, type)) return 'loopback';
  if (PRIVATE.check(address, type)) return 'private';
  return 'public';
}

/** Null when the URL may be subscribed in this environment, else the reason. */
export function urlRejection(raw: string, env: 'test' | 'live'): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'url is not a valid absolute URL';
  }
  if (url.username !== '' || url.password !== '') return 'url must not carry credentials';
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'url must be https';
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const literal = net.isIP(host) !== 0;
  const kind: AddressClass = literal ? classifyAddress(host) : host === 'localhost' || host.endsWith('.localhost') ? 'loopback' : 'public';
  if (!literal && /\.(internal|local|lan|home|corp)$/i.test(host)) return 'url must be on a public address';
  if (kind === 'private') return 'url must be on a public address (private and internal ranges are refused)';
  if (kind === 'loopback') return env === 'test' ? null : 'live webhooks need a public https address (loopback is sandbox-only)';
  if (url.protocol !== 'https:') return 'url must be https (plain http is allowed only to loopback in the sandbox)';
  return null;
}

/** Resolves the URL's host at delivery time and refuses internal answers (DNS can change after subscribing). */
export async function deliveryRejection(raw: string, env: 'test' | 'live'): Promise<string | null> {
  const url = new URL(raw);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const addresses = net.isIP(host) !== 0 ? [host] : (await lookup(host, { all: true }).catch(() => [])).map((a) => a.address);
  if (addresses.length === 0) return `cannot resolve ${host}`;
  for (const address of addresses) {
    const kind = classifyAddress(address);
    if (kind === 'private' || (kind === 'loopback' && env !== 'test')) return `${host} resolves to a non-public address`;
  }
  return null;
}
