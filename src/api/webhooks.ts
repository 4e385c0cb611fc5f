// Webhook endpoints: create and list subscriptions, list deliveries (by subscription, event type,
// status), redeliver one. Main thread; answered from webhooks.db, no shard involved.
// Invariant: the signing secret is returned once, by the create call, and by nothing else.
import { randomBytes } from 'node:crypto';
import Type from 'typebox';
import { reject } from '../errors.ts';
import type { Reply, RequestContext, RouteDef } from '../http/types.ts';
import { Delivery, DeliveriesQuery, Subscription, SubscriptionCreate } from '../schemas/webhook.schema.ts';
import { isUlid } from '../ids.ts';
import { urlRejection, type UrlPolicyOptions } from '../webhooks/url-policy.ts';
import type { Delivery as DeliveryRecord, Subscription as SubscriptionRecord, WebhookStore } from '../webhooks/store.ts';
import type { Dispatcher } from '../webhooks/dispatcher.ts';
import { errorOf } from './deps.ts';
import type { SandboxClocks } from './clocks.ts';
import { iso } from '../shard/views.ts';

const json = (status: number, data: unknown): Reply => ({ status, json: JSON.stringify({ data }) });

function subscriptionView(s: SubscriptionRecord, withSecret = false): object {
  return {
    id: s.id,
    object: 'webhook_subscription',
    url: s.url,
    events: s.events,
    status: s.status,
    consecutive_failures: s.consecutiveFailures,
    created_at: iso(s.createdAtMs),
    ...(withSecret ? { secret: s.secret } : {}),
  };
}

function deliveryView(store: WebhookStore, d: DeliveryRecord): object {
  return {
    id: d.id,
    object: 'webhook_delivery',
    event_id: d.eventId,
    event_type: d.eventType,
    event_key: d.eventKey,
    subscription_id: d.subscriptionId,
    status: d.status,
    attempts: d.attempts,
    next_attempt_at: d.status === 'pending' && d.nextAttemptAtMs !== null ? iso(d.nextAttemptAtMs) : null,
    last_response_code: d.lastStatusCode,
    last_duration_ms: d.lastDurationMs,
    last_error: d.lastError,
    attempt_log: store.attemptsOf(d.id).map((a) => ({ attempt: a.n, at: iso(a.atMs), response_code: a.statusCode, duration_ms: a.durationMs, error: a.error, ok: a.ok })),
    created_at: iso(d.createdAtMs),
    updated_at: iso(d.updatedAtMs),
  };
}

export interface WebhookDeps {
  store: WebhookStore;
  dispatcher: Dispatcher;
  clocks: SandboxClocks;
  /** Active subscriptions an account may hold (KOBO_WEBHOOK_SUBSCRIPTIONS_MAX). */
  subscriptionsMax: number;
  urlPolicy: UrlPolicyOptions;
}

function env(ctx: RequestContext): 'test' | 'live' {
  return ctx.key?.env === 'live' ? 'live' : 'test';
}

