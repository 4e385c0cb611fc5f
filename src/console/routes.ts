// The console's routes under /console: sign-in and sign-out, the pages, the POST actions, the stylesheet.
// Main thread. Every page and action is a request to the public API with the session's key.
// Invariants: the key never leaves the server (an opaque session id is the cookie); every state change
// carries the session's CSRF token and a same-origin Origin header; every answer carries a strict CSP.
import { SECRET_KEY_PATTERN } from '../config.ts';
import type { Reply, RequestContext, RouteDef } from '../http/types.ts';
import { ApiClient, errorMessage } from './api-client.ts';
import { CONSOLE_CSS } from './assets.ts';
import { html, page } from './html.ts';
import { customerPage, customersPage, eventsPage, ordersPage, paymentsPage, transfersPage, walletPage, type PageCtx, type PageResult } from './pages.ts';
import { ACTIONS, clockPage, keysPage, webhooksPage, type Action } from './pages-admin.ts';
import { SESSION_COOKIE, sessionIdOf, SessionStore, tokensEqual, type Session, type SessionLimits } from './session.ts';

export interface ConsoleDeps {
  /** Where the console reaches this server's API (the loopback address and the bound port). */
  apiBaseUrl: () => string;
  /** KOBO_PUBLIC_URL: an https:// one marks the cookie Secure and is an accepted Origin. */
  publicUrl: () => string;
  limits: SessionLimits;
  nowMs?: () => number;
}

export const CONSOLE_CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': CONSOLE_CSP,
  'X-Content-Type-Options': 'nosniff',
  // same-origin, not no-referrer: under no-referrer a browser sends `Origin: null` with a form POST, which the
  // Origin check must refuse; other sites still learn nothing of console URLs.
  'Referrer-Policy': 'same-origin',
  'X-Frame-Options': 'DENY',
  'Cache-Control': 'no-store',
};

function htmlReply(status: number, body: string, extra: Record<string, string> = {}): Reply {
  return { status, json: body, headers: { ...SECURITY_HEADERS, 'Content-Type': 'text/html; charset=utf-8', ...extra } };
}

function redirect(to: string, extra: Record<string, string> = {}): Reply {
  return htmlReply(303, '', { Location: to, ...extra });
}

function signInPage(status: number, message?: string): Reply {
  const body = html`${message === undefined ? '' : html`<div class="flash bad" role="alert">${message}</div>`}
<p class="subtitle">Operators of an account sign in with one of its secret keys (<code>sk_test_…</code> or <code>sk_live_…</code>). The key stays on the server for the session; customer-scoped keys cannot sign in.</p>
<form method="post" action="/console/sign-in" class="stack"><label>Secret key<input name="key" type="password" autocomplete="off" required autofocus placeholder="sk_test_…"></label><button type="submit">Sign in</button></form>`;
  return htmlReply(status, page({ title: 'Sign in to kobo', section: '', body }));
}

