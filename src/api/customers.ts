// Customer and wallet endpoints: POST/GET/PATCH /v1/customers, GET /v1/wallets/{id}.
// Main thread: normalises email and phone (libphonenumber), enforces per-account uniqueness through
// the customer index, hashes PINs with scrypt off the event loop, then sends shard commands.
// Invariant: a PIN is never stored or returned in clear; only `pin_set` is shown.
import assert from 'node:assert/strict';
import { parsePhoneNumberFromString } from 'libphonenumber-js';
import { findCountry } from '../catalogue/countries.ts';
import { reject, type Rejection } from '../errors.ts';
import { PARTITIONS } from '../config.ts';
import type { Reply, RequestContext, RouteDef } from '../http/types.ts';
import Type from 'typebox';
import { partitionOfId } from '../ids.ts';
import { Customer, CustomerCreate, CustomerPatch, Wallet } from '../schemas/customer.schema.ts';
import type { CustomerPatchBody } from '../shard/protocol.ts';
import { byIdHandler, command, errorOf, isRejection, partitionOf, type ApiDeps } from './deps.ts';
import { profileCache } from './profile-cache.ts';
import { hashPin, pinCheck } from './pin-check.ts';
import { accessRejection } from '../shard/lifecycle/context.ts';


const EMAIL_PATTERN = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export function normalizeEmail(email: string): string | Rejection {
  const value = email.trim().toLowerCase();
  return EMAIL_PATTERN.test(value) ? value : reject('VALIDATION', 'email is not a valid address.');
}

export function normalizePhone(phone: string): string | Rejection {
  if (!phone.startsWith('+')) return reject('VALIDATION', 'phone must be E.164 (start with + and the country code).');
  const parsed = parsePhoneNumberFromString(phone);
  if (parsed === undefined || !parsed.isValid()) return reject('VALIDATION', 'phone is not a valid number.');
  return parsed.number;
}

/**
 * The one rule for the fields creation and PATCH both accept: the name trimmed and never blank, the
 * email trimmed and lower-cased, the phone in E.164. Each field is checked only when given.
 */
export function customerFields(body: { name?: string; email?: string; phone?: string }): { name?: string; email?: string; phone?: string } | Rejection {
  const fields: { name?: string; email?: string; phone?: string } = {};
  if (body.name !== undefined) {
    fields.name = body.name.trim();
    if (fields.name === '') return reject('VALIDATION', 'name must not be blank.');
  }
  if (body.email !== undefined) {
    const email = normalizeEmail(body.email);
    if (isRejection(email)) return email;
    fields.email = email;
  }
  if (body.phone !== undefined) {
    const phone = normalizePhone(body.phone);
    if (isRejection(phone)) return phone;
    fields.phone = phone;
  }
  return fields;
}

function customerIdOf(reply: Reply): string | undefined {
  if (reply.json === undefined) return undefined;
  return (JSON.parse(reply.json) as { data: { id: string; email: string; phone: string } }).data.id;
}

async function createCustomer(deps: ApiDeps, ctx: Parameters<RouteDef['handle']>[0]): Promise<Reply> {
  if (ctx.key?.customerId != null) return errorOf(reject('FORBIDDEN', 'A customer-scoped key cannot create customers.'));
  const body = ctx.body as CustomerCreate;
  const fields = customerFields(body);
  if (isRejection(fields)) return errorOf(fields);
  const { name, email, phone } = fields;
  assert(name !== undefined && email !== undefined && phone !== undefined, 'customerFields returns every field it was given');
  const country = findCountry(body.country_code);
  if (country === undefined || !country.registration_enabled) {
    return errorOf(reject('VALIDATION', `country_code ${body.country_code} is not open for registration.`));
  }
  const values = { email, phone };
  const duplicate = deps.customers.taken(ctx.owner, values);
  const holder = `pending:${ctx.requestId}`;
  if (duplicate === null) deps.customers.reserve(ctx.owner, values, holder);
  const partition = Math.floor(Math.random() * PARTITIONS);
  const reply = await command(
    deps,
    ctx,
    partition,
    { k: 'customer.create', body: { name, email, phone, countryCode: country.code, duplicate } },
    { idempotent: true },
  );
  if (duplicate === null) {
    const id = reply.status === 201 ? customerIdOf(reply) : undefined;
    if (id !== undefined) deps.customers.reserve(ctx.owner, values, id);
    else deps.customers.release(ctx.owner, values, holder);
  }
  return reply;
}

