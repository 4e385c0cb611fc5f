// The console's way to its data: real HTTP requests to this same server's /v1 API on the loopback
// address, with the session's key. Main thread. No private path: auth, scopes, limits and errors are
// exactly what any API client gets. Invariant: the key travels only in the Authorization header.
export interface ApiAnswer {
  status: number;
  /** The parsed JSON body ({} when it was not JSON). */
  body: Record<string, unknown>;
}

/** How long the console waits for its own API before showing an error. */
const API_TIMEOUT_MS = 15_000;

export class ApiClient {
  /** Set when the API refused the key itself (401: revoked, expired): the session is over. */
  keyRefused = false;

  constructor(private readonly baseUrl: () => string, private readonly secret: string) {}

  async call(method: 'GET' | 'POST', path: string, body?: unknown): Promise<ApiAnswer> {
    const headers: Record<string, string> = { Authorization: `Bearer ${this.secret}` };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    try {
      const res = await fetch(`${this.baseUrl()}${path}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }), signal: AbortSignal.timeout(API_TIMEOUT_MS) });
      if (res.status === 401) this.keyRefused = true;
      const text = await res.text();
      let parsed: unknown = {};
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = {};
      }
      return { status: res.status, body: typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : {} };
    } catch (error) {
      return { status: 502, body: { error: { code: 'UNAVAILABLE', message: `The console could not reach the API: ${(error as Error).message}` } } };
    }
  }

  get(path: string, query?: URLSearchParams): Promise<ApiAnswer> {
    const qs = query === undefined || [...query.keys()].length === 0 ? '' : `?${query.toString()}`;
    return this.call('GET', `${path}${qs}`);
  }

  post(path: string, body?: unknown): Promise<ApiAnswer> {
    return this.call('POST', path, body);
  }
}

export function errorMessage(answer: ApiAnswer): string {
  const error = answer.body.error as { code?: string; message?: string } | undefined;
  return error === undefined ? `The API answered ${answer.status}.` : `${error.code ?? 'ERROR'}: ${error.message ?? ''}`;
}

export function dataOf<T = Record<string, unknown>>(answer: ApiAnswer): T {
  return answer.body.data as T;
}

export function rowsOf(answer: ApiAnswer): { rows: Array<Record<string, unknown>>; hasMore: boolean } {
  const data = answer.body.data;
  return { rows: Array.isArray(data) ? (data as Array<Record<string, unknown>>) : [], hasMore: answer.body.has_more === true };
}
