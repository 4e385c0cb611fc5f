// The console in a real browser (playwright-core driving Debian's chromium) against a real server:
// sign in, find a customer, open a wallet statement, resolve a manual_fulfilment order, redeliver a
// webhook, create and rotate a key, sign out, and a customer-scoped key refused at sign-in.
// With KOBO_CONSOLE_SHOTS=<dir>, each page is also saved there as a PNG (to look at, not compared).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { client, idem, secretKey, startServer, type TestServer } from '../helpers/server.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { until } from '../helpers/wait.ts';
import { fundedCustomer, orderReaching } from './seed.ts';

const CHROMIUM = process.env.KOBO_CHROMIUM ?? '/usr/bin/chromium';
// Locally a missing chromium skips (with how to get it); in CI (.ci/run installs it) it fails.
const skip = fs.existsSync(CHROMIUM) || process.env.CI !== undefined ? false : `chromium not found at ${CHROMIUM}: apt-get install -y chromium (.ci/run installs it), or set KOBO_CHROMIUM`;
const key = secretKey();
const shots = process.env.KOBO_CONSOLE_SHOTS ?? '';
let server: TestServer;
let api: ReturnType<typeof client>;
let receiver: Receiver;
let browser: BrowserContext;
let userDataDir: string;
let ada: Awaited<ReturnType<typeof fundedCustomer>>;
let heldOrder: string;
let customerKey: string;

async function shot(page: Page, name: string): Promise<void> {
  if (shots === '') return;
  fs.mkdirSync(shots, { recursive: true });
  await page.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true });
}

/** The one persistent context with its cookies cleared: each test starts signed out. */
async function fresh(): Promise<BrowserContext> {
  await browser.clearCookies();
  return browser;
}

/** Clicks a form's button and waits for the page the POST (and its redirect) leads to. */
async function submit(page: Page, click: () => Promise<void>): Promise<void> {
  await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST'), click()]);
  await page.waitForLoadState('load');
}

async function signIn(page: Page, secret: string): Promise<void> {
  await page.goto(`${server.baseUrl}/console`);
  await page.fill('input[name=key]', secret);
  await submit(page, () => page.click('button[type=submit]'));
}

before(async () => {
  if (skip !== false) return;
  server = await startServer({ keys: [`${key}@acme`], env: { KOBO_WEBHOOK_TICK_MS: '50' } });
  api = client(server.baseUrl, key);
  receiver = await startReceiver();
  const sub = await api('POST', '/v1/webhooks/subscriptions', { idempotencyKey: idem(), body: { url: receiver.url, events: ['payment.completed', 'service_order.completed', 'service_order.failed'] } });
  assert.equal(sub.status, 201, JSON.stringify(sub.body));
  ada = await fundedCustomer(api, 'Ada Obi', 5_000_000);
  await fundedCustomer(api, 'Kwame Mensah', 1_250_075);
  heldOrder = await orderReaching(api, ada.id, '0004', 'manual_fulfilment');
  await receiver.waitFor(2, 10_000);
  const scoped = await api('POST', '/v1/keys', { body: { customer_id: ada.id, label: 'Ada app' } });
  assert.equal(scoped.status, 201, JSON.stringify(scoped.body));
  customerKey = scoped.body.data.secret;
  userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kobo-chromium-'));
  // A fresh profile dir per run (playwright passes it to chromium as --user-data-dir).
  browser = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1440, height: 900 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
});

after(async () => {
  await browser?.close();
  await receiver?.close();
  await server?.stop();
  if (userDataDir !== undefined) fs.rmSync(userDataDir, { recursive: true, force: true });
});

