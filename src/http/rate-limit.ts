// Fixed-window rate limits per secret key (or per IP on public endpoints), reads and writes apart.
// Main thread; in memory (a restart resets the windows, which only ever favours the client).
// Invariant: the map holds at most `entriesMax` windows; expired ones are swept before it grows past.
import net from 'node:net';
import { normalizeIp } from './auth.ts';

export interface RateDecision {
  allowed: boolean;
  remaining: number;
  resetSeconds: number;
}

interface Window {
  startMs: number;
  count: number;
}

const WINDOW_MS = 60_000;

export class RateLimiter {
  private readonly windows = new Map<string, Window>();

  constructor(private readonly limits: { readPerMin: number; writePerMin: number; entriesMax?: number }) {}

  take(subject: string, write: boolean, nowMs: number): RateDecision {
    const limit = write ? this.limits.writePerMin : this.limits.readPerMin;
    const id = write ? `w:${subject}` : `r:${subject}`;
    let window = this.windows.get(id);
    if (window === undefined || nowMs - window.startMs >= WINDOW_MS) {
      if (window === undefined && this.windows.size >= this.entriesMax) this.makeRoom(nowMs);
      window = { startMs: nowMs, count: 0 };
      // Re-inserted, so the map stays in window-start order and its first entry is the oldest window.
      this.windows.delete(id);
      this.windows.set(id, window);
    }
    const resetSeconds = Math.max(1, Math.ceil((window.startMs + WINDOW_MS - nowMs) / 1000));
    if (window.count >= limit) return { allowed: false, remaining: 0, resetSeconds };
    window.count += 1;
    return { allowed: true, remaining: limit - window.count, resetSeconds };
  }

  get size(): number {
    return this.windows.size;
  }

  private get entriesMax(): number {
    return this.limits.entriesMax ?? 100_000;
  }

  /** Drops expired windows; when every window is live (many subjects at once), drops the oldest one. */
  private makeRoom(nowMs: number): void {
    // The map is in window-start order, so the expired windows are the ones at its front.
    for (const [id, window] of this.windows) {
      if (nowMs - window.startMs < WINDOW_MS) break;
      this.windows.delete(id);
    }
    // A forgotten window only ever favours its client, like a restart; growing without bound would not.
    const oldest = this.windows.keys().next();
    if (this.windows.size >= this.entriesMax && oldest.done !== true) this.windows.delete(oldest.value);
  }
}

/**
 * The budget an address is charged to: an IPv4 address (an IPv4-mapped IPv6 one counts as its IPv4),
 * or the /64 an IPv6 address is in. A /64 is what one subscriber is handed, so a client rotating
 * through the addresses of its own /64 still spends one budget.
 */
export function ipSubject(address: string): string {
  const ip = normalizeIp(address.split('%')[0] ?? '');
  if (!net.isIPv6(ip)) return `ip:${ip}`;
  const [head = '', tail] = ip.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  // A dotted IPv4 tail (`::1.2.3.4`) fills the last two groups, so it only moves where `::` ends.
  const width = (groups: string[]) => groups.reduce((n, g) => n + (g.includes('.') ? 2 : 1), 0);
  const groups = tail === undefined ? left : [...left, ...Array<string>(8 - width(left) - width(right)).fill('0'), ...right];
  return `ip:${groups.slice(0, 4).map((g) => parseInt(g, 16).toString(16)).join(':')}::/64`;
}