/**
 * Fields only the account's own keys may set: they widen what the customer may do (tier: its limits;
 * kyc_level: its payment methods and services), so they are the integrator's compliance decisions. A
 * key acting for the customer itself may change its contact details and its PIN, never these.
 */
const ACCOUNT_DECIDES: ReadonlyArray<keyof CustomerPatch> = ['tier', 'kyc_level'];

async function patchCustomer(deps: ApiDeps, ctx: Parameters<RouteDef['handle']>[0]): Promise<Reply> {
  const id = ctx.params.id ?? '';
  const partition = partitionOf(id, 'customer');
  if (isRejection(partition)) return errorOf(partition);
  const body = ctx.body as CustomerPatch;
  if (ctx.key?.customerId != null) {
    const decided = ACCOUNT_DECIDES.filter((field) => body[field] !== undefined);
    if (decided.length > 0) return errorOf(reject('FORBIDDEN', `A customer-scoped key cannot change ${decided.join(' or ')}: the account decides them.`));
  }
  const fields = customerFields(body);
  if (isRejection(fields)) return errorOf(fields);
  const patch: CustomerPatchBody = { ...fields };
  if (body.tier !== undefined) patch.tier = body.tier;
  if (body.kyc_level !== undefined) patch.kycLevel = body.kyc_level;
  if (body.pin !== undefined) {
    // A key that acts for the customer itself must prove the current PIN to change or remove it (and a
    // locked PIN stays locked); the account's own keys may reset a forgotten one.
    if (ctx.key?.customerId != null) {
      const refused = await pinCheck(deps, ctx, id, partition);
      if (refused !== null) return refused;
    }
    patch.pinHash = body.pin === null ? null : await hashPin(body.pin);
  }
  if (patch.email === undefined && patch.phone === undefined) return command(deps, ctx, partition, { k: 'customer.update', id, patch });

  // Email or phone changes: read the current values (and check access) first, so the old ones are freed.
  const current = await command(deps, ctx, partition, { k: 'customer.get', id });
  if (current.json === undefined) return current;
  const before = (JSON.parse(current.json) as { data: { email: string; phone: string } }).data;
  const values = { ...(patch.email === undefined ? {} : { email: patch.email }), ...(patch.phone === undefined ? {} : { phone: patch.phone }) };
  const taken = deps.customers.taken(ctx.owner, values, id);
  if (taken !== null) return errorOf(reject('DUPLICATE', `A customer with this ${taken} is already registered.`));
  deps.customers.reserve(ctx.owner, values, id);
  const reply = await command(deps, ctx, partition, { k: 'customer.update', id, patch });
  if (reply.status === 200) {
    deps.customers.release(ctx.owner, { ...(patch.email !== undefined && patch.email !== before.email ? { email: before.email } : {}), ...(patch.phone !== undefined && patch.phone !== before.phone ? { phone: before.phone } : {}) }, id);
  } else {
    deps.customers.release(ctx.owner, { ...(values.email !== before.email && values.email !== undefined ? { email: values.email } : {}), ...(values.phone !== before.phone && values.phone !== undefined ? { phone: values.phone } : {}) }, id);
  }
  return reply;
}

