// GET /v1/openapi.json: an OpenAPI 3.1 document generated from the route table, its TypeBox schemas and
// the per-route rows of openapi-operations.ts (operationId, description, examples), tagged in the API
// contract's order, with a `webhooks` section for every event payload. Main thread; built once at start.
// Invariant: every routed endpoint appears with the request schema the server validates against, and
// every example in it satisfies its schema (a wrong hand-written one is a bug asserted here).
import assert from 'node:assert/strict';
import type { TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import { SERVICE_CODES, SERVICE_PAYMENT_METHODS } from '../catalogue/services-data.ts';
import { ERROR_STATUS, type ErrorCode } from '../errors.ts';
import { IDEMPOTENCY_KEY_LENGTH_MAX } from '../http/idempotency.ts';
import type { RouteDef } from '../http/types.ts';
import { ErrorEnvelope } from '../schemas/common.schema.ts';
import * as customerSchemas from '../schemas/customer.schema.ts';
import * as exchangeSchemas from '../schemas/exchange.schema.ts';
import * as serviceOrderSchemas from '../schemas/service-order.schema.ts';
import * as servicesSchemas from '../schemas/services.schema.ts';
import * as transactionSchemas from '../schemas/transaction.schema.ts';
import * as transferSchemas from '../schemas/transfer.schema.ts';
import * as webhookSchemas from '../schemas/webhook.schema.ts';
import * as webhookEventSchemas from '../schemas/webhook-event.schema.ts';
import * as listSchemas from '../schemas/list.schema.ts';
import { WEBHOOK_EVENT_SCHEMAS } from '../schemas/webhook-event.schema.ts';
import { curlOf, documented, sampleOf, type JsonSchema } from './openapi-examples.ts';
import { EXAMPLE_IDS, OPERATIONS, type OperationDoc } from './openapi-operations.ts';
import { TAGS, tagOfFamily, tagRank } from './openapi-tags.ts';

/** Routes that take the step-up proof when the customer has a transaction PIN. */
const STEP_UP_ROUTES: ReadonlySet<string> = new Set(['POST /v1/transfers', 'POST /v1/services/orders']);
/** Routes whose Idempotency-Key may come in the body instead (the spec's service order). */
const BODY_KEY_ROUTES: ReadonlySet<string> = new Set(['POST /v1/services/orders']);
/** Payment methods a payment can name (others are answered 422 METHOD_NOT_SELECTABLE, not 400). */
const PAYMENT_METHODS = ['bank_transfer', 'card', 'mobile_money', 'wallet', 'virtual_account'];
/**
 * Request fields the server checks in its handlers (so that an unknown value gets the contract's own
 * code, e.g. 422 METHOD_NOT_SELECTABLE) but the document lists as enums, which a typed client should offer.
 */
const METHOD_ENUM = { values: PAYMENT_METHODS, description: 'Another value is answered 422 METHOD_NOT_SELECTABLE, like a method this customer cannot use.' };
const SERVICE_METHOD_ENUM = { values: SERVICE_PAYMENT_METHODS, description: 'A method of GET /v1/services/{code}/payment-methods; another value is answered 422 METHOD_NOT_SELECTABLE.' };
const SERVICE_CODE_ENUM = { values: SERVICE_CODES, description: 'A catalogue code; another value is answered 400 VALIDATION.' };
const DOCUMENTED_ENUMS: Record<string, Record<string, { values: readonly string[]; description: string }>> = {
  PaymentCreate: { method: METHOD_ENUM },
  ServiceQuoteCreate: { payment_method: SERVICE_METHOD_ENUM, service_code: SERVICE_CODE_ENUM },
  ServiceOrderCreate: { payment_method: SERVICE_METHOD_ENUM, service_code: SERVICE_CODE_ENUM },
};

/** Every exported object schema of the schema modules, by its export name (the component name). */
function namedSchemas(): Map<TSchema, string> {
  const names = new Map<TSchema, string>();
  const modules = [customerSchemas, exchangeSchemas, serviceOrderSchemas, servicesSchemas, transactionSchemas, transferSchemas, webhookSchemas, webhookEventSchemas, listSchemas];
  for (const module of modules) {
    for (const [name, value] of Object.entries(module)) {
      if (typeof value !== 'object' || value === null || !('type' in value || 'anyOf' in value)) continue;
      if (!names.has(value as TSchema)) names.set(value as TSchema, name);
    }
  }
  return names;
}

const ref = (name: string): object => ({ $ref: `#/components/schemas/${name}` });
const noRefs = (r: string): JsonSchema => assert.fail(`TypeBox route schemas are inline, yet ${r} was referenced`);

function openApiPath(path: string): string {
  return path.replace(/:([a-z_]+)/g, '{$1}');
}

/** The component as the document shows it: enums for unions of constants and for DOCUMENTED_ENUMS. */
function componentOf(name: string, schema: TSchema): JsonSchema {
  const shown = documented(schema as JsonSchema);
  for (const [field, { values, description }] of Object.entries(DOCUMENTED_ENUMS[name] ?? {})) {
    assert(shown.properties?.[field] !== undefined, `DOCUMENTED_ENUMS: ${name}.${field} is not a field`);
    shown.properties = { ...shown.properties, [field]: { type: 'string', enum: [...values], description } };
  }
  return shown;
}

function assertExample(schema: TSchema, value: unknown, where: string): void {
  const validator = Compile(schema);
  assert(validator.Check(value), `OpenAPI example of ${where} does not satisfy its schema: ${JSON.stringify([...validator.Errors(value)].slice(0, 3))}`);
}

type Parameter = { name: string; in: string; required: boolean; schema: object; description?: string; example?: unknown };

function parametersOf(route: RouteDef, row: OperationDoc | undefined): Parameter[] {
  const routeKey = `${route.method} ${route.path}`;
  const parameters: Parameter[] = [...route.path.matchAll(/:([a-z_]+)/g)].map((m) => {
    const name = m[1] ?? '';
    return { name, in: 'path', required: true, schema: { type: 'string' }, example: row?.params?.[name] ?? EXAMPLE_IDS.transaction };
  });
  if (route.query !== undefined) {
    const properties = (route.query as JsonSchema).properties ?? {};
    const required = new Set((route.query as JsonSchema).required ?? []);
    for (const [name, schema] of Object.entries(properties)) {
      const example = row?.params?.[name];
      parameters.push({ name, in: 'query', required: required.has(name), schema: documented(schema), ...(example === undefined ? {} : { example }) });
    }
  }
  const keySchema = { type: 'string', minLength: 1, maxLength: IDEMPOTENCY_KEY_LENGTH_MAX };
  if (route.idempotent === true) {
    parameters.push({ name: 'Idempotency-Key', in: 'header', required: true, schema: keySchema, description: 'Replay-safe mutation: the same key and body replay the stored result; another body is 409 IDEMPOTENCY_REPLAY.' });
  } else if (BODY_KEY_ROUTES.has(routeKey)) {
    parameters.push({ name: 'Idempotency-Key', in: 'header', required: false, schema: keySchema, description: 'Required unless the body carries idempotency_key; when both are sent they must agree.' });
  } else if (route.method === 'POST') {
    parameters.push({ name: 'Idempotency-Key', in: 'header', required: false, schema: keySchema, description: 'Optional here; honoured like on money-moving calls.' });
  }
  if (STEP_UP_ROUTES.has(routeKey)) {
    parameters.push({ name: 'X-Transaction-Authorization', in: 'header', required: false, schema: { type: 'string', pattern: '^[0-9]{4,6}$' }, description: "The customer's transaction PIN; required (else 403 PIN_REQUIRED) when the customer has one." });
  }
  return parameters;
}

/** The error responses: the pipeline's own refusals for every route of a kind, then the route's own. */
function errorResponses(route: RouteDef, exampleOf: (code: string) => object): Record<string, object> {
  const codes = new Set<string>([
    ...(route.auth === 'key' ? ['UNAUTHENTICATED', 'FORBIDDEN'] : []),
    ...(route.method === 'GET' ? [] : ['PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE']),
    ...(route.errors ?? []),
    'RATE_LIMITED',
  ]);
  const byStatus = new Map<string, string[]>();
  for (const code of codes) {
    const status = String(ERROR_STATUS[code as ErrorCode] ?? 400);
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const responses: Record<string, object> = {};
  for (const [status, list] of byStatus) {
    const examples = Object.fromEntries(list.map((code) => [code, exampleOf(code)]));
    responses[status] = { description: list.join(', '), content: { 'application/json': { schema: ref('Error'), examples } } };
  }
  return responses;
}

/** The resource a path names (`/v1/services/orders/:id` → order), for the sample ids of its answer. */
function resourceOf(path: string): string {
  const words = path.split('/').filter((w) => w !== '' && !w.startsWith(':') && w !== 'v1' && w !== 'test_helpers');
  const last = words.at(-1) ?? '';
  return last.replace(/ies$/, 'y').replace(/s$/, '').replace(/-/g, '_');
}

/** The example URL of an operation: path parameters filled in, the example query appended. */
function exampleUrl(route: RouteDef, parameters: readonly Parameter[]): string {
  let url = route.path;
  const query: string[] = [];
  for (const p of parameters) {
    if (p.in === 'path') url = url.replace(`:${p.name}`, encodeURIComponent(String(p.example)));
    if (p.in === 'query' && p.example !== undefined) query.push(`${encodeURIComponent(p.name)}=${encodeURIComponent(String(p.example))}`);
  }
  return query.length === 0 ? url : `${url}?${query.join('&')}`;
}

/** The success response with its example: the row's (asserted), else one sampled from the schema. */
function successResponse(route: RouteDef, row: OperationDoc | undefined, schemaOf: (schema: TSchema) => object): object {
  if (typeof row?.response === 'string') return { description: 'An HTML page', content: { 'text/html': { schema: { type: 'string' }, example: row.response } } };
  // A sample the schema refuses is left out: the document test then names the operation without an
  // example, rather than the server failing to start.
  let data = row?.response;
  if (data !== undefined && route.response !== undefined) assertExample(route.response, data, `${route.method} ${route.path} (response)`);
  if (data === undefined && route.response !== undefined) {
    const sample = sampleOf(route.response as JsonSchema, noRefs, resourceOf(route.path));
    data = Compile(route.response).Check(sample) ? sample : undefined;
  }
  if (route.list === true && route.response !== undefined) {
    // A list page: `{ data: [...], has_more }`, newest first (docs/lists-and-events.md).
    const schema = { type: 'object', properties: { data: { type: 'array', items: schemaOf(route.response) }, has_more: { type: 'boolean', description: 'More rows follow in this direction' } }, required: ['data', 'has_more'] };
    // The item sampled from its schema (checked against it) beats a hand-written page, which can drift.
    const example = data === undefined ? route.example : { data: [data], has_more: false };
    return { description: 'Success', content: { 'application/json': { schema, ...(example === undefined ? {} : { example }) } } };
  }
  const schema = route.response === undefined ? { type: 'object' } : { type: 'object', properties: { data: schemaOf(route.response) }, required: ['data'] };
  const example = data === undefined ? (route.example === undefined ? undefined : route.example) : route.response === undefined ? data : { data };
  return { description: 'Success', content: { 'application/json': { schema, ...(example === undefined ? {} : { example }) } } };
}

export function buildOpenApi(routes: readonly RouteDef[], version: string): object {
  const paths: Record<string, Record<string, object>> = {};
  const names = namedSchemas();
  const components: Record<string, object> = { Error: ErrorEnvelope };
  /** One example per error code, shared by every response that can carry it. */
  const errorExamples: Record<string, object> = {};
  const errorExampleOf = (code: string): object => {
    errorExamples[code] ??= { summary: code, value: { error: { code, message: `What went wrong and what to do (${code}).`, request_id: 'req_01JDA0K8Z3REQVEST0000000D0' } } };
    return { $ref: `#/components/examples/${code}` };
  };
  /** A $ref to the schema's component (registered on first use), or the schema inline when it has no name. */
  const schemaOf = (schema: TSchema): object => {
    const name = names.get(schema);
    if (name === undefined) return documented(schema as JsonSchema);
    components[name] = componentOf(name, schema);
    return ref(name);
  };
  const tagOf = (route: RouteDef): string => OPERATIONS[`${route.method} ${route.path}`]?.tag ?? tagOfFamily(route.family) ?? route.family;
  // Tags in the contract's order; within a tag, the order of the rows of OPERATIONS (then the router's).
  const rowRank = new Map(Object.keys(OPERATIONS).map((key, i) => [key, i]));
  const rankOf = (route: RouteDef): number => rowRank.get(`${route.method} ${route.path}`) ?? rowRank.size;
  const ordered = routes.map((route, i) => ({ route, i })).sort((a, b) => tagRank(tagOf(a.route)) - tagRank(tagOf(b.route)) || rankOf(a.route) - rankOf(b.route) || a.i - b.i);
  for (const { route } of ordered) {
    const routeKey = `${route.method} ${route.path}`;
    const row = OPERATIONS[routeKey];
    const parameters = parametersOf(route, row);
    const status = String(route.responseStatus ?? 200);
    const success = successResponse(route, row, schemaOf);
    const operation: Record<string, unknown> = {
      ...(row === undefined ? (route.operationId === undefined ? {} : { operationId: route.operationId }) : { operationId: row.operationId }),
      summary: route.summary,
      ...(row === undefined ? (route.description === undefined ? {} : { description: route.description }) : { description: row.description }),
      tags: [tagOf(route)],
      parameters,
      responses: { [status]: success, ...errorResponses(route, errorExampleOf) },
      security: route.auth === 'public' ? [] : [{ bearer: [] }],
    };
    if (route.body !== undefined) {
      if (row?.request !== undefined) assertExample(route.body, row.request, `${routeKey} (request)`);
      operation.requestBody = { required: route.bodyOptional !== true, content: { 'application/json': { schema: schemaOf(route.body), ...(row?.request === undefined ? {} : { example: row.request }) } } };
    }
    const idempotent = route.idempotent === true || BODY_KEY_ROUTES.has(routeKey);
    operation['x-codeSamples'] = [{ lang: 'Shell', label: 'curl', source: curlOf({ method: route.method, url: exampleUrl(route, parameters), authenticated: route.auth === 'key', idempotent, body: row?.request }) }];
    const path = openApiPath(route.path);
    paths[path] = { ...(paths[path] ?? {}), [route.method.toLowerCase()]: operation };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'kobo',
      version,
      description: 'Payments, transfers, exchange and bill-purchase API. Authenticate with `Authorization: Bearer sk_test_…` (sandbox) or `sk_live_…`. Every error is `{"error":{"code","message","request_id"}}`; money-moving POSTs need an `Idempotency-Key` header. Amounts are integers in minor units.',
      contact: { name: 'kobo' },
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [{ url: '/' }],
    tags: TAGS.map(({ name, description }) => ({ name, description })),
    paths,
    webhooks: webhooksOf(schemaOf),
    components: {
      schemas: components,
      examples: errorExamples,
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'sk_test_… (sandbox) or sk_live_… (live)' } },
    },
  };
}