export function webhookRoutes(deps: WebhookDeps): RouteDef[] {
  return [
    {
      method: 'POST',
      path: '/v1/webhooks/subscriptions',
      summary: 'Subscribe a URL to event types; the signing secret is returned once',
      auth: 'key',
      family: 'webhooks',
      body: SubscriptionCreate,
      response: Subscription,
      responseStatus: 201,
      accountLevel: true,
      errors: ['VALIDATION', 'FORBIDDEN', 'CONFLICT'],
      handle: (ctx) => {
        const body = ctx.body as SubscriptionCreate;
        const refused = urlRejection(body.url, env(ctx), deps.urlPolicy);
        if (refused !== null) return errorOf(reject('VALIDATION', refused));
        const active = deps.store.subscriptions(ctx.owner).filter((s) => s.status === 'active').length;
        if (active >= deps.subscriptionsMax) {
          return errorOf(reject('CONFLICT', `This account already has ${active} active webhook subscriptions, the most allowed (${deps.subscriptionsMax}); one subscription can receive many event types.`));
        }
        const secret = `whsec_${randomBytes(24).toString('base64url')}`;
        const sub = deps.store.createSubscription({ owner: ctx.owner, url: body.url, events: body.events, secret, nowMs: ctx.nowMs });
        // A replay under the same Idempotency-Key answers the subscription without its secret.
        return { ...json(201, subscriptionView(sub, true)), replayJson: json(201, subscriptionView(sub)).json };
      },
    },
    {
      method: 'GET',
      path: '/v1/webhooks/subscriptions',
      summary: 'List subscriptions (never their secrets)',
      auth: 'key',
      family: 'webhooks',
      response: Type.Array(Subscription),
      accountLevel: true,
      handle: (ctx) => json(200, deps.store.subscriptions(ctx.owner).map((s) => subscriptionView(s))),
    },
    {
      // Beyond the contract (docs/decisions.md): `kobo webhooks enable` over HTTP, for the console.
      method: 'POST',
      path: '/v1/webhooks/subscriptions/:id/enable',
      summary: 'Re-enable a subscription (disabled after repeated failures); its failure count starts again at 0',
      auth: 'key',
      family: 'webhooks',
      response: Subscription,
      accountLevel: true,
      errors: ['VALIDATION', 'NOT_FOUND', 'FORBIDDEN'],
      handle: (ctx) => {
        const id = ctx.params.id ?? '';
        if (!isUlid(id)) return errorOf(reject('VALIDATION', 'subscription id is not a ULID.'));
        const sub = deps.store.subscription(id);
        if (sub === undefined || sub.owner !== ctx.owner) return errorOf(reject('NOT_FOUND', 'No such subscription.'));
        deps.store.setStatus(id, 'active', Date.now());
        deps.dispatcher.tick();
        return json(200, subscriptionView(deps.store.subscription(id) ?? sub));
      },
    },
    {
      method: 'GET',
      path: '/v1/webhooks/deliveries',
      summary: 'List delivery attempts, newest first, filtered by subscription, event type or status',
      auth: 'key',
      family: 'webhooks',
      query: DeliveriesQuery,
      response: Type.Array(Delivery),
      accountLevel: true,
      errors: ['VALIDATION', 'FORBIDDEN'],
      handle: (ctx) => {
        const q = ctx.query;
        const list = deps.store.deliveries({
          owner: ctx.owner,
          ...(q.get('subscription_id') === null ? {} : { subscriptionId: q.get('subscription_id')! }),
          ...(q.get('event_type') === null ? {} : { eventType: q.get('event_type')! }),
          ...(q.get('status') === null ? {} : { status: q.get('status')! }),
          limit: Number(q.get('limit') ?? '50'),
        });
        return json(200, list.map((d) => deliveryView(deps.store, d)));
      },
    },
    {
      method: 'POST',
      path: '/v1/webhooks/deliveries/:id/redeliver',
      summary: 'Queue a fresh delivery of the same event (new timestamp and signature)',
      auth: 'key',
      family: 'webhooks',
      response: Delivery,
      responseStatus: 201,
      accountLevel: true,
      errors: ['VALIDATION', 'NOT_FOUND', 'CONFLICT', 'FORBIDDEN'],
      handle: (ctx) => {
        const id = ctx.params.id ?? '';
        if (!isUlid(id)) return errorOf(reject('VALIDATION', 'delivery id is not a ULID.'));
        const original = deps.store.delivery(id);
        if (original === undefined || original.owner !== ctx.owner) return errorOf(reject('NOT_FOUND', 'No such delivery.'));
        if (deps.store.subscription(original.subscriptionId)?.status !== 'active') {
          return errorOf(reject('CONFLICT', 'The subscription is disabled; re-enable it first (kobo webhooks enable).'));
        }
        const fresh = deps.store.redeliver(original, deps.clocks.offsetOf(ctx.owner) + Date.now());
        deps.dispatcher.tick();
        return json(201, deliveryView(deps.store, fresh));
      },
    },
  ];
}
