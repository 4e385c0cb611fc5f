// The console's security over HTTP against a real server: headers (CSP and the rest), the session
// cookie, CSRF (token and Origin) on every state change with nothing changed when refused, sign-in
// refusals, sign-out, and session expiry (idle and absolute limits, set to seconds here).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { client, secretKey, startServer, type TestServer } from '../helpers/server.ts';
import { until } from '../helpers/wait.ts';

const key = secretKey();
let server: TestServer;
let api: ReturnType<typeof client>;

before(async () => {
  server = await startServer({ keys: [`${key}@acme`], env: { KOBO_CONSOLE_IDLE_SECONDS_MAX: '2', KOBO_CONSOLE_SESSION_SECONDS_MAX: '5' } });
  api = client(server.baseUrl, key);
});
after(async () => server.stop());

interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

async function request(method: 'GET' | 'POST', path: string, options: { cookie?: string; origin?: string | null; form?: Record<string, string> } = {}): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (options.cookie !== undefined) headers.cookie = options.cookie;
  const origin = options.origin === undefined ? server.baseUrl : options.origin;
  if (method === 'POST' && origin !== null) headers.origin = origin;
  let body: string | undefined;
  if (options.form !== undefined) {
    body = new URLSearchParams(options.form).toString();
    headers['content-type'] = 'application/x-www-form-urlencoded';
  }
  const res = await fetch(server.baseUrl + path, { method, headers, body, redirect: 'manual' });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** Signs in; the session cookie (name=value) and the page's CSRF token. */
async function signIn(secret = key): Promise<{ cookie: string; csrf: string }> {
  const signed = await request('POST', '/console/sign-in', { form: { key: secret } });
  assert.equal(signed.status, 303, signed.text);
  const cookie = (signed.headers.get('set-cookie') ?? '').split(';')[0]!;
  const page = await request('GET', '/console/clock', { cookie });
  assert.equal(page.status, 200);
  const csrf = /name="_csrf" value="([^"]+)"/.exec(page.text)?.[1];
  assert.ok(csrf !== undefined, 'every page carries the token in its forms');
  return { cookie, csrf };
}

const offset = async (): Promise<number> => (await api('GET', '/v1/test_helpers/clock')).body.data.offset_seconds;

