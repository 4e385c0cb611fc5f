// Matches a method and path to a route: literal segments first, then `:param` segments.
// Main thread. Unknown paths are 404 and known paths with another method are 405, both in the envelope.
// Invariant: a path matches at most one route per method.
import { Compile } from 'typebox/compile';
import type { CompiledRoute, HttpMethod, RouteDef } from './types.ts';

export type Match =
  | { kind: 'found'; route: CompiledRoute; params: Record<string, string> }
  | { kind: 'method_not_allowed'; allow: HttpMethod[] }
  | { kind: 'not_found' };

export class Router {
  private readonly routes: CompiledRoute[] = [];
  /** Routes by segment count, in specificity order: a path is compared only with routes of its length. */
  private readonly byLength = new Map<number, CompiledRoute[]>();
  /**
   * Routes without parameters by "METHOD /path": the most specific match for their method and path, so a
   * request naming one exactly needs no segment comparison (the catalogue, lists, creates).
   */
  private readonly literal = new Map<string, Map<string, CompiledRoute>>();
  /**
   * Routes by segment count and resource segment (`/v1/<resource>/...`), in specificity order, each
   * list also holding the routes whose resource segment is a parameter: a request is compared with the
   * few routes of its resource, not with every route of its length (54 became 90 routes with lists,
   * keys and the console, and a wallet read walked most of them).
   */
  private readonly byResource = new Map<number, Map<string, CompiledRoute[]>>();

  add(defs: readonly RouteDef[]): void {
    for (const def of defs) {
      const segments = def.path.split('/').filter((s) => s.length > 0);
      const compiled: CompiledRoute = Object.assign({}, def, { segments, params: segments.map((s) => (s.startsWith(':') ? s.slice(1) : null)) });
      if (def.body !== undefined) compiled.bodyValidator = Compile(def.body);
      if (def.query !== undefined) compiled.queryValidator = Compile(def.query);
      this.routes.push(compiled);
    }
    // Literal segments win over parameters (GET /v1/payments/methods before /v1/payments/:id).
    this.routes.sort((a, b) => specificity(b) - specificity(a));
    this.byLength.clear();
    this.literal.clear();
    this.byResource.clear();
    for (const route of this.routes) {
      if (!route.segments.some((s) => s.startsWith(':'))) {
        const paths = this.literal.get(route.method) ?? new Map<string, CompiledRoute>();
        paths.set(route.path, route);
        this.literal.set(route.method, paths);
      }
      const same = this.byLength.get(route.segments.length) ?? [];
      same.push(route);
      this.byLength.set(route.segments.length, same);
    }
    for (const [length, routes] of this.byLength) {
      const resources = new Set(routes.map((r) => r.segments[RESOURCE_SEGMENT]).filter((s): s is string => s !== undefined && !s.startsWith(':')));
      const byName = new Map<string, CompiledRoute[]>();
      for (const resource of resources) byName.set(resource, routes.filter((r) => fitsResource(r, resource)));
      byName.set(ANY_RESOURCE, routes.filter((r) => fitsResource(r, null)));
      this.byResource.set(length, byName);
    }
  }

  all(): readonly CompiledRoute[] {
    return this.routes;
  }

  match(method: string, path: string): Match {
    const exact = this.literal.get(method)?.get(path);
    if (exact !== undefined) return { kind: 'found', route: exact, params: {} };
    const parts = pathParts(path);
    const allow: HttpMethod[] = [];
    const byName = this.byResource.get(parts.length);
    const candidates = byName === undefined ? [] : (byName.get(parts[RESOURCE_SEGMENT] ?? ANY_RESOURCE) ?? byName.get(ANY_RESOURCE)!);
    for (const route of candidates) {
      const params = matchSegments(route, parts);
      if (params === null) continue;
      if (route.method === method) return { kind: 'found', route, params };
      // A literal and a parameter route can both match one path (GET /v1/payments/methods, /v1/payments/:id).
      if (!allow.includes(route.method)) allow.push(route.method);
    }
    return allow.length > 0 ? { kind: 'method_not_allowed', allow } : { kind: 'not_found' };
  }
}

/** The segment naming the resource family: `/v1/<resource>/...`. */
const RESOURCE_SEGMENT = 1;
/** The key of the routes a path whose resource no route names can match (a colon starts no real segment here). */
const ANY_RESOURCE = ':';

/** Whether a route can match a path whose resource segment is `resource` (null: one no route names). */
function fitsResource(route: CompiledRoute, resource: string | null): boolean {
  const segment = route.segments[RESOURCE_SEGMENT];
  return segment === undefined || segment.startsWith(':') || segment === resource;
}

function specificity(route: CompiledRoute): number {
  return route.segments.reduce((score, s, i) => score + (s.startsWith(':') ? 0 : 2 ** (16 - i)), 0);
}

/** A path's non-empty segments (a request path starts with '/'; doubled or trailing slashes add none). */
function pathParts(path: string): string[] {
  const parts = path.split('/');
  return parts[0] === '' && !parts.includes('', 1) ? parts.slice(1) : parts.filter((s) => s.length > 0);
}

/** The route's segments and `parts` have the same length (routes are grouped by it). */
function matchSegments(route: CompiledRoute, parts: string[]): Record<string, string> | null {
  const { segments, params: names } = route;
  // Literal segments first: most routes fail there, before any parameter is decoded.
  for (let i = 0; i < segments.length; i += 1) {
    if (names[i] === null && segments[i] !== parts[i]) return null;
  }
  const params: Record<string, string> = {};
  for (let i = 0; i < segments.length; i += 1) {
    const name = names[i];
    if (name === null || name === undefined) continue;
    const part = parts[i]!;
    let value = part;
    if (part.includes('%')) {
      try {
        value = decodeURIComponent(part);
      } catch {
        // A malformed escape (`%zz`) is a bad parameter value, not another route: the handler answers 400.
        value = part;
      }
    }
    params[name] = value;
  }
  return params;
}
