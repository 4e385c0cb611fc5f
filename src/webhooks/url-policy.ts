// The one policy for webhook URLs, applied when a subscription is created and again, on the resolved
// address, before every delivery: normalise the host, classify every address form (IPv4, IPv6 and
// IPv4 embedded in IPv6), allow only public https on port 443 in live; the sandbox also allows
// loopback (http or https, any port) so integrators can test locally. Main thread.
// Invariant: a delivery connects to exactly the address this policy approved (see resolveDelivery).
import net from 'node:net';
import { domainToASCII } from 'node:url';
import { lookup as dnsLookup } from 'node:dns/promises';

export type AddressClass =
  | 'public'
  | 'loopback'
  | 'private'
  | 'link_local'
  | 'shared' // CGNAT 100.64.0.0/10
  | 'documentation'
  | 'multicast'
  | 'reserved'
  | 'unspecified';

export type WebhookEnv = 'test' | 'live';

export interface UrlPolicyOptions {
  /** Ports a live URL may use besides 443 (KOBO_WEBHOOK_LIVE_PORTS). */
  livePorts?: readonly number[];
}

/** A DNS lookup (every address of a name); injectable so tests need no DNS. */
export type LookupAll = (host: string) => Promise<Array<{ address: string; family: number }>>;

export const systemLookup: LookupAll = (host) => dnsLookup(host, { all: true, verbatim: true });

type V4Range = readonly [base: number, bits: number, kind: AddressClass];

const ip4 = (a: number, b: number, c: number, d: number): number => ((a << 24) | (b << 16) | (c << 8) | d) >>> 0;

// Most specific first: the first matching range decides.
const V4_RANGES: readonly V4Range[] = [
  [ip4(0, 0, 0, 0), 32, 'unspecified'],
  [ip4(0, 0, 0, 0), 8, 'reserved'], // "this network"
  [ip4(10, 0, 0, 0), 8, 'private'],
  [ip4(100, 64, 0, 0), 10, 'shared'],
  [ip4(127, 0, 0, 0), 8, 'loopback'],
  [ip4(169, 254, 0, 0), 16, 'link_local'],
  [ip4(172, 16, 0, 0), 12, 'private'],
  [ip4(192, 0, 0, 0), 24, 'reserved'], // IETF protocol assignments
  [ip4(192, 0, 2, 0), 24, 'documentation'],
  [ip4(192, 88, 99, 0), 24, 'reserved'], // 6to4 relay anycast
  [ip4(192, 168, 0, 0), 16, 'private'],
  [ip4(198, 18, 0, 0), 15, 'reserved'], // benchmarking
  [ip4(198, 51, 100, 0), 24, 'documentation'],
  [ip4(203, 0, 113, 0), 24, 'documentation'],
  [ip4(224, 0, 0, 0), 4, 'multicast'],
  [ip4(240, 0, 0, 0), 4, 'reserved'], // includes 255.255.255.255
];

function classifyV4(value: number): AddressClass {
  for (const [base, bits, kind] of V4_RANGES) {
    const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
    if (((value & mask) >>> 0) === base) return kind;
  }
  return 'public';
}

function parseV4(text: string): number | null {
  const parts = text.split('.');
  if (parts.length !== 4) return null;
  let value = 0;
  for (const part of parts) {
    if (!/^\d{1,3}$/.test(part) || Number(part) > 255) return null;
    value = value * 256 + Number(part);
  }
  return value >>> 0;
}