describe('console in a browser', { skip }, () => {
  it('sign-in: an account key → the customers page; the cookie is HttpOnly, SameSite=Strict, and holds no key', async () => {
    const context = await fresh();
    const page = await context.newPage();
    await page.goto(`${server.baseUrl}/console`);
    assert.match(page.url(), /\/console\/sign-in$/);
    await shot(page, '01-sign-in');
    await signIn(page, key);
    assert.match(page.url(), /\/console\/customers$/);
    assert.equal(await page.locator('h1').textContent(), 'Customers');
    assert.ok((await page.content()).includes('Kwame Mensah'));
    const cookies = await context.cookies();
    assert.equal(cookies.length, 1);
    assert.equal(cookies[0]!.httpOnly, true);
    assert.equal(cookies[0]!.sameSite, 'Strict');
    assert.equal(cookies[0]!.path, '/console');
    assert.ok(!cookies[0]!.value.includes(key) && !(await page.content()).includes(key), 'the key is in no cookie or page');
    await shot(page, '02-customers');
    await page.close();
  });

  it('find a customer by email → its page with wallets → the wallet statement shows the funding entry', async () => {
    const context = await fresh();
    const page = await context.newPage();
    await signIn(page, key);
    await page.fill('input[name=q]', ada.email);
    await Promise.all([page.waitForURL(/\?q=/), page.click('form.toolbar button[type=submit]')]);
    assert.equal(await page.locator('tbody tr').count(), 1);
    await shot(page, '03-customer-found');
    await Promise.all([page.waitForURL(`**/console/customers/${ada.id}`), page.click('tbody tr a')]);
    assert.equal(await page.locator('h1').textContent(), 'Ada Obi');
    assert.ok((await page.locator('.card .big').first().textContent())?.includes('NGN'));
    await shot(page, '04-customer');
    await Promise.all([page.waitForURL(`**/console/wallets/${ada.walletId}`), page.click('text=Statement →')]);
    assert.equal(await page.locator('tbody tr').count(), 1, 'the funding entry (the held order is a hold, not an entry)');
    assert.match((await page.locator('tbody').textContent()) ?? '', /49,700\.00NGN/, 'the net funding, minor units shown with the exponent');
    await shot(page, '05-wallet-statement');
    await page.close();
  });

  it('orders: Delivered on a manual_fulfilment order → completed (through POST /v1/services/orders/{id}/resolve)', async () => {
    const context = await fresh();
    const page = await context.newPage();
    await signIn(page, key);
    await page.goto(`${server.baseUrl}/console/orders`);
    await shot(page, '06-orders');
    const row = page.locator('tbody tr', { hasText: heldOrder });
    await submit(page, () => row.locator('button', { hasText: 'Delivered' }).click());
    assert.match((await page.locator('.flash').textContent()) ?? '', /resolved as delivered: now completed/);
    assert.equal((await api('GET', `/v1/services/orders/${heldOrder}`)).body.data.status, 'completed');
    await shot(page, '07-order-resolved');
    await page.close();
  });

  it('webhooks: Redeliver → a fresh delivery reaches the receiver', async () => {
    const context = await fresh();
    const page = await context.newPage();
    await signIn(page, key);
    await page.goto(`${server.baseUrl}/console/webhooks`);
    const before_ = receiver.received.length;
    await shot(page, '08-webhooks');
    await submit(page, () => page.locator('button', { hasText: 'Redeliver' }).first().click());
    assert.match((await page.locator('.flash').textContent()) ?? '', /Redelivery queued/);
    await page.selectOption('select[name=status]', 'succeeded');
    await Promise.all([page.waitForURL(/status=succeeded/), page.click('button:has-text("Filter")')]);
    assert.ok((await page.locator('tbody tr').count()) >= 2, 'the filter is one the deliveries list accepts');
    assert.equal(await page.locator('.flash.bad').count(), 0);
    await receiver.waitFor(before_ + 1, 10_000);
    await page.close();
  });

  it('keys: create one (secret shown once), rotate it (a new secret that works), revoke the old one', async () => {
    const context = await fresh();
    const page = await context.newPage();
    await signIn(page, key);
    await page.goto(`${server.baseUrl}/console/keys`);
    await page.fill('input[name=label]', 'reporting job');
    await page.fill('input[name=scopes]', 'read');
    await submit(page, () => page.click('button:has-text("Create key")'));
    const created = (await page.locator('#new-secret').textContent()) ?? '';
    assert.match(created, /^sk_test_/);
    await shot(page, '09-keys-created');
    await page.reload();
    assert.equal(await page.locator('#new-secret').count(), 0, 'shown once');
    const row = page.locator('tbody tr', { hasText: 'reporting job' });
    await submit(page, () => row.locator('button', { hasText: 'Rotate' }).click());
    const rotated = (await page.locator('#new-secret').textContent()) ?? '';
    assert.match(rotated, /^sk_test_/);
    assert.notEqual(rotated, created);
    const self = await api('GET', '/v1/keys/self', { key: rotated });
    assert.equal(self.status, 200);
    assert.equal(self.body.data.label, 'reporting job');
    const old = (await api('GET', '/v1/keys')).body.data.find((k: { label: string; expires_at: string | null }) => k.label === 'reporting job' && k.expires_at !== null);
    assert.ok(old !== undefined, 'the old key has an expiry (grace)');
    await shot(page, '10-keys-rotated');
    const oldRow = page.locator('tbody tr', { hasText: old.id });
    await submit(page, () => oldRow.locator('button', { hasText: 'Revoke' }).click());
    assert.match((await page.locator('.flash').textContent()) ?? '', /revoked/);
    await until(() => api('GET', '/v1/keys/self', { key: created }), (r) => r.status === 401, 'revoked key refused', 3_000);
    await page.close();
  });

  it('the other pages render: payments, transfers (empty), events, clock (advance)', async () => {
    const context = await fresh();
    const page = await context.newPage();
    await signIn(page, key);
    for (const [name, file] of [['payments', '11-payments'], ['transfers', '12-transfers-empty'], ['events', '13-events']] as const) {
      const response = await page.goto(`${server.baseUrl}/console/${name}`);
      assert.equal(response?.status(), 200);
      await shot(page, file);
    }
    assert.ok((await page.content()).includes('payment.completed'));
    await page.goto(`${server.baseUrl}/console/clock`);
    await page.fill('input[name=seconds]', '600');
    await submit(page, () => page.click('button:has-text("Advance")'));
    assert.match((await page.locator('.flash').textContent()) ?? '', /advanced by 600 s/);
    assert.equal((await api('GET', '/v1/test_helpers/clock')).body.data.offset_seconds, 600);
    await shot(page, '14-clock');
    await submit(page, () => page.click('button:has-text("Sign out")'));
    assert.match(page.url(), /\/console\/sign-in$/);
    await page.goto(`${server.baseUrl}/console/customers`);
    assert.match(page.url(), /\/console\/sign-in$/, 'signed out');
    await page.close();
  });

  it('sign-in: a customer-scoped key → refused with a clear message, no session', async () => {
    const context = await fresh();
    const page = await context.newPage();
    await signIn(page, customerKey);
    assert.match(page.url(), /\/console\/sign-in$/);
    assert.match((await page.locator('.flash').textContent()) ?? '', /acts for one customer .*needs an account key/);
    assert.equal((await context.cookies()).length, 0);
    await shot(page, '15-customer-key-refused');
    await page.close();
  });
});
