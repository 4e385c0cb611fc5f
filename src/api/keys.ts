// The account's API keys over HTTP (beyond the contract): list, create, revoke, rotate; and GET
// /v1/keys/self, the asking key's own record. Main thread; control.db through ControlStore (the same
// code `kobo keys` uses). Invariant: a key reaches only keys of its own account and environment, and a
// secret is answered once, by the call that made it (a replay of that call answers without it).
import { reject } from '../errors.ts';
import type { Reply, RequestContext, RouteDef } from '../http/types.ts';
import { ipAllowProblem, scopeProblem } from '../http/auth.ts';
import { isUlid } from '../ids.ts';
import { generateSecret, keyExpired, type KeyRecord } from '../store/control-store.ts';
import { iso } from '../shard/views.ts';
import { ApiKey, KeyCreate, KeyRotate } from '../schemas/key.schema.ts';
import { command, errorOf, isRejection, partitionOf, type ApiDeps } from './deps.ts';
import Type from 'typebox';

/** Keys (revoked ones included) an account and environment may hold: the list answers them all at once. */
export const ACCOUNT_KEYS_MAX = 200;
const GRACE_HOURS_DEFAULT = 24;

const json = (status: number, data: unknown): Reply => ({ status, json: JSON.stringify({ data }) });

export function keyView(k: KeyRecord, nowMs: number, secret?: string): object {
  return {
    id: k.id,
    object: 'api_key',
    prefix: k.prefix,
    account: k.account,
    env: k.env,
    scopes: k.scopes,
    ip_allow: k.ipAllow,
    customer_id: k.customerId,
    status: k.status === 'active' && keyExpired(k, nowMs) ? 'expired' : k.status,
    label: k.label,
    created_at: iso(k.createdAtMs),
    expires_at: k.expiresAtMs === null ? null : iso(k.expiresAtMs),
    ...(secret === undefined ? {} : { secret }),
  };
}

/** The asking key (a keyed route always has one). */
function caller(ctx: RequestContext): KeyRecord {
  if (ctx.key === null) throw new Error('keys: a keyed route ran without a key');
  return ctx.key;
}

function ownKeys(deps: ApiDeps, me: KeyRecord): KeyRecord[] {
  return deps.control.listKeys().filter((k) => k.account === me.account && k.env === me.env);
}

/**
 * Writes need a full-access key: a narrower one could otherwise mint (or rotate into its hands) a key
 * wider than itself.
 */
function writeRefusal(me: KeyRecord): Reply | null {
  return me.scopes.includes('*') ? null : errorOf(reject('FORBIDDEN', "Managing keys needs a key with the '*' scope."));
}

/** The key named in the path, if it is the asking account's (another account's is as unknown as none). */
function target(deps: ApiDeps, ctx: RequestContext): KeyRecord | Reply {
  const id = ctx.params.id ?? '';
  const ulid = id.startsWith('key_') ? id.slice(4) : '';
  if (!isUlid(ulid)) return errorOf(reject('VALIDATION', 'key id is not key_ followed by a ULID.'));
  const me = caller(ctx);
  const found = deps.control.findById(id);
  if (found === undefined || found.account !== me.account || found.env !== me.env) return errorOf(reject('NOT_FOUND', 'No such key.'));
  return found;
}

async function createKey(deps: ApiDeps, ctx: RequestContext): Promise<Reply> {
  const me = caller(ctx);
  const refused = writeRefusal(me);
  if (refused !== null) return refused;
  const body = (ctx.body ?? {}) as KeyCreate;
  const problem = (body.scopes ?? []).map(scopeProblem).find((p) => p !== null) ?? (body.ip_allow ?? []).map(ipAllowProblem).find((p) => p !== null);
  if (problem !== undefined && problem !== null) return errorOf(reject('VALIDATION', problem));
  if (ownKeys(deps, me).length >= ACCOUNT_KEYS_MAX) return errorOf(reject('CONFLICT', `This account already holds ${ACCOUNT_KEYS_MAX} keys in this environment, the most allowed.`));
  if (body.customer_id !== undefined) {
    // A customer key acts for a customer of this account only: the shard says whether it is one.
    const partition = partitionOf(body.customer_id, 'customer');
    if (isRejection(partition)) return errorOf(partition);
    const found = await command(deps, ctx, partition, { k: 'customer.get', id: body.customer_id });
    if (found.status !== 200) return errorOf(reject('VALIDATION', `customer_id ${body.customer_id} is not a customer of this account.`));
  }
  const secret = generateSecret(me.env);
  const record = deps.control.insertKey({ secret, account: me.account, scopes: body.scopes ?? ['*'], ipAllow: body.ip_allow ?? [], customerId: body.customer_id ?? null, label: body.label ?? null, nowMs: Date.now() });
  return { ...json(201, keyView(record, Date.now(), secret)), replayJson: json(201, keyView(record, Date.now())).json };
}

