// The registry of stable error codes and their HTTP statuses: the spec's table plus the few codes the
// platform adds (documented in docs/decisions.md). Any thread. Rejections are values, never thrown.
// Invariant: every code a client can see is in this table, with exactly one status.

/**
 * The message of the 503 a command gets while its shard moves to another node (cluster mode, per-shard
 * ownership): the HTTP front adds `Retry-After: 1` to exactly this answer. Here so that the front end and
 * the pool share it without the front importing the shard layer.
 */
export const SHARD_MOVING_MESSAGE = 'The shard is moving to another node; retry shortly (with the same Idempotency-Key).';

export const ERROR_STATUS = {
  VALIDATION: 400,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  SERVICE_COUNTRY_NOT_ELIGIBLE: 403,
  PIN_REQUIRED: 403,
  PIN_LOCKED: 403,
  COMPLIANCE_DENIED: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  QUOTE_MISMATCH: 409,
  QUOTE_EXPIRED: 409,
  IDEMPOTENCY_REPLAY: 409,
  CONFLICT: 409,
  DUPLICATE: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  VALIDATION_ERROR: 422,
  IDEMPOTENCY_KEY_REQUIRED: 422,
  SERVICE_UNAVAILABLE: 422,
  SERVICE_NOT_EXECUTABLE: 422,
  INSUFFICIENT_FUNDS: 422,
  LIMIT_EXCEEDED: 422,
  FX_QUOTE_UNAVAILABLE: 422,
  METHOD_NOT_SELECTABLE: 422,
  VERIFICATION_FAILED: 422,
  RATE_LIMITED: 429,
  INTERNAL: 500,
  /** A stored row fails its checksum: not served (docs/decisions.md, "Trust (issue #24, data)"). */
  DATA_DAMAGED: 500,
  PROVIDER_FAILURE: 502,
  MAINTENANCE: 503,
  UNAVAILABLE: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export interface Rejection {
  code: ErrorCode;
  message: string;
  /** Only where the spec gives one code two statuses (COMPLIANCE_DENIED: 403 on orders, 422 on transfers). */
  status?: number;
}

export function reject(code: ErrorCode, message: string, status?: number): Rejection {
  return status === undefined ? { code, message } : { code, message, status };
}

/** True for a Rejection value (entities carry an `id`, rejections never do). */
export function isRejection(value: unknown): value is Rejection {
  return typeof value === 'object' && value !== null && 'code' in value && 'message' in value && !('id' in value);
}

export function statusOf(rejection: Rejection): number {
  return rejection.status ?? ERROR_STATUS[rejection.code];
}
