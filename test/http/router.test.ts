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