/** One POST per event type: what kobo sends to a subscribed URL, signed. */
function webhooksOf(schemaOf: (schema: TSchema) => object): Record<string, object> {
  const out: Record<string, object> = {};
  for (const [type, schema] of Object.entries(WEBHOOK_EVENT_SCHEMAS)) {
    const example = sampleOf(schema as JsonSchema, noRefs) as { event_type: string; event_key: string; data: { failure?: { code: string } } };
    example.event_key = `${type}:${EXAMPLE_IDS.transaction}`;
    if (example.data.failure !== undefined) example.data.failure.code = 'PROVIDER_ERROR';
    assertExample(schema, example, `webhook ${type}`);
    const words = type.split(/[._]/).map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join('');
    out[type] = {
      post: {
        operationId: `on${words}`,
        summary: `${type} delivered to your URL`,
        description: `${(schema as JsonSchema).description ?? ''} Verify X-Service-Signature (HMAC-SHA256 of timestamp, a dot and the raw body, keyed by the subscription secret), reject timestamps older than 5 minutes, dedupe on event_key, answer 2xx within 10 seconds.`,
        tags: ['Events'],
        parameters: [
          { name: 'X-Service-Signature', in: 'header', required: true, schema: { type: 'string', pattern: '^sha256=[0-9a-f]{64}$' }, description: 'sha256=<hex HMAC-SHA256 of `timestamp.body`>' },
          { name: 'X-Service-Timestamp', in: 'header', required: true, schema: { type: 'string', pattern: '^[0-9]+$' }, description: 'Unix seconds when this attempt was signed' },
        ],
        requestBody: { required: true, content: { 'application/json': { schema: schemaOf(schema), example } } },
        responses: { '200': { description: 'Acknowledged: any of 200, 201, 202, 204 within 10 seconds. Anything else (redirects too) is retried on the schedule.' } },
        security: [],
      },
    };
  }
  return out;
}

export function openApiRoute(getDocument: () => string): RouteDef {
  return {
    method: 'GET',
    path: '/v1/openapi.json',
    summary: 'This OpenAPI 3.1 document',
    auth: 'public',
    family: 'docs',
    handle: () => ({ status: 200, json: getDocument() }),
  };
}
