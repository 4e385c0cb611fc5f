// Covers GET /v1/openapi.json: a public OpenAPI 3.1 document generated from the route table, checked
// against what the running server actually routes and validates.
// Runs under node:test against one real server process.
// Invariant checked: every routed endpoint appears, with the request schema the server validates against.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, secretKey, startServer, uniqueEmail, uniquePhone, type TestServer } from '../helpers/server.ts';

interface Operation {
  summary?: string;
  parameters?: Array<{ name: string; in: string; required?: boolean; schema?: Record<string, unknown> }>;
  requestBody?: { required?: boolean; content: Record<string, { schema: Record<string, any> }> };
  responses: Record<string, { description: string; content?: Record<string, { schema: Record<string, any> }> }>;
  security?: Array<Record<string, string[]>>;
}
interface OpenApiDoc {
  openapi: string;
  info: { title: string; version: string };
  components: { schemas: Record<string, Record<string, any>>; securitySchemes: Record<string, { type: string; scheme: string }> };
  paths: Record<string, Record<string, Operation>>;
}

const METHODS = ['get', 'post', 'patch', 'put', 'delete'];
// Every path the spec's index names (and the sandbox helpers PRODUCT.md adds), in OpenAPI form.
const KNOWN_PATHS = [
  '/v1/countries', '/v1/countries/{code}/context', '/v1/services', '/v1/services/{code}', '/v1/services/{code}/availability',
  '/v1/services/{code}/payment-methods', '/v1/services/{code}/operators', '/v1/services/{code}/plans', '/v1/services/{code}/variants',
  '/v1/services/{code}/validate', '/v1/services/quote', '/v1/services/orders', '/v1/services/orders/{id}', '/v1/services/orders/{id}/status',
  '/v1/transactions', '/v1/transactions/{id}', '/v1/transactions/{id}/cancel', '/v1/transactions/{id}/retry', '/v1/payments',
  '/v1/payments/{id}', '/v1/payments/methods', '/v1/transfers', '/v1/transfers/{id}', '/v1/beneficiaries', '/v1/customers',
  '/v1/customers/{id}', '/v1/exchange/quotes', '/v1/exchange', '/v1/wallets/{id}', '/v1/webhooks/subscriptions',
  '/v1/webhooks/deliveries', '/v1/webhooks/deliveries/{id}/redeliver', '/v1/test_helpers/payments/{id}/settle',
  '/v1/test_helpers/payments/{id}/fail', '/v1/test_helpers/clock', '/v1/test_helpers/clock/advance', '/v1/openapi.json',
];
const SAMPLE_ID = '01ARZ3NDEKTSV4RRFFQ69G5FAV';

const key = secretKey();
let server: TestServer;
let api: ReturnType<typeof client>;
let doc: OpenApiDoc;

/** A schema with a components $ref followed (the document names its schemas under components/schemas). */
function resolved(schema: Record<string, any> | undefined): Record<string, any> | undefined {
  const target = typeof schema?.$ref === 'string' ? /^#\/components\/schemas\/(.+)$/.exec(schema.$ref)?.[1] : undefined;
  if (target === undefined) return schema;
  const found = doc.components.schemas[target];
  assert.ok(found !== undefined, `dangling $ref ${String(schema?.$ref)}`);
  return found;
}

function concrete(path: string): string {
  return path.replace('{code}', 'NG').replace('{id}', SAMPLE_ID);
}

function operation(path: string, method: string): Operation {
  const op = doc.paths[path]?.[method];
  assert.ok(op !== undefined, `${method.toUpperCase()} ${path} missing from the document`);
  return op;
}

/** The methods the server routes on a path, from the Allow header of a 405 (404: no such path). */
async function routedMethods(path: string): Promise<string[]> {
  const res = await api('OPTIONS', concrete(path), { key: null });
  if (res.status === 404) return [];
  assert.equal(res.status, 405, `${path}: ${JSON.stringify(res.body)}`);
  return (res.headers.get('allow') ?? '').split(',').map((m) => m.trim().toLowerCase()).filter((m) => m !== '').sort();
}

before(async () => {
  server = await startServer({ keys: [key] });
  api = client(server.baseUrl, key);
  const res = await api('GET', '/v1/openapi.json', { key: null });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  doc = res.body as OpenApiDoc;
});

after(async () => {
  await server?.stop();
});

