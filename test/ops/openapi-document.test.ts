// What makes GET /v1/openapi.json usable by generators and readers, checked on every operation (so a new
// route without its row in src/api/openapi-operations.ts fails here): operationId, description, a tag
// from the global list in the contract's order, examples, a curl sample; webhooks for every event type;
// and Stoplight Spectral's spectral:oas ruleset (the CLI, as an integrator would run it): 0 errors, 0 warnings.
// Runs under node:test against one real server process.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EVENT_TYPES } from '../../src/schemas/event-type.schema.ts';
import { ROOT, startServer, type TestServer } from '../helpers/server.ts';

interface Media { schema?: Record<string, unknown>; example?: unknown; examples?: Record<string, { value: unknown }> }
interface Operation {
  operationId?: string;
  description?: string;
  tags?: string[];
  parameters?: Array<{ name: string; in: string; example?: unknown }>;
  requestBody?: { content: Record<string, Media> };
  responses: Record<string, { content?: Record<string, Media> }>;
  'x-codeSamples'?: Array<{ lang: string; source: string }>;
  security?: unknown[];
}
interface Document {
  info: { contact?: { name?: string } };
  tags: Array<{ name: string; description?: string }>;
  paths: Record<string, Record<string, Operation>>;
  webhooks: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, { properties?: Record<string, { enum?: unknown[]; pattern?: string }> }> };
}

/** The endpoint families in the order the API contract presents them, then kobo's own. */
const CONTRACT_ORDER = ['Countries', 'Services', 'Service orders', 'Transactions', 'Payments', 'Transfers', 'Beneficiaries', 'Customers', 'Exchange', 'Wallets', 'Webhooks'];

let server: TestServer;
let doc: Document;
let raw: string;

before(async () => {
  server = await startServer({ shards: 1 });
  const res = await fetch(`${server.baseUrl}/v1/openapi.json`);
  raw = await res.text();
  doc = JSON.parse(raw) as Document;
});
after(async () => server?.stop());

function operations(): Array<[string, Operation]> {
  return Object.entries(doc.paths).flatMap(([p, methods]) => Object.entries(methods).map(([m, op]): [string, Operation] => [`${m.toUpperCase()} ${p}`, op]));
}

