// Shapes shared by the HTTP layer and the API modules: route definitions, request context, replies.
// Main thread. A route declares its auth, scope family, idempotency and schemas; the pipeline
// enforces them the same way for every endpoint.
// Invariant: an API module never writes to the socket; it returns a Reply.
import type { TSchema } from 'typebox';
import type { Validator } from 'typebox/compile';
import type { KeyRecord } from '../store/control-store.ts';
import type { StoredReply } from '../schemas/reply.schema.ts';
import type { Rejection } from '../errors.ts';
import type { RateDecision } from './rate-limit.ts';

export type HttpMethod = 'GET' | 'POST' | 'PATCH';

export type Reply = StoredReply & {
  headers?: Record<string, string>;
  /**
   * The body a replay under the same Idempotency-Key answers, where it must differ from the first
   * answer: a webhook signing secret is shown by the create call once, never by a replay of it.
   */
  replayJson?: string;
  /**
   * `json` already encoded, from a route that answers one body many times (a memoised catalogue, a wallet
   * view): sent as it is, where every other reply is encoded per answer. Made by `keptBytes` (write-body.ts) only.
   */
  bytes?: Buffer;
};

export interface RequestContext {
  requestId: string;
  method: HttpMethod;
  path: string;
  params: Record<string, string>;
  query: URLSearchParams;
  body: unknown;
  rawBody: Buffer;
  key: KeyRecord | null;
  /** `test:acme`: the account and environment that own what this request touches. */
  owner: string;
  nowMs: number;
  idempotencyKey: string | null;
  transactionAuthorization: string | null;
  /** The raw Authorization header, for public routes with their own token (GET /metrics). */
  authorization?: string;
  /** Kobo-Timestamp / Kobo-Signature headers ('' when absent): connector callbacks are signed. */
  signature?: { timestamp: string; signature: string };
  /** Cookie, Origin and Host of a request to the console ('' for other paths). */
  browser?: { cookie: string; origin: string; host: string };
  /** Public routes: the environment of a valid key sent anyway (live keys see live availability). */
  viewerEnv?: 'test' | 'live';
}

/** What a public route whose sender proves who it is (a connector's signature, the metrics token) checks first. */
export interface SenderProof {
  params: Record<string, string>;
  rawBody: Buffer;
  signature: { timestamp: string; signature: string };
  authorization: string;
  /** Charges a proven sender's own budget (apart from keys and IPs) and says whether it allows the request. */
  charge: (budget: string) => RateDecision;
}

/** A sender that did not prove itself: the answer (401, 404), charged to its source IP as a failed key is. */
export interface SenderRefusal {
  rejection: Rejection;
  headers?: Record<string, string>;
}

export interface RouteDef {
  method: HttpMethod;
  path: string;
  summary: string;
  /** A longer description for the OpenAPI document (absent: the summary says it all). */
  description?: string;
  /** The operation's stable name in the OpenAPI document (absent: derived by the document). */
  operationId?: string;
  /** The answer is a list page: `{ data: [response…], has_more }` rather than `{ data: response }`. */
  list?: boolean;
  /** An example of the 2xx body, for the OpenAPI document. */
  example?: unknown;
  auth: 'public' | 'key';
  /**
   * Public routes whose sender proves who it is: checks the proof, then charges the sender's own budget
   * (apart from every IP's) and answers its decision; or refuses (then charged to the source IP, as a
   * failed key is). Null: nothing to prove here (the request is charged to its IP like any public one).
   */
  verifiedBudget?: (proof: SenderProof) => RateDecision | SenderRefusal | null;
  /** Scope family checked against the key's scopes (e.g. `payments`). */
  family: string;
  /** Money-moving POST: needs an Idempotency-Key; the first result is stored and replayed. */
  idempotent?: boolean;
  sandboxOnly?: boolean;
  /**
   * The route's command stores an Idempotency-Key's result in the shard (optional key). Every other
   * keyed POST without `idempotent` gets the front end's store (src/http/idempotency-store.ts).
   */
  keyedInShard?: boolean;
  /** Account-level resource (webhooks, the sandbox clock, collection outcomes, rail switches): a customer-scoped key gets 403. */
  accountLevel?: boolean;
  /** The body is an HTML form (application/x-www-form-urlencoded), left in rawBody for the route. */
  form?: boolean;
  body?: TSchema;
  /** The body may be left out entirely (validated against `body` when present). */
  bodyOptional?: boolean;
  query?: TSchema;
  /** Response `data` schema, for the OpenAPI document. */
  response?: TSchema;
  responseStatus?: number;
  errors?: readonly string[];
  handle: (ctx: RequestContext) => Promise<Reply> | Reply;
}

export interface CompiledRoute extends RouteDef {
  segments: string[];
  /** The parameter name at each segment (null: a literal segment), computed once when the route is added. */
  params: Array<string | null>;
  bodyValidator?: Validator;
  queryValidator?: Validator;
}
