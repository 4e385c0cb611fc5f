// GET /v1/openapi.json: an OpenAPI 3.1 document generated from the route table and its TypeBox schemas.
// Main thread; built once at start. Schemas are JSON Schema already, so they are embedded as they are.
// Invariant: every routed endpoint appears, with the same request schema the server validates against.
import { ERROR_STATUS, type ErrorCode } from '../errors.ts';
import { IDEMPOTENCY_KEY_LENGTH_MAX } from '../http/idempotency.ts';
import type { RouteDef } from '../http/types.ts';
import { DataEnvelope, ErrorEnvelope } from '../schemas/common.schema.ts';

function openApiPath(path: string): string {
  return path.replace(/:([a-z_]+)/g, '{$1}');
}

export function buildOpenApi(routes: readonly RouteDef[], version: string): object {
  const paths: Record<string, Record<string, object>> = {};
  for (const route of routes) {
    const parameters: Array<{ name: string | undefined; in: string; required: boolean; schema: object }> = [...route.path.matchAll(/:([a-z_]+)/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
    if (route.query !== undefined) {
      const properties = (route.query as { properties?: Record<string, object> }).properties ?? {};
      const required = new Set((route.query as { required?: string[] }).required ?? []);
      for (const [name, schema] of Object.entries(properties)) parameters.push({ name, in: 'query', required: required.has(name), schema });
    }
    if (route.idempotent === true) {
      parameters.push({ name: 'Idempotency-Key', in: 'header', required: true, schema: { type: 'string', minLength: 1, maxLength: IDEMPOTENCY_KEY_LENGTH_MAX } });
    }
    const responses: Record<string, object> = {
      [String(route.responseStatus ?? 200)]: {
        description: 'Success',
        content: { 'application/json': { schema: route.response === undefined ? { type: 'object' } : DataEnvelope(route.response) } },
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
        content: { 'application/json': { schema: ErrorEnvelope } },
      };
    }
    const operation: Record<string, unknown> = {
      summary: route.summary,
      tags: [route.family],
      parameters,
      responses,
      security: route.auth === 'public' ? [] : [{ bearer: [] }],
    };
    if (route.body !== undefined) operation.requestBody = { required: true, content: { 'application/json': { schema: route.body } } };
    const path = openApiPath(route.path);
    paths[path] = { ...(paths[path] ?? {}), [route.method.toLowerCase()]: operation };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'kobo', version, description: 'Payments, transfers, exchange and bill-purchase API.' },
    servers: [{ url: '/' }],
    components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'sk_test_… (sandbox) or sk_live_… (live)' } } },
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