function revokeKey(deps: ApiDeps, ctx: RequestContext): Reply {
  const me = caller(ctx);
  const refused = writeRefusal(me);
  if (refused !== null) return refused;
  const found = target(deps, ctx);
  if (!('hash' in found)) return found;
  // The key in use stays: revoking it would end the caller's own access mid-task (a console session
  // with it), and could leave the account with no key at all. Rotate it, or revoke it with another key.
  if (found.id === me.id) return errorOf(reject('CONFLICT', 'A key cannot revoke itself; rotate it, or revoke it with another key.'));
  if (found.status === 'revoked') return errorOf(reject('CONFLICT', 'This key is already revoked.'));
  deps.control.revoke(found.id);
  return json(200, keyView({ ...found, status: 'revoked' }, Date.now()));
}

function rotateKey(deps: ApiDeps, ctx: RequestContext): Reply {
  const me = caller(ctx);
  const refused = writeRefusal(me);
  if (refused !== null) return refused;
  const found = target(deps, ctx);
  if (!('hash' in found)) return found;
  const nowMs = Date.now();
  if (found.status !== 'active' || keyExpired(found, nowMs)) return errorOf(reject('CONFLICT', `This key is ${found.status === 'revoked' ? 'revoked' : 'expired'}; only an active key can be rotated.`));
  const graceHours = (ctx.body as { grace_hours?: number } | undefined)?.grace_hours ?? GRACE_HOURS_DEFAULT;
  const { secret, record } = deps.control.rotate(found.id, { graceMs: graceHours * 3_600_000, nowMs });
  return { ...json(201, keyView(record, nowMs, secret)), replayJson: json(201, keyView(record, nowMs)).json };
}

export function keyRoutes(deps: ApiDeps): RouteDef[] {
  const base = { auth: 'key', family: 'keys', accountLevel: true } as const;
  return [
    {
      ...base,
      method: 'GET',
      path: '/v1/keys',
      summary: "List this account's keys in this environment (never their secrets)",
      response: Type.Array(ApiKey),
      errors: ['FORBIDDEN'],
      handle: (ctx) => json(200, ownKeys(deps, caller(ctx)).map((k) => keyView(k, Date.now()))),
    },
    {
      // Any key may read its own record (a customer-scoped one too): what a client, or the console's
      // sign-in, asks to learn which key it holds.
      method: 'GET',
      path: '/v1/keys/self',
      summary: 'The key making this request (never its secret)',
      auth: 'key',
      family: 'keys',
      response: ApiKey,
      handle: (ctx) => json(200, keyView(caller(ctx), Date.now())),
    },
    {
      ...base,
      method: 'POST',
      path: '/v1/keys',
      summary: "Create a key in this account and environment; its secret is answered once (needs a '*' key)",
      body: KeyCreate,
      bodyOptional: true,
      response: ApiKey,
      responseStatus: 201,
      errors: ['VALIDATION', 'FORBIDDEN', 'CONFLICT'],
      handle: (ctx) => createKey(deps, ctx),
    },
    {
      ...base,
      method: 'POST',
      path: '/v1/keys/:id/revoke',
      summary: "Revoke a key at once (not the key making the request; needs a '*' key)",
      response: ApiKey,
      errors: ['VALIDATION', 'NOT_FOUND', 'CONFLICT', 'FORBIDDEN'],
      handle: (ctx) => revokeKey(deps, ctx),
    },
    {
      ...base,
      method: 'POST',
      path: '/v1/keys/:id/rotate',
      summary: "Replace a key: the new secret is answered once; the old one works for grace_hours more (default 24; needs a '*' key)",
      body: KeyRotate,
      bodyOptional: true,
      response: ApiKey,
      responseStatus: 201,
      errors: ['VALIDATION', 'NOT_FOUND', 'CONFLICT', 'FORBIDDEN'],
      handle: (ctx) => rotateKey(deps, ctx),
    },
  ];
}
