// Route matching: literal routes (found by one lookup) win over parameter routes of the same method,
// another method's route is 405 with Allow, and paths the lookup does not know exactly (a trailing
// slash, a doubled slash) match as before through the segments.
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { Router } from '../../src/http/router.ts';
import type { HttpMethod, RouteDef } from '../../src/http/types.ts';

const route = (method: HttpMethod, path: string): RouteDef => ({ method, path, summary: path, auth: 'key', family: 'x', handle: () => ({ status: 200, json: '{}' }) });

const router = new Router();
router.add([
  route('GET', '/v1/payments/:id'),
  route('GET', '/v1/payments/methods'),
  route('POST', '/v1/payments'),
  route('GET', '/v1/services'),
  route('POST', '/v1/services/quote'),
  route('GET', '/v1/services/:code/plans'),
]);

const found = (method: string, path: string): string => {
  const m = router.match(method, path);
  return m.kind === 'found' ? `${m.route.method} ${m.route.path} ${JSON.stringify(m.params)}` : m.kind === 'method_not_allowed' ? `405 ${m.allow.join(',')}` : '404';
};

it('match: literal before parameter, parameters decoded, 405 naming the methods there are, 404 otherwise', () => {
  assert.equal(found('GET', '/v1/payments/methods'), 'GET /v1/payments/methods {}');
  assert.equal(found('GET', '/v1/payments/pay%5F1'), 'GET /v1/payments/:id {"id":"pay_1"}');
  assert.equal(found('GET', '/v1/payments/pay%zz'), 'GET /v1/payments/:id {"id":"pay%zz"}', 'a malformed escape stays as sent (the handler answers 400)');
  assert.equal(found('GET', '/v1/services'), 'GET /v1/services {}');
  assert.equal(found('GET', '/v1/services/'), 'GET /v1/services {}', 'a trailing slash goes through the segments');
  assert.equal(found('GET', '/v1//services'), 'GET /v1/services {}');
  assert.equal(found('GET', '/v1/services/quote'), '405 POST');
  assert.equal(found('DELETE', '/v1/payments'), '405 POST');
  assert.equal(found('GET', '/v1/services/airtime/plans'), 'GET /v1/services/:code/plans {"code":"airtime"}');
  assert.equal(found('GET', '/v1/nothing'), '404');
  // Each match hands out its own params object (handlers may keep it).
  const a = router.match('GET', '/v1/services');
  const b = router.match('GET', '/v1/services');
  assert.ok(a.kind === 'found' && b.kind === 'found' && a.params !== b.params);
});

it('match by resource: a route whose resource segment is a parameter still competes with every resource, in specificity order', () => {
  const r = new Router();
  r.add([
    route('GET', '/v1/:anything/raw'),
    route('GET', '/v1/wallets/:id'),
    route('GET', '/v1/wallets/:id/entries'),
    route('POST', '/v1/wallets/:id'),
    route('GET', '/v1/events/stream'),
    route('GET', '/v1/events/:id'),
  ]);
  const at = (method: string, path: string): string => {
    const m = r.match(method, path);
    return m.kind === 'found' ? `${m.route.path} ${JSON.stringify(m.params)}` : m.kind === 'method_not_allowed' ? `405 ${m.allow.join(',')}` : '404';
  };
  assert.equal(at('GET', '/v1/wallets/w1'), '/v1/wallets/:id {"id":"w1"}');
  assert.equal(at('GET', '/v1/wallets/raw'), '/v1/wallets/:id {"id":"raw"}', 'the literal resource outranks a parameter in its place');
  assert.equal(at('GET', '/v1/wallets/w1/entries'), '/v1/wallets/:id/entries {"id":"w1"}');
  assert.equal(at('GET', '/v1/customers/raw'), '/v1/:anything/raw {"anything":"customers"}', 'a resource no route names falls to the parameter routes');
  assert.equal(at('GET', '/v1/events/stream'), '/v1/events/stream {}');
  assert.equal(at('GET', '/v1/events/evt_1'), '/v1/events/:id {"id":"evt_1"}');
  assert.equal(at('DELETE', '/v1/wallets/w1'), '405 GET,POST');
  assert.equal(at('GET', '/v1/unknown/x'), '404');
  assert.equal(at('GET', '/'), '404');
});
