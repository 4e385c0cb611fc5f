// GET /docs in a real browser: Debian's chromium, headless, driven by playwright-core, with every request
// that is not to the kobo server aborted (as offline) and the page's own CSP in force. Every operation of
// /v1/openapi.json must render under its tag, in the contract's order, with its response example and
// curl sample; search must find operations. Skips (saying why) only outside CI when chromium is absent.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { startServer, type TestServer } from '../helpers/server.ts';

const CHROMIUM = process.env.KOBO_CHROMIUM ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
/** The one thing the page asks from elsewhere: Redoc's attribution logo, which the CSP blocks (it then hides). */
const KNOWN_BLOCKED = /^https:\/\/cdn\.redoc\.ly\/redoc\/logo-mini\.svg$/;
const RENDER_MS_MAX = 30_000;
const skip = fs.existsSync(CHROMIUM) || process.env.CI !== undefined ? false : `chromium not found at ${CHROMIUM}: apt-get install -y chromium (.ci/run installs it), or set KOBO_CHROMIUM`;

interface Operation { operationId: string; tags: string[]; responses: Record<string, { content?: Record<string, { example?: unknown }> }> }
interface Document { tags: Array<{ name: string }>; paths: Record<string, Record<string, Operation>>; webhooks: Record<string, Record<string, Operation & { requestBody: { content: Record<string, { example: unknown }> } }>> }

let server: TestServer;
let context: BrowserContext;
let page: Page;
let doc: Document;
let profile: string;
const outside: string[] = [];
const violations: string[] = [];

/** A string value of the example a reader would see without expanding anything (breadth first, shallow). */
function visibleToken(example: unknown): string {
  const queue: Array<[unknown, number]> = [[example, 0]];
  while (queue.length > 0) {
    const [value, depth] = queue.shift()!;
    if (typeof value === 'string' && value.length >= 2) return value.length > 40 ? value.slice(0, 40) : value;
    if (depth >= 3 || value === null || typeof value !== 'object') continue;
    for (const child of Object.values(value)) queue.push([child, depth + 1]);
  }
  return '';
}

const slug = (tag: string) => tag.replace(/\s+/g, '-');

before(async () => {
  if (skip !== false) return;
  server = await startServer({ shards: 1 });
  doc = (await (await fetch(`${server.baseUrl}/v1/openapi.json`)).json()) as Document;
  profile = fs.mkdtempSync(path.join(os.tmpdir(), 'kobo-chromium-'));
  context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, viewport: { width: 1400, height: 900 } });
  const origin = new URL(server.baseUrl).origin;
  await context.route('**/*', async (route) => {
    const url = route.request().url();
    if (url.startsWith(origin) || url.startsWith('blob:') || url.startsWith('data:')) return route.continue();
    outside.push(url);
    return route.abort('internetdisconnected');
  });
  page = context.pages()[0] ?? (await context.newPage());
  page.on('console', (m) => {
    const blocked = /^Loading the \w+ '([^']+)' violates the following Content Security Policy/.exec(m.text());
    if (blocked !== null) violations.push(blocked[1]!);
    else if (/Content Security Policy/.test(m.text())) violations.push(m.text());
  });
  const response = await page.goto(`${server.baseUrl}/docs`);
  assert.match(response?.headers()['content-security-policy'] ?? '', /default-src 'none'; script-src 'self'/);
  await page.waitForSelector('[data-section-id^="tag/"]', { timeout: RENDER_MS_MAX });
});

after(async () => {
  await context?.close();
  if (profile !== undefined) fs.rmSync(profile, { recursive: true, force: true });
  await server?.stop();
});

describe('GET /docs in chromium (offline, under its CSP)', { skip }, () => {
  it('tags: rendered in the order of the document, which is the contract order', async () => {
    const rendered = await page.$$eval('[data-section-id^="tag/"]', (els) => els.map((e) => e.getAttribute('data-section-id') ?? '').filter((id) => /^tag\/[^/]+$/.test(id)));
    assert.deepEqual(rendered, doc.tags.map((t) => `tag/${slug(t.name)}`));
  });

  it('every operation: under its tag, with its success example and its curl sample', async () => {
    let checked = 0;
    for (const [p, methods] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(methods)) {
        const where = `${method.toUpperCase()} ${p}`;
        const section = page.locator(`[data-section-id="tag/${slug(op.tags[0]!)}/operation/${op.operationId}"]`);
        assert.equal(await section.count(), 1, `${where}: not rendered under tag ${op.tags[0]}`);
        const success = Object.entries(op.responses).find(([status]) => status.startsWith('2'))![1];
        const token = visibleToken(Object.values(success.content ?? {})[0]?.example);
        assert.ok(token !== '', `${where}: the document has no example to look for`);
        assert.ok((await section.innerText()).includes(token), `${where}: response example (${token}) not shown`);
        await section.locator('[role="tab"]', { hasText: /^curl$/ }).first().click();
        const text = await section.innerText();
        assert.ok(text.includes(`curl -X ${method.toUpperCase()}`), `${where}: curl sample not shown`);
        checked += 1;
      }
    }
    assert.ok(checked >= 50, `only ${checked} operations`);
  });

  it('webhooks: every event payload rendered with its example', async () => {
    for (const [type, item] of Object.entries(doc.webhooks)) {
      const op = item.post!;
      const section = page.locator(`[data-section-id="tag/${slug(op.tags[0]!)}/operation/${op.operationId}"]`);
      assert.equal(await section.count(), 1, `${type}: not rendered`);
      assert.ok((await section.innerText()).includes(type), `${type}: payload example not shown`);
    }
  });

  it('search: "payout" → the transfer operation among the results', async () => {
    await page.fill('input[placeholder="Search..."]', 'payout');
    const result = page.locator('[data-role="search:results"] [data-item-id="tag/Transfers/operation/createTransfer"]');
    await result.waitFor({ timeout: 5_000 });
    assert.equal(await result.count(), 1);
    await page.fill('input[placeholder="Search..."]', '');
  });

  it('offline: no request left the server; the only CSP refusal is the renderer attribution logo', () => {
    assert.deepEqual(outside.filter((u) => !KNOWN_BLOCKED.test(u)), []);
    assert.deepEqual(violations.filter((u) => !KNOWN_BLOCKED.test(u)), []);
  });
});