export function consoleRoutes(deps: ConsoleDeps): RouteDef[] {
  const sessions = new SessionStore(deps.limits);
  const now = deps.nowMs ?? Date.now;
  const secure = (): string => (deps.publicUrl().startsWith('https://') ? '; Secure' : '');
  const cookie = (value: string, clear = false): string => `${SESSION_COOKIE}=${value}; HttpOnly; SameSite=Strict; Path=/console${secure()}${clear ? '; Max-Age=0' : ''}`;

  const sessionOf = (ctx: RequestContext): Session | undefined => {
    const id = sessionIdOf(ctx.browser?.cookie ?? '');
    return id === '' ? undefined : sessions.touch(id, now());
  };

  /** Same-origin POSTs only: the Origin must be this server as the browser addressed it (or KOBO_PUBLIC_URL). */
  const sameOrigin = (ctx: RequestContext): boolean => {
    const origin = ctx.browser?.origin ?? '';
    const host = ctx.browser?.host ?? '';
    if (origin === '' || origin === 'null') return false;
    const allowed = [`http://${host}`, `https://${host}`];
    if (deps.publicUrl() !== '') allowed.push(new URL(deps.publicUrl()).origin);
    return host !== '' && allowed.includes(origin);
  };

  const refused = (why: string): Reply => htmlReply(403, page({ title: 'Refused', section: '', body: html`<div class="flash bad" role="alert">${why}</div><p><a href="/console">Back to the console</a></p>` }));

  /** The session's key was revoked or has expired since sign-in: the session ends with it. */
  const keyGone = (session: Session): Reply => {
    sessions.end(session.id);
    const reply = signInPage(401, 'The key this session signed in with is no longer accepted (revoked, or expired after a rotation). Sign in again with a current key.');
    return { ...reply, headers: { ...reply.headers, 'Set-Cookie': cookie('', true) } };
  };

  const pageRoute = (path: string, render: (ctx: PageCtx) => Promise<PageResult>): RouteDef => ({
    method: 'GET',
    path,
    summary: `Console page ${path}`,
    auth: 'public',
    family: 'console',
    handle: async (ctx) => {
      const session = sessionOf(ctx);
      if (session === undefined) return redirect('/console/sign-in');
      const pageCtx: PageCtx = { api: new ApiClient(deps.apiBaseUrl, session.secret), session, query: ctx.query, params: ctx.params };
      // A new key's secret is shown by the one page load after its action, then forgotten.
      const fresh = session.newKey;
      delete session.newKey;
      const result = path === '/console/keys' ? await keysPage(pageCtx, fresh) : await render(pageCtx);
      if (pageCtx.api.keyRefused) return keyGone(session);
      if ('redirect' in result) return redirect(result.redirect);
      const flash = session.flash;
      delete session.flash;
      const account = { account: session.account, env: session.env, prefix: session.prefix, csrf: session.csrf };
      return htmlReply(200, page({ title: result.title, section: result.section, body: result.body, account, ...(flash === undefined ? {} : { flash }) }));
    },
  });

  const actionRoute = (path: string, action: Action): RouteDef => ({
    method: 'POST',
    path,
    summary: `Console action ${path}`,
    auth: 'public',
    family: 'console',
    form: true,
    handle: async (ctx) => {
      const session = sessionOf(ctx);
      if (session === undefined) return redirect('/console/sign-in');
      const fields = new URLSearchParams(ctx.rawBody.toString('utf8'));
      if (!sameOrigin(ctx)) return refused('This form did not come from the console (its Origin header is missing or another site’s). Nothing was changed.');
      if (!tokensEqual(fields.get('_csrf') ?? '', session.csrf)) return refused('This form is stale or was not made by the console (its CSRF token does not match the session). Nothing was changed.');
      const api = new ApiClient(deps.apiBaseUrl, session.secret);
      const result = await action({ api, session, query: ctx.query, params: ctx.params }, fields);
      if (api.keyRefused) return keyGone(session);
      session.flash = result.flash;
      if (result.secret !== undefined) session.newKey = result.secret;
      return redirect(result.to);
    },
  });

  return [
    { method: 'GET', path: '/console', summary: 'Console', auth: 'public', family: 'console', handle: (ctx) => redirect(sessionOf(ctx) === undefined ? '/console/sign-in' : '/console/customers') },
    {
      method: 'GET', path: '/console/assets/console.css', summary: 'Console stylesheet', auth: 'public', family: 'console',
      handle: () => ({ status: 200, json: CONSOLE_CSS, headers: { ...SECURITY_HEADERS, 'Content-Type': 'text/css; charset=utf-8', 'Cache-Control': 'public, max-age=3600' } }),
    },
    { method: 'GET', path: '/console/sign-in', summary: 'Console sign-in', auth: 'public', family: 'console', handle: (ctx) => (sessionOf(ctx) === undefined ? signInPage(200) : redirect('/console/customers')) },
    {
      method: 'POST', path: '/console/sign-in', summary: 'Console sign-in', auth: 'public', family: 'console', form: true,
      handle: async (ctx) => {
        if (!sameOrigin(ctx)) return refused('This sign-in did not come from the console’s own page (Origin header). Nothing was done.');
        const secret = (new URLSearchParams(ctx.rawBody.toString('utf8')).get('key') ?? '').trim();
        if (!SECRET_KEY_PATTERN.test(secret)) return signInPage(401, 'That is not a secret key: it starts with sk_test_ or sk_live_.');
        const self = await new ApiClient(deps.apiBaseUrl, secret).get('/v1/keys/self');
        if (self.status !== 200) return signInPage(self.status === 401 ? 401 : 403, `That key was refused: ${errorMessage(self)}`);
        const key = self.body.data as { id: string; prefix: string; account: string; env: 'test' | 'live'; customer_id: string | null };
        if (key.customer_id !== null) {
          return signInPage(403, `This key acts for one customer (${key.customer_id}); the console needs an account key (one made without a customer).`);
        }
        const session = sessions.create({ secret, keyId: key.id, prefix: key.prefix, account: key.account, env: key.env }, now());
        return redirect('/console/customers', { 'Set-Cookie': cookie(session.id) });
      },
    },
    {
      method: 'POST', path: '/console/sign-out', summary: 'Console sign-out', auth: 'public', family: 'console', form: true,
      handle: (ctx) => {
        const session = sessionOf(ctx);
        if (session !== undefined) {
          const fields = new URLSearchParams(ctx.rawBody.toString('utf8'));
          if (!sameOrigin(ctx) || !tokensEqual(fields.get('_csrf') ?? '', session.csrf)) return refused('This sign-out did not come from the console. Nothing was changed.');
          sessions.end(session.id);
        }
        return redirect('/console/sign-in', { 'Set-Cookie': cookie('', true) });
      },
    },
    pageRoute('/console/customers', customersPage),
    pageRoute('/console/customers/:id', customerPage),
    pageRoute('/console/wallets/:id', walletPage),
    pageRoute('/console/payments', paymentsPage),
    pageRoute('/console/transfers', transfersPage),
    pageRoute('/console/orders', ordersPage),
    pageRoute('/console/events', eventsPage),
    pageRoute('/console/webhooks', webhooksPage),
    pageRoute('/console/keys', (ctx) => keysPage(ctx)),
    pageRoute('/console/clock', clockPage),
    actionRoute('/console/orders/:id/resolve', ACTIONS.resolve!),
    actionRoute('/console/webhooks/subscriptions/:id/enable', ACTIONS.enable!),
    actionRoute('/console/webhooks/deliveries/:id/redeliver', ACTIONS.redeliver!),
    actionRoute('/console/keys', ACTIONS.createKey!),
    actionRoute('/console/keys/:id/revoke', ACTIONS.revokeKey!),
    actionRoute('/console/keys/:id/rotate', ACTIONS.rotateKey!),
    actionRoute('/console/clock/advance', ACTIONS.advanceClock!),
  ];
}