describe('GET /v1/openapi.json for generators and readers', () => {
  it('every operation: a unique operationId, a description and one tag defined globally → none missing', () => {
    const ids = new Set<string>();
    const tags = new Set(doc.tags.map((t) => t.name));
    for (const [where, op] of [...operations(), ...Object.entries(doc.webhooks).flatMap(([t, m]) => Object.values(m).map((op): [string, Operation] => [`webhook ${t}`, op]))]) {
      assert.match(op.operationId ?? '', /^[a-z][A-Za-z0-9]+$/, `${where}: operationId (add its row to src/api/openapi-operations.ts)`);
      assert.ok(!ids.has(op.operationId!), `${where}: operationId ${op.operationId} twice`);
      ids.add(op.operationId!);
      assert.ok((op.description ?? '').length >= 20, `${where}: description`);
      assert.equal(op.tags?.length, 1, `${where}: one tag`);
      assert.ok(tags.has(op.tags![0]!), `${where}: tag ${op.tags![0]} is not in the global tags`);
    }
  });

  it('tags: each with a description, the contract families first and in its order; operations grouped in tag order', () => {
    for (const tag of doc.tags) assert.ok((tag.description ?? '').length > 20, `tag ${tag.name}: description`);
    assert.deepEqual(doc.tags.map((t) => t.name).slice(0, CONTRACT_ORDER.length), CONTRACT_ORDER);
    const rank = (name: string) => doc.tags.findIndex((t) => t.name === name);
    const ranks = operations().map(([, op]) => rank(op.tags![0]!));
    assert.deepEqual(ranks, [...ranks].sort((a, b) => a - b), 'paths appear in tag order');
  });

  it('every operation: a success response with an example, a request example when it has a body, error examples', () => {
    for (const [where, op] of operations()) {
      const success = Object.entries(op.responses).filter(([status]) => status.startsWith('2'));
      assert.equal(success.length, 1, `${where}: one success response`);
      const media = Object.values(success[0]![1].content ?? {})[0];
      assert.ok(media?.example !== undefined, `${where}: success example`);
      if (op.requestBody !== undefined) assert.ok(op.requestBody.content['application/json']?.example !== undefined, `${where}: request example`);
      for (const [status, response] of Object.entries(op.responses)) {
        if (Number(status) < 400) continue;
        const examples = Object.values(response.content?.['application/json']?.examples ?? {});
        assert.ok(examples.length > 0, `${where} ${status}: error examples`);
      }
      for (const p of op.parameters ?? []) if (p.in === 'path') assert.ok(p.example !== undefined, `${where}: example of path parameter ${p.name}`);
    }
  });

  it('every operation: a curl sample with its method, path, key and Idempotency-Key where required', () => {
    for (const [where, op] of operations()) {
      const curl = op['x-codeSamples']?.find((s) => s.lang === 'Shell')?.source ?? '';
      const [method, template] = where.split(' ') as [string, string];
      assert.ok(curl.startsWith(`curl -X ${method} "$KOBO_URL`), `${where}: ${curl}`);
      const pathPattern = template.replace(/\{[^}]+\}/g, '[^/?"]+').replace(/\//g, '\\/');
      assert.match(curl, new RegExp(`\\$KOBO_URL${pathPattern}[?"]`), `${where}: the path`);
      const secured = (op.security ?? []).length > 0;
      assert.equal(curl.includes('Authorization: Bearer $KOBO_KEY'), secured, `${where}: the key`);
      const keyRequired = (op.parameters ?? []).some((p) => p.name === 'Idempotency-Key' && (p as { required?: boolean }).required === true);
      if (keyRequired) assert.ok(curl.includes('Idempotency-Key:'), `${where}: Idempotency-Key`);
      if (op.requestBody !== undefined) assert.ok(curl.includes("-d '{"), `${where}: the body`);
    }
  });

  it('webhooks: one POST per event type with a payload schema and example; info.contact present', () => {
    assert.deepEqual(Object.keys(doc.webhooks).sort(), [...EVENT_TYPES].sort());
    for (const [type, item] of Object.entries(doc.webhooks)) {
      const media = item.post?.requestBody?.content['application/json'];
      assert.ok(media?.schema !== undefined && media.example !== undefined, type);
      assert.equal((media.example as { event_type: string }).event_type, type);
    }
    assert.ok((doc.info.contact?.name ?? '') !== '');
  });

  it('enums: payment method and the fixed value sets are enums, not free strings with a pattern', () => {
    const method = doc.components.schemas.PaymentCreate?.properties?.method;
    assert.deepEqual([...(method?.enum ?? [])].sort(), ['bank_transfer', 'card', 'mobile_money', 'virtual_account', 'wallet']);
    assert.equal(method?.pattern, undefined);
    assert.ok((doc.components.schemas.Transaction?.properties as Record<string, { enum?: unknown[] }>).status?.enum?.includes('completed'));
    assert.doesNotMatch(raw, /"anyOf":\[\{"type":"string","const"/, 'no union of string constants left');
  });

  it('Spectral (spectral:oas, the CLI) on the served document → 0 errors, 0 warnings', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kobo-spectral-'));
    try {
      const file = path.join(dir, 'openapi.json');
      fs.writeFileSync(file, raw);
      const cli = path.join(ROOT, 'node_modules', '@stoplight', 'spectral-cli', 'dist', 'index.js');
      const run = spawnSync(process.execPath, [cli, 'lint', '--ruleset', path.join(ROOT, '.spectral.yaml'), '--format', 'json', '--fail-severity', 'hint', file], { encoding: 'utf8', timeout: 120_000 });
      // The JSON report, followed by a sentence when it is empty.
      const found = JSON.parse(run.stdout.slice(run.stdout.indexOf('['), run.stdout.lastIndexOf(']') + 1)) as Array<{ code: string; severity: number; path: string[]; message: string }>;
      const problems = found.filter((p) => p.severity <= 1).map((p) => `${p.code} at ${p.path.join('.')}: ${p.message}`);
      assert.deepEqual(problems, [], `Spectral reported ${problems.length} errors and warnings`);
      assert.equal(run.status, found.length === 0 ? 0 : 1, run.stderr);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
