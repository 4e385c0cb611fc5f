// GET /v1/openapi.json: an OpenAPI 3.1 document generated from the route table and its TypeBox schemas.
// Main thread; built once at start. Named schemas go to components/schemas and are referenced by $ref;
// headers the spec names (Idempotency-Key, X-Transaction-Authorization) are declared as parameters.
// Invariant: every routed endpoint appears, with the same request schema the server validates against.
import type { TSchema } from 'typebox';
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
import * as listSchemas from '../schemas/list.schema.ts';

/** Routes that take the step-up proof when the customer has a transaction PIN. */
const STEP_UP_ROUTES: ReadonlySet<string> = new Set(['POST /v1/transfers', 'POST /v1/services/orders']);
/** Routes whose Idempotency-Key may come in the body instead (the spec's service order). */
const BODY_KEY_ROUTES: ReadonlySet<string> = new Set(['POST /v1/services/orders']);

/** Every exported object schema of the schema modules, by its export name (the component name). */
function namedSchemas(): Map<TSchema, string> {
  const names = new Map<TSchema, string>();
  const modules = [customerSchemas, exchangeSchemas, serviceOrderSchemas, servicesSchemas, transactionSchemas, transferSchemas, webhookSchemas, listSchemas];
  for (const module of modules) {
    for (const [name, value] of Object.entries(module)) {
      if (typeof value !== 'object' || value === null || !('type' in value || 'anyOf' in value)) continue;
      if (!names.has(value as TSchema)) names.set(value as TSchema, name);
    }
  }
  return names;
}

const ref = (name: string): object => ({ $ref: `#/components/schemas/${name}` });

function openApiPath(path: string): string {
  return path.replace(/:([a-z_]+)/g, '{$1}');
}

/** The 2xx body: `{ data }`, or a list page `{ data: [...], has_more }`. */
function responseSchema(route: RouteDef, schemaOf: (schema: TSchema) => object): object {
  if (route.response === undefined) return { type: 'object' };
  if (route.list === true) {
    return { type: 'object', properties: { data: { type: 'array', items: schemaOf(route.response) }, has_more: { type: 'boolean', description: 'More rows follow in this direction' } }, required: ['data', 'has_more'] };
  }
  return { type: 'object', properties: { data: schemaOf(route.response) }, required: ['data'] };
}

export function buildOpenApi(routes: readonly RouteDef[], version: string): object {
  const paths: Record<string, Record<string, object>> = {};
  const names = namedSchemas();
  const components: Record<string, object> = { Error: ErrorEnvelope };
  /** A $ref to the schema's component (registered on first use), or the schema inline when it has no name. */
  const schemaOf = (schema: TSchema): object => {
    const name = names.get(schema);
    if (name === undefined) return schema;
    components[name] = schema;
    return ref(name);
  };
  for (const route of routes) {
    const routeKey = `${route.method} ${route.path}`;
    const parameters: Array<{ name: string | undefined; in: string; required: boolean; schema: object; description?: string }> = [...route.path.matchAll(/:([a-z_]+)/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
    if (route.query !== undefined) {
      const properties = (route.query as { properties?: Record<string, object> }).properties ?? {};
      const required = new Set((route.query as { required?: string[] }).required ?? []);
      for (const [name, schema] of Object.entries(properties)) parameters.push({ name, in: 'query', required: required.has(name), schema });
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
    const responses: Record<string, object> = {
      [String(route.responseStatus ?? 200)]: {
        description: 'Success',
        content: { 'application/json': { schema: responseSchema(route, schemaOf), ...(route.example === undefined ? {} : { example: route.example }) } },
      },
    };
    // The pipeline's own refusals apply to every route of a kind, so they are documented for each one.
    const codes = new Set<string>([
      ...(route.auth === 'key' ? ['UNAUTHENTICATED', 'FORBIDDEN'] : []),
      ...(route.method === 'GET' ? [] : ['PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE']),
      ...(route.errors ?? []),
      'RATE_LIMITED',
    ]);
    for (const code of codes) {
      const status = String(ERROR_STATUS[code as ErrorCode] ?? 400);
      const existing = responses[status] as { description: string } | undefined;
      responses[status] = {
        description: existing === undefined ? code : `${existing.description}, ${code}`,
        content: { 'application/json': { schema: ref('Error') } },
      };
    }
    const operation: Record<string, unknown> = {
      ...(route.operationId === undefined ? {} : { operationId: route.operationId }),
      summary: route.summary,
      ...(route.description === undefined ? {} : { description: route.description }),
      tags: [route.family],
      parameters,
      responses,
      security: route.auth === 'public' ? [] : [{ bearer: [] }],
    };
    if (route.body !== undefined) operation.requestBody = { required: true, content: { 'application/json': { schema: schemaOf(route.body) } } };
    const path = openApiPath(route.path);
    paths[path] = { ...(paths[path] ?? {}), [route.method.toLowerCase()]: operation };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'kobo', version, description: 'Payments, transfers, exchange and bill-purchase API.' },
    servers: [{ url: '/' }],
    components: {
      schemas: components,
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'sk_test_… (sandbox) or sk_live_… (live)' } },
    },
    paths,
  };
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
