// Authentication (bearer secret key → key record) and authorization (scopes, source-IP allowlist).
// Main thread. Keys live hashed in control.db; a short cache keeps the hot path off sqlite while a
// revocation from the CLI still takes effect within `cacheTtlMs`.
// Invariant: a missing, malformed, unknown, revoked or expired key is 401; a key outside its grants is 403.
import net from 'node:net';
import { reject, type Rejection } from '../errors.ts';
import { envOfSecret, keyExpired, type ControlStore, type KeyRecord } from '../store/control-store.ts';
import type { CompiledRoute } from './types.ts';
import { SECRET_KEY_PATTERN } from '../config.ts';

const CACHE_ENTRIES_MAX = 10_000;

interface Cached {
  record: KeyRecord | undefined;
  atMs: number;
}

export class Authenticator {
  private readonly cache = new Map<string, Cached>();

  constructor(private readonly store: ControlStore, private readonly cacheTtlMs = 1_000) {}

  authenticate(header: string, nowMs: number): KeyRecord | Rejection {
    // Keyed by the whole header: a client sends the same one on every request, so the parse below
    // runs once per TTL, not per request. Only well-formed headers are remembered.
    let cached = this.cache.get(header);
    if (cached === undefined || nowMs - cached.atMs > this.cacheTtlMs) {
      // The auth scheme is case-insensitive (RFC 9110 §11.1): `bearer sk_…` is as valid as `Bearer sk_…`.
      const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
      if (match === null) return reject('UNAUTHENTICATED', 'Send Authorization: Bearer <secret key>.');
      const secret = match[1]!;
      if (!SECRET_KEY_PATTERN.test(secret) || envOfSecret(secret) === null) {
        return reject('UNAUTHENTICATED', 'The secret key is malformed.');
      }
      if (this.cache.size >= CACHE_ENTRIES_MAX) this.cache.clear();
      cached = { record: this.store.findBySecret(secret), atMs: nowMs };
      this.cache.set(header, cached);
    }
    const record = cached.record;
    if (record === undefined) return reject('UNAUTHENTICATED', 'The secret key is not recognised.');
    if (record.status === 'revoked') return reject('UNAUTHENTICATED', 'The secret key has been revoked.');
    if (keyExpired(record, nowMs)) return reject('UNAUTHENTICATED', 'The secret key has expired (rotated).');
    return record;
  }

  authorize(key: KeyRecord, route: CompiledRoute, ip: string): Rejection | null {
    if (key.ipAllow.length > 0 && !ipAllowed(key.ipAllow, ip)) {
      return reject('FORBIDDEN', `Requests from ${ip} are not allowed for this key.`);
    }
    if (!scopeAllows(key.scopes, route)) {
      return reject('FORBIDDEN', `This key's scopes do not allow ${route.method} on ${route.family}.`);
    }
    return null;
  }
}

/** The resource families a key's scopes may name (every key-authenticated route belongs to one). */
export const SCOPE_FAMILIES: readonly string[] = ['beneficiaries', 'customers', 'events', 'exchange', 'keys', 'payments', 'services', 'test_helpers', 'transactions', 'transfers', 'wallets', 'webhooks'];

/** Why a scope is not one a key can carry ('*', 'read', '<family>', '<family>:read', '<family>:write'), or null. */
export function scopeProblem(scope: string): string | null {
  const [family = '', access, extra] = scope.split(':');
  if (scope === '*' || scope === 'read') return null;
  if (SCOPE_FAMILIES.includes(family) && extra === undefined && (access === undefined || access === 'read' || access === 'write')) return null;
  return `scope "${scope}" is not '*', 'read', or one of ${SCOPE_FAMILIES.join(', ')} with an optional :read or :write`;
}

/** Why an --ip-allow entry is not an IP address or CIDR block, or null. */
export function ipAllowProblem(entry: string): string | null {
  const [address = '', bits, extra] = entry.split('/');
  const version = net.isIP(address);
  const bitsMax = version === 6 ? 128 : 32;
  if (version !== 0 && extra === undefined && (bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= bitsMax))) return null;
  return `"${entry}" is not an IP address or CIDR block (e.g. 203.0.113.7, 10.0.0.0/8, 2001:db8::/32)`;
}

export function scopeAllows(scopes: readonly string[], route: Pick<CompiledRoute, 'method' | 'family'>): boolean {
  const read = route.method === 'GET';
  return scopes.some(
    (s) => s === '*' || s === route.family || (read && (s === 'read' || s === `${route.family}:read`)) || (!read && s === `${route.family}:write`),
  );
}

export function normalizeIp(ip: string): string {
  const lower = ip.toLowerCase();
  if (lower.startsWith('::ffff:') && net.isIPv4(lower.slice(7))) return lower.slice(7);
  if (lower === '0000:0000:0000:0000:0000:0000:0000:0001') return '::1';
  const mapped = /^0000:0000:0000:0000:0000:ffff:([0-9a-f]{4}):([0-9a-f]{4})$/.exec(lower);
  if (mapped !== null) {
    const hi = parseInt(mapped[1]!, 16);
    const lo = parseInt(mapped[2]!, 16);
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  return lower;
}

/** Each allowlist's BlockList, built once per key record (records are cached; a new record, a new list). */
const blockLists = new WeakMap<readonly string[], net.BlockList>();

function blockListOf(allow: readonly string[]): net.BlockList {
  let list = blockLists.get(allow);
  if (list !== undefined) return list;
  list = new net.BlockList();
  // An entry that is no address (written before the CLI checked them) allows nothing, rather than
  // failing every request of the key with a 500.
  for (const entry of allow.filter((e) => ipAllowProblem(e) === null)) {
    const [address, bits] = entry.split('/');
    const type = net.isIPv6(address ?? '') ? 'ipv6' : 'ipv4';
    if (bits === undefined) list.addAddress(address!, type);
    else list.addSubnet(address!, Number(bits), type);
  }
  blockLists.set(allow, list);
  return list;
}

export function ipAllowed(allow: readonly string[], ip: string): boolean {
  const list = blockListOf(allow);
  const type = net.isIPv6(ip) ? 'ipv6' : 'ipv4';
  return net.isIP(ip) !== 0 && list.check(ip, type);
}