/** Eight 16-bit groups, or null when `text` is not an IPv6 address (zone ids are refused). */
export function parseV6(text: string): number[] | null {
  if (!net.isIPv6(text) || text.includes('%')) return null;
  let head = text;
  let tail: number[] = [];
  const lastColon = text.lastIndexOf(':');
  const last = text.slice(lastColon + 1);
  if (last.includes('.')) {
    const v4 = parseV4(last);
    if (v4 === null) return null;
    tail = [v4 >>> 16, v4 & 0xffff];
    head = text.slice(0, lastColon + 1);
    if (!head.endsWith('::')) head = head.slice(0, -1);
  }
  const gap = head.indexOf('::');
  const left = gap < 0 ? head : head.slice(0, gap);
  const right = gap < 0 ? null : head.slice(gap + 2);
  const groups = (s: string): number[] => (s === '' ? [] : s.split(':').map((h) => parseInt(h, 16)));
  const leftGroups = groups(left);
  const rightGroups = right === null ? [] : groups(right);
  const fill = 8 - leftGroups.length - rightGroups.length - tail.length;
  if (fill < 0 || (right === null && fill !== 0)) return null;
  return [...leftGroups, ...new Array<number>(fill).fill(0), ...rightGroups, ...tail];
}

const v4Of = (hi: number, lo: number): number => ((hi << 16) | lo) >>> 0;

/** The IPv4 address an IPv6 address carries (mapped, compatible, SIIT, NAT64, 6to4), if any. */
function embeddedV4(g: readonly number[]): number | null {
  const zero = (from: number, to: number): boolean => g.slice(from, to).every((x) => x === 0);
  if (zero(0, 5) && g[5] === 0xffff) return v4Of(g[6]!, g[7]!); // ::ffff:a.b.c.d (mapped)
  if (zero(0, 4) && g[4] === 0xffff && g[5] === 0) return v4Of(g[6]!, g[7]!); // ::ffff:0:a.b.c.d (SIIT)
  if (zero(0, 6)) return v4Of(g[6]!, g[7]!); // ::a.b.c.d (compatible); :: and ::1 are classified before
  if (g[0] === 0x64 && g[1] === 0xff9b && zero(2, 6)) return v4Of(g[6]!, g[7]!); // 64:ff9b::/96 (NAT64)
  if (g[0] === 0x2002) return v4Of(g[1]!, g[2]!); // 2002::/16 (6to4)
  return null;
}

function classifyV6(g: readonly number[]): AddressClass {
  const zero = (from: number, to: number): boolean => g.slice(from, to).every((x) => x === 0);
  if (zero(0, 8)) return 'unspecified';
  if (zero(0, 7) && g[7] === 1) return 'loopback';
  const v4 = embeddedV4(g);
  if (v4 !== null) {
    const kind = classifyV4(v4);
    // An embedded public IPv4 is still reached through a translator or tunnel we do not vouch for.
    return kind === 'public' ? (g[0] === 0x2002 || g[0] === 0x64 ? 'public' : 'reserved') : kind;
  }
  const first = g[0]!;
  if (first === 0x64 && g[1] === 0xff9b) return 'reserved'; // 64:ff9b:1::/48 local-use NAT64
  if (first === 0x2001 && g[1] === 0) return 'reserved'; // Teredo 2001::/32: a tunnel to an arbitrary IPv4
  if (first === 0x2001 && g[1] === 0xdb8) return 'documentation';
  if ((first & 0xfff0) === 0x3ff0) return 'documentation'; // 3fff::/20
  if (first === 0x2001 && g[1]! < 0x200) return 'reserved'; // 2001::/23 IETF protocol assignments
  if (first === 0x100 && zero(1, 4)) return 'reserved'; // 100::/64 discard-only
  if ((first & 0xff00) === 0xff00) return 'multicast';
  if ((first & 0xffc0) === 0xfe80) return 'link_local';
  if ((first & 0xffc0) === 0xfec0) return 'private'; // site-local (deprecated)
  if ((first & 0xfe00) === 0xfc00) return 'private'; // unique local fc00::/7
  if ((first & 0xe000) !== 0x2000) return 'reserved'; // outside global unicast 2000::/3
  return 'public';
}

/** The class of an IP literal (IPv4 dotted quad or IPv6, brackets allowed); 'reserved' for anything else. */
export function classifyAddress(ip: string): AddressClass {
  const bare = ip.replace(/^\[|\]$/g, '');
  const v4 = parseV4(bare);
  if (v4 !== null) return classifyV4(v4);
  const v6 = parseV6(bare);
  return v6 === null ? 'reserved' : classifyV6(v6);
}

