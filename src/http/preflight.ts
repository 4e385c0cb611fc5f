// The checks a request passes before its route runs, none of which needs a shard: the key's grants,
// account-level and sandbox-only routes, the Idempotency-Key header, the content type, the JSON body's
// shape and schema, the query's schema. Main thread (one per HttpServer).
// Invariant: a request that fails a check reaches no route and changes nothing.
import { reject, type Rejection } from '../errors.ts';
import type { KeyRecord } from '../store/control-store.ts';
import type { Authenticator } from './auth.ts';
import { idempotencyKeyProblem } from './idempotency.ts';
import { jsonShapeRejection, type JsonPolicy } from './json-policy.ts';
import type { CompiledRoute } from './types.ts';
import { validate } from './validate.ts';

/** Query strings that passed their route's schema, kept parsed (clients repeat the same ones). */
const VALID_QUERIES_MAX = 4_096;

/** What the checks read of a request. */
export interface PreflightRequest {
  idempotencyKey: string;
  contentType: string;
  query: string;
}

export class Preflight {
  private readonly validQueries = new Map<string, URLSearchParams>();

  constructor(private readonly deps: { auth: Authenticator; jsonPolicy: JsonPolicy }) {}

  /** `ip`: the client's address when the key has an allow-list to check it against, else ''. */
  run(route: CompiledRoute, key: KeyRecord | null, request: PreflightRequest, rawBody: Buffer, ip: string): { rejection: Rejection } | { body: unknown; query: URLSearchParams } {
    if (key !== null) {
      const denied = this.deps.auth.authorize(key, route, ip);
      if (denied !== null) return { rejection: denied };
      if (route.accountLevel === true && key.customerId !== null) {
        return { rejection: reject('FORBIDDEN', 'A customer-scoped key cannot reach account-level resources (webhooks, the sandbox clock, collection outcomes, rail switches).') };
      }
      if (route.sandboxOnly === true && key.env !== 'test') {
        return { rejection: reject('NOT_FOUND', 'Test helpers exist only in the sandbox (sk_test_ keys).') };
      }
    }
    if (route.idempotent === true && request.idempotencyKey === '') {
      return { rejection: reject('IDEMPOTENCY_KEY_REQUIRED', 'This request moves money: send an Idempotency-Key header.') };
    }
    const keyProblem = request.idempotencyKey !== '' ? idempotencyKeyProblem(request.idempotencyKey) : null;
    if (keyProblem !== null) return { rejection: reject('VALIDATION', keyProblem) };
    const body = this.body(route, request, rawBody);
    if (body !== undefined && 'rejection' in body) return body;
    const query = this.query(route, request.query);
    if (!(query instanceof URLSearchParams)) return query;
    return { body: body?.value, query };
  }

  private body(route: CompiledRoute, request: PreflightRequest, rawBody: Buffer): { rejection: Rejection } | { value: unknown } | undefined {
    let value: unknown = undefined;
    if (rawBody.length > 0 && route.form === true) {
      // An HTML form's body: the route parses (and bounds) it itself.
      if (!/^application\/x-www-form-urlencoded\s*(;|$)/i.test(request.contentType)) {
        return { rejection: reject('UNSUPPORTED_MEDIA_TYPE', 'Send forms as application/x-www-form-urlencoded.') };
      }
    } else if (rawBody.length > 0) {
      if (!/^application\/json\s*(;|$)/i.test(request.contentType)) {
        return { rejection: reject('UNSUPPORTED_MEDIA_TYPE', 'Send JSON bodies with Content-Type: application/json.') };
      }
      const shape = jsonShapeRejection(rawBody, this.deps.jsonPolicy);
      if (shape !== null) return { rejection: shape };
      try {
        value = JSON.parse(rawBody.toString('utf8'));
      } catch {
        return { rejection: reject('VALIDATION', 'The body is not valid JSON.') };
      }
    }
    if (route.bodyValidator !== undefined) {
      if (value === undefined) {
        if (route.bodyOptional !== true) return { rejection: reject('VALIDATION', 'A JSON body is required.') };
      } else {
        const invalid = validate(route.bodyValidator, value, 'body');
        if (invalid !== null) return { rejection: invalid };
      }
    }
    return value === undefined ? undefined : { value };
  }

  /**
   * Clients repeat the same query strings (a catalogue, a list page): one that passed the route's
   * schema is kept, parsed, and handed out again. Handlers only read ctx.query.
   */
  private query(route: CompiledRoute, raw: string): URLSearchParams | { rejection: Rejection } {
    const cacheKey = `${route.method} ${route.path}?${raw}`;
    let query = this.validQueries.get(cacheKey);
    if (query === undefined) {
      query = new URLSearchParams(raw);
      if (route.queryValidator !== undefined) {
        const invalid = validate(route.queryValidator, Object.fromEntries(query), 'query');
        if (invalid !== null) return { rejection: invalid };
      }
      if (this.validQueries.size >= VALID_QUERIES_MAX) this.validQueries.clear();
      this.validQueries.set(cacheKey, query);
    }
    return query;
  }
}