export function customerRoutes(deps: ApiDeps): RouteDef[] {
  return [
    {
      method: 'POST',
      path: '/v1/customers',
      summary: 'Create a customer (and its home-currency wallet)',
      auth: 'key',
      family: 'customers',
      idempotent: true,
      body: CustomerCreate,
      response: Customer,
      responseStatus: 201,
      errors: ['VALIDATION', 'DUPLICATE', 'IDEMPOTENCY_KEY_REQUIRED', 'IDEMPOTENCY_REPLAY'],
      handle: (ctx) => createCustomer(deps, ctx),
    },
    {
      // Beyond the contract (docs/decisions.md): find a customer by email or phone, as the list shape. Not
      // under /v1/customers/: PATCH /v1/customers/:id would answer there too.
      method: 'GET',
      path: '/v1/search/customers',
      summary: 'Find the customer with this email or phone (normalised as at creation): a list of zero or one',
      auth: 'key',
      family: 'customers',
      accountLevel: true,
      query: CustomerSearchQuery,
      response: Customer,
      list: true,
      errors: ['VALIDATION', 'FORBIDDEN'],
      handle: (ctx) => searchCustomer(deps, ctx),
    },
    {
      method: 'GET',
      path: '/v1/customers/:id',
      summary: 'Retrieve a customer',
      auth: 'key',
      family: 'customers',
      response: Customer,
      errors: ['VALIDATION', 'NOT_FOUND', 'FORBIDDEN'],
      handle: byIdHandler(deps, 'customer', (id) => ({ k: 'customer.get', id })),
    },
    {
      method: 'PATCH',
      path: '/v1/customers/:id',
      summary: 'Update a customer (name, email, phone, PIN, tier, KYC level)',
      auth: 'key',
      family: 'customers',
      body: CustomerPatch,
      response: Customer,
      errors: ['VALIDATION', 'NOT_FOUND', 'FORBIDDEN', 'DUPLICATE'],
      handle: async (ctx) => {
        // The catalogue's cached profile (KYC level) must not outlive this change: drop it before the
        // command is sent and again once it is answered (a read racing the change is not cached).
        profileCache.invalidate(ctx.params.id ?? '');
        try {
          return await patchCustomer(deps, ctx);
        } finally {
          profileCache.invalidate(ctx.params.id ?? '');
        }
      },
    },
    {
      method: 'GET',
      path: '/v1/wallets/:id',
      summary: 'Retrieve a wallet with its balances',
      auth: 'key',
      family: 'wallets',
      response: Wallet,
      errors: ['VALIDATION', 'NOT_FOUND', 'FORBIDDEN'],
      handle: walletHandler(deps),
    },
  ];
}

/**
 * GET /v1/wallets/{id}: a wallet changed since start is answered from the front end's view of its last
 * durable change, with the shard's access rules; any other goes to its shard.
 */
function walletHandler(deps: ApiDeps): RouteDef['handle'] {
  const fromShard = byIdHandler(deps, 'wallet', (id) => ({ k: 'wallet.get', id }));
  return (ctx) => {
    const view = deps.walletViews?.get(ctx.params.id ?? '');
    if (view === undefined) return fromShard(ctx);
    const denied = accessRejection({ owner: ctx.owner, customerScope: ctx.key?.customerId ?? null }, view.update, 'wallet');
    return denied === null ? { status: 200, json: view.update.json, bytes: view.bytes } : errorOf(denied);
  };
}

const CustomerSearchQuery = Type.Object(
  { email: Type.Optional(Type.String({ minLength: 1, maxLength: 254 })), phone: Type.Optional(Type.String({ minLength: 1, maxLength: 32 })) },
  { additionalProperties: false },
);

/** GET /v1/search/customers: the index names the holder; its shard answers the customer (or nothing). */
async function searchCustomer(deps: ApiDeps, ctx: RequestContext): Promise<Reply> {
  const email = ctx.query.get('email');
  const phone = ctx.query.get('phone');
  if ((email === null) === (phone === null)) return errorOf(reject('VALIDATION', 'Send email or phone (one of them).'));
  const value = email !== null ? normalizeEmail(email) : normalizePhone(phone!);
  if (isRejection(value)) return errorOf(value);
  const id = deps.customers.find(ctx.owner, email !== null ? { email: value } : { phone: value });
  const partition = id === undefined ? -1 : partitionOfId(id);
  if (id === undefined || partition < 0 || partition >= PARTITIONS) return { status: 200, json: '{"data":[],"has_more":false}' };
  const found = await command(deps, ctx, partition, { k: 'customer.get', id });
  if (found.status !== 200) return { status: 200, json: '{"data":[],"has_more":false}' };
  const customer = (JSON.parse(found.json ?? '{}') as { data?: unknown }).data;
  return { status: 200, json: JSON.stringify({ data: [customer], has_more: false }) };
}