/** Host names that never leave the machine or the local network, whatever DNS says. */
const INTERNAL_SUFFIXES = ['localhost', 'internal', 'local', 'lan', 'home', 'corp', 'intranet', 'localdomain', 'home.arpa', 'private'];

/** Lower case, IDNA (punycode) and no trailing dots: the form every check compares. */
export function normaliseHost(hostname: string): string {
  const bare = hostname.replace(/^\[|\]$/g, '');
  if (net.isIP(bare) !== 0) return bare.toLowerCase();
  return domainToASCII(bare.replace(/\.+$/, '')).toLowerCase();
}

function addressAllowed(kind: AddressClass, env: WebhookEnv): boolean {
  return kind === 'public' || (kind === 'loopback' && env === 'test');
}

function describe(kind: AddressClass): string {
  return kind === 'shared' ? 'shared (CGNAT)' : kind.replace('_', '-');
}

/** Null when the URL may be subscribed in this environment, else the reason (for a 400). */
export function urlRejection(raw: string, env: WebhookEnv, options: UrlPolicyOptions = {}): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'url is not a valid absolute URL';
  }
  if (url.username !== '' || url.password !== '') return 'url must not carry credentials';
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'url must be https';
  const host = normaliseHost(url.hostname);
  if (host === '') return 'url has no host';
  const literal = net.isIP(host) !== 0;
  let kind: AddressClass = 'public';
  if (literal) kind = classifyAddress(host);
  else if (host === 'localhost' || host.endsWith('.localhost')) kind = 'loopback';
  else if (INTERNAL_SUFFIXES.some((s) => host === s || host.endsWith(`.${s}`)) || !host.includes('.')) {
    return 'url must be on a public address (internal and single-label host names are refused)';
  }
  if (kind === 'loopback') {
    return env === 'test' ? null : 'live webhooks need a public https address (loopback is sandbox-only)';
  }
  if (kind !== 'public') return `url must be on a public address (${describe(kind)} addresses are refused)`;
  if (url.protocol !== 'https:') return 'url must be https (plain http is allowed only to loopback in the sandbox)';
  if (env === 'live') {
    const port = url.port === '' ? 443 : Number(url.port);
    if (port !== 443 && !(options.livePorts ?? []).includes(port)) return `url must use port 443 (port ${port} is not allowed for live webhooks)`;
  }
  return null;
}

/** Where a delivery connects: the checked address, and the name for Host and SNI. */
export interface ResolvedTarget {
  url: URL;
  host: string;
  address: string;
  family: 4 | 6;
  /** Every approved address of the name (tried in order when the first does not answer). */
  addresses: Array<{ address: string; family: 4 | 6 }>;
}

/**
 * Checks the URL, resolves its host once and checks every address it resolves to; the delivery then
 * connects to `address` (pinned), so a DNS answer that changes after this check is never used.
 */
export async function resolveDelivery(raw: string, env: WebhookEnv, lookup: LookupAll = systemLookup, options: UrlPolicyOptions = {}): Promise<ResolvedTarget | string> {
  const refused = urlRejection(raw, env, options);
  if (refused !== null) return refused;
  const url = new URL(raw);
  const host = normaliseHost(url.hostname);
  let addresses: Array<{ address: string; family: number }>;
  if (net.isIP(host) !== 0) addresses = [{ address: host, family: net.isIP(host) }];
  else addresses = await lookup(host).catch(() => []);
  if (addresses.length === 0) return `cannot resolve ${host}`;
  for (const { address } of addresses) {
    const kind = classifyAddress(address);
    if (!addressAllowed(kind, env)) return `${host} resolves to a non-public address (${describe(kind)})`;
  }
  const approved = addresses.map(({ address }) => ({ address, family: net.isIPv6(address) ? (6 as const) : (4 as const) }));
  const first = approved[0]!;
  return { url, host, address: first.address, family: first.family, addresses: approved };
}
