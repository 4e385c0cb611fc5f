// The sandbox's hosted card checkout: the page a card payment's `provider.checkout_url` opens, where
// the payer completes or declines. Main thread; public routes authorised by the token in the address.
// Invariant: only the holder of a payment's checkout token can complete or decline it.
import Type from 'typebox';
import type { Reply, RequestContext, RouteDef } from '../http/types.ts';
import { command, errorOf, isRejection, partitionOf, type ApiDeps } from './deps.ts';
import { reject } from '../errors.ts';

const escape = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * The page holds its token in its address and a Pay button: no other site may frame it (clickjacking),
 * no cache may keep it, and no link from it may carry the address on in a Referer.
 */
const PAGE_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'Content-Type': 'text/html; charset=utf-8',
  'X-Frame-Options': 'DENY',
  'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
  'Referrer-Policy': 'no-referrer',
  'Cache-Control': 'no-store',
});

function page(title: string, body: string): Reply {
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escape(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem}button{font-size:1rem;padding:.6rem 1.2rem;margin-right:.5rem}</style>
</head><body><h1>${escape(title)}</h1>${body}<p><small>kobo sandbox checkout — no real card is charged.</small></p></body></html>`;
  return { status: 200, json: html, headers: PAGE_HEADERS };
}

function formatAmount(minor: number, currency: string): string {
  return `${currency} ${(minor / 100).toFixed(2)}`;
}

async function checkout(deps: ApiDeps, ctx: RequestContext, action: 'view' | 'complete' | 'decline'): Promise<Reply> {
  const id = ctx.params.id ?? '';
  const partition = partitionOf(id, 'payment');
  if (isRejection(partition)) return errorOf(partition);
  const token = ctx.query.get('token') ?? '';
  if (!/^[0-9a-f]{32}$/.test(token)) return errorOf(reject('NOT_FOUND', 'No such checkout.'));
  const reply = await command(deps, ctx, partition, { k: 'payment.checkout', id, token, action });
  if (reply.json === undefined) {
    if (reply.error?.code === 'CONFLICT') return { ...page('This payment is closed', `<p>${escape(reply.error.message)}</p>`), status: 409 };
    return reply;
  }
  const data = (JSON.parse(reply.json) as { data: { status: string; amount_minor: number; currency: string; customer_name?: string } }).data;
  if (action === 'complete') return page('Payment completed', `<p>${escape(formatAmount(data.amount_minor, data.currency))} paid.</p>`);
  if (action === 'decline') return page('Payment declined', '<p>The card was declined. You can close this page.</p>');
  if (data.status !== 'pending') return page('This payment is closed', `<p>Status: ${escape(data.status)}.</p>`);
  const query = `?token=${token}`;
  return page(
    `Pay ${formatAmount(data.amount_minor, data.currency)}`,
    `<p>Paying as ${escape(data.customer_name ?? '')}.</p>
<form method="post" action="/v1/checkout/${id}/complete${query}" style="display:inline"><button type="submit">Pay</button></form>
<form method="post" action="/v1/checkout/${id}/decline${query}" style="display:inline"><button type="submit">Decline</button></form>`,
  );
}

const TokenQuery = Type.Object({ token: Type.String() }, { additionalProperties: false });

export function checkoutRoutes(deps: ApiDeps): RouteDef[] {
  const route = (method: 'GET' | 'POST', path: string, action: 'view' | 'complete' | 'decline', summary: string): RouteDef => ({
    method,
    path,
    summary,
    auth: 'public',
    family: 'checkout',
    query: TokenQuery,
    errors: ['NOT_FOUND', 'CONFLICT'],
    handle: (ctx) => checkout(deps, ctx, action),
  });
  return [
    route('GET', '/v1/checkout/:id', 'view', 'Sandbox hosted card checkout page (HTML)'),
    route('POST', '/v1/checkout/:id/complete', 'complete', 'Sandbox checkout: the payer pays'),
    route('POST', '/v1/checkout/:id/decline', 'decline', 'Sandbox checkout: the card is declined'),
  ];
}
