// The client address behind reverse proxies (KOBO_TRUST_PROXY): the TCP peer, or, when the peer is a
// trusted proxy, the address the proxies forwarded in X-Forwarded-For or RFC 7239 Forwarded.
// Main thread (the front end); pure apart from reading the request's header lines.
// Invariant: a header is believed only as far as trusted proxies wrote it; an untrusted peer is the
// client whatever it sends, and no header is read at all when no proxy is trusted.
import net from 'node:net';

export type ForwardHeader = 'x-forwarded-for' | 'forwarded';

/** KOBO_TRUST_PROXY as configured: a hop count, or proxy addresses and CIDR blocks (0 and none: off). */
export interface TrustProxyConfig {
  hops: number;
  cidrs: string[];
  header: ForwardHeader;
}

/** Addresses whose trust is remembered (net.BlockList.check costs ~1.7 µs); beyond, the memo starts over. */
const TRUST_MEMO_MAX = 4_096;

/** Hops a header is walked back at most, whatever KOBO_TRUST_PROXY says (a longer chain is not believed further). */
export const FORWARDED_HOPS_MAX = 32;

/** Why a KOBO_TRUST_PROXY entry is not an address or CIDR block, or null. */
export function trustEntryProblem(entry: string): string | null {
  const [address = '', bits, extra] = entry.split('/');
  const version = net.isIP(address);
  const bitsMax = version === 6 ? 128 : 32;
  if (version !== 0 && extra === undefined && (bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= bitsMax))) return null;
  return `"${entry}" is not an IP address or CIDR block (e.g. 10.0.0.0/8, 127.0.0.1, fd00::/8)`;
}

/** One hop's address as written by a proxy (`1.2.3.4`, `1.2.3.4:80`, `[2001:db8::1]:443`, `2001:db8::1`), or null. */
export function forwardedAddress(raw: string): string | null {
  let text = raw.trim();
  if (text.startsWith('[')) {
    const end = text.indexOf(']');
    if (end < 0 || !/^(:\d{1,5})?$/.test(text.slice(end + 1))) return null;
    text = text.slice(1, end);
  } else if (/^[\d.]+:\d{1,5}$/.test(text)) {
    text = text.slice(0, text.indexOf(':'));
  }
  const version = net.isIP(text);
  if (version === 0) return null;
  const lower = text.toLowerCase();
  // An IPv4 client seen through an IPv6 socket is the IPv4 address, as the peer address is.
  return version === 6 && lower.startsWith('::ffff:') && net.isIPv4(lower.slice(7)) ? lower.slice(7) : lower;
}

/** Splits at `separator` outside quoted strings (RFC 7230 quoted-string, backslash escapes). */
function splitOutsideQuotes(text: string, separator: string): string[] {
  const parts: string[] = [];
  let quoted = false;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted && c === '\\') i += 1;
    else if (c === '"') quoted = !quoted;
    else if (!quoted && c === separator) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts;
}

/**
 * The `for` value of each element of a Forwarded header, left to right; '' for an element without
 * one (the hop then names no client). Quoted values are unquoted.
 */
export function forwardedFors(header: string): string[] {
  return splitOutsideQuotes(header, ',').map((element) => {
    for (const pair of splitOutsideQuotes(element, ';')) {
      const at = pair.indexOf('=');
      if (at < 0 || pair.slice(0, at).trim().toLowerCase() !== 'for') continue;
      const value = pair.slice(at + 1).trim();
      return value.startsWith('"') && value.endsWith('"') && value.length >= 2 ? value.slice(1, -1).replace(/\\(.)/g, '$1') : value;
    }
    return '';
  });
}

/** What the front end reads of a request: its header lines, each with its name in lower case. */
export interface HeaderSource {
  getHeader(lowerCaseName: string): string;
  forEach(callback: (name: string, value: string) => void): void;
}

/**
 * Every line of the forwarding header, joined with commas as HTTP says repeated lines combine: a proxy
 * that adds a line of its own (rather than appending to the client's) must not leave the client's first.
 */
export function readForwarded(req: HeaderSource, header: ForwardHeader): string {
  if (req.getHeader(header) === '') return '';
  const lines: string[] = [];
  req.forEach((name, value) => {
    if (name === header) lines.push(value);
  });
  return lines.join(',');
}

export class TrustProxy {
  private readonly trusted: net.BlockList | null;
  /** Trust decisions already made: the same few proxies send every request. */
  private readonly memo = new Map<string, boolean>();

  private constructor(private readonly config: Readonly<TrustProxyConfig>) {
    if (config.hops > 0) {
      this.trusted = null;
      return;
    }
    this.trusted = new net.BlockList();
    for (const entry of config.cidrs) {
      const [address = '', bits] = entry.split('/');
      const type = net.isIPv6(address) ? 'ipv6' : 'ipv4';
      if (bits === undefined) this.trusted.addAddress(address, type);
      else this.trusted.addSubnet(address, Number(bits), type);
    }
  }

  /** The policy, or null when no proxy is trusted (the peer is always the client; no header is read). */
  static of(config: Readonly<TrustProxyConfig>): TrustProxy | null {
    return config.hops === 0 && config.cidrs.length === 0 ? null : new TrustProxy(config);
  }

  get header(): ForwardHeader {
    return this.config.header;
  }

  /** Whether the address `hop` steps from the server (0: the peer) is a proxy whose header is believed. */
  private trusts(address: string, hop: number): boolean {
    if (this.trusted === null) return hop < this.config.hops;
    let trusted = this.memo.get(address);
    if (trusted === undefined) {
      trusted = this.trusted.check(address, net.isIPv6(address) ? 'ipv6' : 'ipv4');
      if (this.memo.size >= TRUST_MEMO_MAX) this.memo.clear();
      this.memo.set(address, trusted);
    }
    return trusted;
  }

  /**
   * The client of a request from `peer` whose forwarding header reads `forwarded` ('' when absent):
   * the header is walked from the right while each address is a trusted proxy; the first one that is
   * not is the client. A hop a proxy could not name (no header, `unknown`, an obfuscated or malformed
   * value) stops the walk at the proxy that wrote it: the request is then that proxy's own.
   */
  clientOf(peer: string, forwarded: string): string {
    if (!this.trusts(peer, 0)) return peer;
    if (forwarded === '') return peer;
    const chain = this.config.header === 'forwarded' ? forwardedFors(forwarded) : forwarded.split(',');
    let client = peer;
    for (let hop = 1; hop <= FORWARDED_HOPS_MAX && hop <= chain.length; hop++) {
      const address = forwardedAddress(chain[chain.length - hop]!);
      if (address === null) return client;
      client = address;
      if (!this.trusts(address, hop)) return client;
    }
    return client;
  }
}
