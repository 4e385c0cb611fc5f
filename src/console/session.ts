// Console sessions: an opaque random id (the browser's cookie) → the account key it signed in with and
// the session's CSRF token. Main thread; in memory only (a restart signs everyone out).
// Invariant: a session past its idle or absolute limit is never answered; at most `sessionsMax` live.
import { randomBytes, timingSafeEqual } from 'node:crypto';

export interface Session {
  id: string;
  /** The account key: kept here, never sent to the browser. */
  secret: string;
  keyId: string;
  prefix: string;
  account: string;
  env: 'test' | 'live';
  csrf: string;
  createdMs: number;
  lastSeenMs: number;
  /** What the next page shows once (an action's outcome; a new key's secret), then forgets. */
  flash?: { tone: 'ok' | 'bad'; text: string };
  newKey?: { id: string; secret: string };
}

export interface SessionLimits {
  idleMsMax: number;
  ageMsMax: number;
  sessionsMax: number;
}

export const SESSION_COOKIE = 'kobo_console';

export class SessionStore {
  /** In least-recently-used order: a touched session moves to the end; the first is evicted when full. */
  private readonly sessions = new Map<string, Session>();

  constructor(private readonly limits: SessionLimits) {}

  create(key: Pick<Session, 'secret' | 'keyId' | 'prefix' | 'account' | 'env'>, nowMs: number): Session {
    this.sweep(nowMs);
    while (this.sessions.size >= this.limits.sessionsMax) {
      const oldest = this.sessions.keys().next().value;
      if (oldest === undefined) break;
      this.sessions.delete(oldest);
    }
    const session: Session = { ...key, id: randomBytes(32).toString('base64url'), csrf: randomBytes(24).toString('base64url'), createdMs: nowMs, lastSeenMs: nowMs };
    this.sessions.set(session.id, session);
    return session;
  }

  /** The live session of this id (its idle clock restarted), or undefined (and forgotten if expired). */
  touch(id: string, nowMs: number): Session | undefined {
    const session = this.sessions.get(id);
    if (session === undefined) return undefined;
    this.sessions.delete(id);
    if (this.expired(session, nowMs)) return undefined;
    session.lastSeenMs = nowMs;
    this.sessions.set(id, session);
    return session;
  }

  end(id: string): void {
    this.sessions.delete(id);
  }

  get size(): number {
    return this.sessions.size;
  }

  private expired(s: Session, nowMs: number): boolean {
    return nowMs - s.lastSeenMs > this.limits.idleMsMax || nowMs - s.createdMs > this.limits.ageMsMax;
  }

  /** Drops expired sessions from the front (least recently seen) until a live one. */
  private sweep(nowMs: number): void {
    for (const [id, session] of this.sessions) {
      if (!this.expired(session, nowMs) && nowMs - session.lastSeenMs <= this.limits.idleMsMax) break;
      this.sessions.delete(id);
    }
  }
}

/** The session id in a Cookie header, or ''. */
export function sessionIdOf(cookieHeader: string): string {
  for (const part of cookieHeader.split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === SESSION_COOKIE) return part.slice(at + 1).trim();
  }
  return '';
}

export function tokensEqual(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
