// Authentication (bearer secret key → key record) and authorization (scopes, source-IP allowlist).
// Main thread. Keys live hashed in control.db; a short cache keeps the hot path off sqlite while a
// revocation from the CLI still takes effect within `cacheTtlMs`.
// Invariant: a missing, malformed, unknown, revoked or expired key is 401; a key outside its grants is 403.
import net from 'node:net';
import { reject, type Rejection } from '../errors.ts';
import { envOfSecret, type ControlStore, type KeyRecord } from '../store/control-store.ts';
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
    if (record.expiresAtMs !== null && nowMs >= record.expiresAtMs) return reject('UNAUTHENTICATED', 'The secret key has expired (rotated).');
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

export function ipAllowed(allow: readonly string[], ip: string): boolean {
  const list = new net.BlockList();
  for (const entry of allow) {
    const [address, bits] = entry.split('/');
    const type = net.isIPv6(address ?? '') ? 'ipv6' : 'ipv4';
    if (bits === undefined) list.addAddress(address!, type);
    else list.addSubnet(address!, Number(bits), type);
  }
  const type = net.isIPv6(ip) ? 'ipv6' : 'ipv4';
  return net.isIP(ip) !== 0 && list.check(ip, type);
}