describe('GET /v1/openapi.json', () => {
  it('GET /v1/openapi.json: no key → 200 JSON, openapi 3.1.x with title and version', async () => {
    const res = await api('GET', '/v1/openapi.json', { key: null });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    assert.match(doc.openapi, /^3\.1\.\d+$/);
    assert.equal(doc.info.title, 'kobo');
    assert.ok(doc.info.version.length > 0);
    assert.deepEqual(res.body, doc);
  });

  it('paths: the implemented endpoints → each listed with its methods', () => {
    const expected: Array<[string, string]> = [
      ['/v1/customers', 'post'], ['/v1/customers/{id}', 'get'], ['/v1/customers/{id}', 'patch'], ['/v1/wallets/{id}', 'get'],
      ['/v1/payments', 'post'], ['/v1/payments/{id}', 'get'], ['/v1/payments/methods', 'get'],
      ['/v1/transactions', 'post'], ['/v1/transactions/{id}', 'get'], ['/v1/transactions/{id}/cancel', 'post'], ['/v1/transactions/{id}/retry', 'post'],
      ['/v1/countries', 'get'], ['/v1/countries/{code}/context', 'get'],
      ['/v1/test_helpers/payments/{id}/settle', 'post'], ['/v1/test_helpers/payments/{id}/fail', 'post'],
      ['/v1/test_helpers/clock', 'get'], ['/v1/test_helpers/clock/advance', 'post'], ['/v1/openapi.json', 'get'],
    ];
    for (const [path, method] of expected) operation(path, method);
  });

  it('paths: every documented path → the server routes exactly the documented methods', async () => {
    for (const [path, ops] of Object.entries(doc.paths)) {
      const documented = Object.keys(ops).filter((m) => METHODS.includes(m)).sort();
      assert.ok(documented.length > 0, path);
      assert.deepEqual(await routedMethods(path), documented, path);
    }
  });

  it('paths: every spec path the server routes → documented with the same methods', async () => {
    let routed = 0;
    for (const path of KNOWN_PATHS) {
      const methods = await routedMethods(path);
      if (methods.length === 0) continue;
      routed += 1;
      const documented = Object.keys(doc.paths[path] ?? {}).sort();
      assert.deepEqual(documented, methods, `${path} is routed (${methods.join(', ')}) but documented as ${documented.join(', ') || 'absent'}`);
    }
    assert.ok(routed >= 17, `only ${routed} known paths are routed`);
  });

  it('parameters: every {param} in a path → a required path parameter', () => {
    for (const [path, ops] of Object.entries(doc.paths)) {
      const names = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
      for (const [method, op] of Object.entries(ops)) {
        for (const name of names) {
          const param = op.parameters?.find((p) => p.in === 'path' && p.name === name);
          assert.ok(param !== undefined && param.required === true, `${method} ${path}: path parameter ${name}`);
        }
      }
    }
  });

  it('POST /v1/payments request schema: amount_minor integer with minimum 1; required fields; no extra fields', () => {
    const op = operation('/v1/payments', 'post');
    assert.equal(op.requestBody?.required, true);
    const schema = resolved(op.requestBody!.content['application/json']!.schema)!;
    assert.equal(schema.type, 'object');
    assert.equal(schema.properties.amount_minor.type, 'integer');
    assert.equal(schema.properties.amount_minor.minimum, 1);
    assert.ok(schema.properties.amount_minor.maximum <= Number.MAX_SAFE_INTEGER);
    assert.deepEqual([...schema.required].sort(), ['amount_minor', 'currency', 'customer_id', 'method']);
    assert.equal(schema.additionalProperties, false);
    assert.ok('201' in op.responses, 'documents 201 Created');
  });

  it('POST /v1/customers: each required field of the documented schema → omitted → 400 naming it', async () => {
    const schema = resolved(operation('/v1/customers', 'post').requestBody!.content['application/json']!.schema)!;
    const full: Record<string, string> = { name: 'Doc Check', email: 'doc-check@example.com', phone: '+2348031234567', country_code: 'NG' };
    assert.deepEqual(Object.keys(schema.properties).sort(), Object.keys(full).sort());
    for (const field of schema.required as string[]) {
      const body = { ...full };
      delete body[field];
      const res = await api('POST', '/v1/customers', { idempotencyKey: idem(), body });
      assert.equal(res.status, 400, `${field}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.error.code, 'VALIDATION');
      assert.match(res.body.error.message, new RegExp(field));
    }
  });

  it('idempotent POSTs (customers, transactions, payments, retry) → a required Idempotency-Key header of 1..255 characters', () => {
    for (const path of ['/v1/customers', '/v1/transactions', '/v1/payments', '/v1/transactions/{id}/retry']) {
      const header = operation(path, 'post').parameters?.find((p) => p.in === 'header' && p.name === 'Idempotency-Key');
      assert.ok(header?.required === true, path);
      assert.equal(header.schema?.type, 'string');
      assert.equal(header.schema?.minLength, 1);
      assert.equal(header.schema?.maxLength, 255);
    }
  });

  it('Idempotency-Key: the documented maxLength → accepted by the server; one more character → 400', async () => {
    const header = operation('/v1/customers', 'post').parameters?.find((p) => p.name === 'Idempotency-Key');
    const maxLength = header?.schema?.maxLength as number;
    const body = () => ({ name: 'Doc Bound', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' });
    const atBound = await api('POST', '/v1/customers', { idempotencyKey: idem().padEnd(maxLength, 'k'), body: body() });
    assert.equal(atBound.status, 201, JSON.stringify(atBound.body));
    const over = await api('POST', '/v1/customers', { idempotencyKey: idem().padEnd(maxLength + 1, 'k'), body: body() });
    assert.equal(over.status, 400);
    assert.equal(over.body.error.code, 'VALIDATION');
  });

  it('security: country endpoints and the document are public; every other operation needs the bearer key', () => {
    assert.equal(doc.components.securitySchemes.bearer?.type, 'http');
    assert.equal(doc.components.securitySchemes.bearer?.scheme, 'bearer');
    // The hosted card checkout pages are public too: the token in their address authorises them; so are
    // connector callbacks, which the connector's HMAC signature authorises.
    const publicPaths = new Set(['/v1/countries', '/v1/countries/{code}/context', '/v1/openapi.json', '/v1/checkout/{id}', '/v1/checkout/{id}/complete', '/v1/checkout/{id}/decline', '/v1/connectors/{name}/callbacks']);
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        if (publicPaths.has(path)) assert.deepEqual(op.security, [], `${method} ${path}`);
        else assert.deepEqual(op.security, [{ bearer: [] }], `${method} ${path}`);
      }
    }
  });

  it('responses: authenticated operations document 401 and 403; every operation documents 429; errors use the envelope', () => {
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        const where = `${method} ${path}`;
        assert.ok('429' in op.responses, `${where}: 429`);
        if (op.security?.length !== 0) {
          assert.match(op.responses['401']?.description ?? '', /UNAUTHENTICATED/, `${where}: 401`);
          assert.match(op.responses['403']?.description ?? '', /FORBIDDEN/, `${where}: 403`);
        }
        if (method !== 'get') assert.ok('413' in op.responses && '415' in op.responses, `${where}: 413 and 415`);
        for (const [status, response] of Object.entries(op.responses)) {
          if (Number(status) < 400) continue;
          const schema = resolved(response.content?.['application/json']?.schema);
          assert.deepEqual(schema?.properties?.error?.required, ['code', 'message', 'request_id'], `${where} ${status}`);
        }
      }
    }
  });

  it('components: request bodies and responses reference components/schemas; every $ref resolves', () => {
    const body = operation('/v1/services/orders', 'post').requestBody!.content['application/json']!.schema;
    assert.equal(body.$ref, '#/components/schemas/ServiceOrderCreate');
    const created = operation('/v1/services/orders', 'post').responses['201']!.content!['application/json']!.schema;
    assert.equal(created.properties.data.$ref, '#/components/schemas/ServiceOrderCreated');
    assert.ok(doc.components.schemas.Error !== undefined && doc.components.schemas.Transaction !== undefined);
    const refs = JSON.stringify(doc).match(/"\$ref":"[^"]+"/g) ?? [];
    assert.ok(refs.length > 20, `only ${refs.length} $refs`);
    for (const r of refs) resolved({ $ref: r.slice(8, -1) });
  });

  it('headers: Idempotency-Key and X-Transaction-Authorization are declared header parameters where the spec names them', () => {
    const order = operation('/v1/services/orders', 'post').parameters ?? [];
    const orderKey = order.find((p) => p.in === 'header' && p.name === 'Idempotency-Key');
    assert.ok(orderKey !== undefined && orderKey.required === false, 'service orders: header or body key');
    for (const path of ['/v1/services/orders', '/v1/transfers']) {
      const pin = operation(path, 'post').parameters?.find((p) => p.in === 'header' && p.name === 'X-Transaction-Authorization');
      assert.ok(pin !== undefined, `${path}: X-Transaction-Authorization`);
    }
    for (const path of ['/v1/transfers', '/v1/exchange', '/v1/beneficiaries']) {
      assert.equal(operation(path, 'post').parameters?.find((p) => p.name === 'Idempotency-Key')?.required, true, path);
    }
  });

  it('responses: the country context documents 400 VALIDATION and 404 NOT_FOUND', () => {
    const op = operation('/v1/countries/{code}/context', 'get');
    assert.match(op.responses['400']?.description ?? '', /VALIDATION/);
    assert.match(op.responses['404']?.description ?? '', /NOT_FOUND/);
  });
});