describe('console over HTTP', () => {
  it('headers: every console answer → strict CSP, nosniff, Referrer-Policy, no framing, no caching', async () => {
    for (const path of ['/console/sign-in', '/console/customers', '/console/assets/console.css']) {
      const res = await request('GET', path);
      const csp = res.headers.get('content-security-policy') ?? '';
      assert.match(csp, /default-src 'none'/, path);
      assert.match(csp, /frame-ancestors 'none'/);
      assert.match(csp, /form-action 'self'/);
      assert.match(csp, /style-src 'self'/);
      assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https?:/, 'no inline code and no other origin');
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
      assert.equal(res.headers.get('referrer-policy'), 'same-origin');
      assert.equal(res.headers.get('x-frame-options'), 'DENY');
    }
    const page = await request('GET', '/console/sign-in');
    assert.doesNotMatch(page.text, /<script|style=|<style/, 'no inline script or style');
  });

  it('sign-in: an account key → 303 and an opaque HttpOnly SameSite=Strict cookie on /console; the key is in no answer', async () => {
    const signed = await request('POST', '/console/sign-in', { form: { key } });
    assert.equal(signed.status, 303);
    assert.equal(signed.headers.get('location'), '/console/customers');
    const cookie = signed.headers.get('set-cookie') ?? '';
    assert.match(cookie, /^kobo_console=[A-Za-z0-9_-]{43}; HttpOnly; SameSite=Strict; Path=\/console$/);
    assert.ok(!cookie.includes(key));
    const page = await request('GET', '/console/keys', { cookie: cookie.split(';')[0]! });
    assert.equal(page.status, 200);
    assert.ok(!page.text.includes(key), 'the key is never in a page');
  });

  it('sign-in: unknown, malformed, revoked and customer-scoped keys → refused, no cookie', async () => {
    const customer = await api('POST', '/v1/customers', { idempotencyKey: `c-${Date.now()}`, body: { name: 'Ada', email: `ada-${Date.now()}@example.com`, phone: '+2348031110001', country_code: 'NG' } });
    assert.equal(customer.status, 201, JSON.stringify(customer.body));
    const scoped = (await api('POST', '/v1/keys', { body: { customer_id: customer.body.data.id } })).body.data;
    const spare = (await api('POST', '/v1/keys', { body: { label: 'spare' } })).body.data;
    assert.equal((await api('POST', `/v1/keys/${spare.id}/revoke`)).status, 200);
    const cases: Array<[string, number, RegExp]> = [
      [secretKey(), 401, /not recognised/],
      ['not-a-key', 401, /not a secret key/],
      [spare.secret, 401, /revoked/],
      [scoped.secret, 403, /acts for one customer/],
    ];
    for (const [secret, status, message] of cases) {
      const res = await request('POST', '/console/sign-in', { form: { key: secret } });
      assert.equal(res.status, status, secret);
      assert.match(res.text, message);
      assert.equal(res.headers.get('set-cookie'), null);
    }
  });

  it('CSRF: a POST without the token, with a wrong one, without Origin or from another Origin → 403, nothing changed', async () => {
    const { cookie, csrf } = await signIn();
    const before_ = await offset();
    const refusals: Array<{ origin?: string | null; form: Record<string, string> }> = [
      { form: { seconds: '60' } },
      { form: { seconds: '60', _csrf: 'x'.repeat(csrf.length) } },
      { form: { seconds: '60', _csrf: csrf }, origin: null },
      { form: { seconds: '60', _csrf: csrf }, origin: 'https://evil.example' },
      { form: { seconds: '60', _csrf: csrf }, origin: 'null' },
    ];
    for (const refusal of refusals) {
      const res = await request('POST', '/console/clock/advance', { cookie, ...refusal });
      assert.equal(res.status, 403, JSON.stringify(refusal));
      assert.match(res.text, /Nothing was changed/);
    }
    assert.equal(await offset(), before_, 'the clock did not move');
    const ok = await request('POST', '/console/clock/advance', { cookie, form: { seconds: '60', _csrf: csrf } });
    assert.equal(ok.status, 303);
    assert.equal(await offset(), before_ + 60);
  });

  it("CSRF: another session's token → 403; a sign-in from another Origin → 403, no session", async () => {
    const a = await signIn();
    const b = await signIn();
    const res = await request('POST', '/console/clock/advance', { cookie: a.cookie, form: { seconds: '60', _csrf: b.csrf } });
    assert.equal(res.status, 403);
    const crossSite = await request('POST', '/console/sign-in', { origin: 'https://evil.example', form: { key } });
    assert.equal(crossSite.status, 403);
    assert.equal(crossSite.headers.get('set-cookie'), null);
  });

  it('a form POST to the API → 415 (forms reach only /console routes)', async () => {
    const res = await fetch(`${server.baseUrl}/v1/keys`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/x-www-form-urlencoded' }, body: 'label=x' });
    assert.equal(res.status, 415);
  });

  it('lists: more rows than a page → Older link; following it → the rest and a Newer link; names escaped', async () => {
    for (let i = 0; i < 22; i += 1) {
      const name = i === 0 ? '<script>alert(1)</script> & "Co"' : `Customer ${i}`;
      const created = await api('POST', '/v1/customers', { idempotencyKey: `page-${i}-${Date.now()}`, body: { name, email: `page${i}-${Date.now()}@example.com`, phone: `+23480312${String(30_000 + i).padStart(5, '0')}`, country_code: 'NG' } });
      assert.equal(created.status, 201, JSON.stringify(created.body));
    }
    const { cookie } = await signIn();
    const first = await request('GET', '/console/customers', { cookie });
    assert.equal((first.text.match(/<tr>/g) ?? []).length - 1, 20, 'a page of 20 rows (plus the header row)');
    const older = /href="(\/console\/customers\?starting_after=[^"]+)"/.exec(first.text)?.[1];
    assert.ok(older !== undefined, 'an Older link');
    assert.doesNotMatch(first.text, /ending_before/, 'no Newer link on the first page');
    const second = await request('GET', older.replace(/&amp;/g, '&'), { cookie });
    assert.equal(second.status, 200);
    assert.match(second.text, /ending_before=/, 'a Newer link');
    const all = first.text + second.text;
    assert.ok(!all.includes('<script>alert(1)</script>'), 'never raw');
    assert.ok(all.includes('&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;Co&quot;'), 'escaped');
  });

  it("session: its key revoked meanwhile (by another key) → the next page signs it out (401, cookie cleared)", async () => {
    const operator = (await api('POST', '/v1/keys', { body: { label: 'operator' } })).body.data;
    const { cookie } = await signIn(operator.secret);
    assert.equal((await api('POST', `/v1/keys/${operator.id}/revoke`)).status, 200);
    const page = await until(() => request('GET', '/console/customers', { cookie }), (r) => r.status !== 200, 'revocation seen', 3_000);
    assert.equal(page.status, 401);
    assert.match(page.text, /no longer accepted/);
    assert.match(page.headers.get('set-cookie') ?? '', /Max-Age=0/);
    assert.equal((await request('GET', '/console/customers', { cookie })).status, 303, 'the session is gone');
  });

  it('sign-out: → the session ends (its cookie no longer opens a page)', async () => {
    const { cookie, csrf } = await signIn();
    const out = await request('POST', '/console/sign-out', { cookie, form: { _csrf: csrf } });
    assert.equal(out.status, 303);
    assert.match(out.headers.get('set-cookie') ?? '', /Max-Age=0/);
    const page = await request('GET', '/console/customers', { cookie });
    assert.equal(page.status, 303);
    assert.equal(page.headers.get('location'), '/console/sign-in');
  });

  it('session: idle past KOBO_CONSOLE_IDLE_SECONDS_MAX → signed out', async () => {
    const { cookie } = await signIn();
    await new Promise((resolve) => setTimeout(resolve, 2_300));
    const page = await request('GET', '/console/customers', { cookie });
    assert.equal(page.status, 303);
    assert.equal(page.headers.get('location'), '/console/sign-in');
  });

  it('session: in use past KOBO_CONSOLE_SESSION_SECONDS_MAX → signed out all the same', async () => {
    const { cookie } = await signIn();
    const startedMs = Date.now();
    while (Date.now() - startedMs < 4_500) {
      assert.equal((await request('GET', '/console/clock', { cookie })).status, 200, 'kept alive by use');
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, 5_300 - (Date.now() - startedMs))));
    const page = await request('GET', '/console/clock', { cookie });
    assert.equal(page.status, 303, 'past the absolute limit');
  });
});
