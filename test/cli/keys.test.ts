// The `kobo keys` CLI against a running server: create (secret shown once), list (never the secret),
// scoped and customer-bound keys, rotate with a grace period, revoke → 401.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, startServer, tempDataDir, uniqueEmail, uniquePhone } from '../helpers/server.ts';
import { kobo } from '../helpers/cli.ts';

function secretOf(stdout: string): string {
  const match = /secret \(shown once\): (sk_\w+_[A-Za-z0-9_-]+)/.exec(stdout);
  assert.ok(match, `no secret in:\n${stdout}`);
  return match[1]!;
}

function idOf(stdout: string): string {
  const match = /^(key_[0-9A-Z]+)/m.exec(stdout);
  assert.ok(match, `no key id in:\n${stdout}`);
  return match[1]!;
}

test('keys: create, list, scope, rotate and revoke take effect on the running server', { timeout: 90_000 }, async () => {
  const dataDir = tempDataDir();
  const created = kobo(dataDir, '--init', 'keys', 'create', '--account', 'ops', '--label', 'first');
  assert.equal(created.status, 0, created.stderr);
  const secret = secretOf(created.stdout);
  assert.match(secret, /^sk_test_/);
  const server = await startServer({ dataDir });
  try {
    const api = client(server.baseUrl, secret);
    const customer = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: { name: 'Ops', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
    assert.equal(customer.status, 201);
    const customerId = customer.body.data.id as string;

    const listed = kobo(dataDir, 'keys', 'list');
    assert.equal(listed.status, 0);
    assert.ok(!listed.stdout.includes(secret), 'keys list must never print a secret');
    assert.ok(listed.stdout.includes(`${secret.slice(0, 10)}…`), 'it shows the prefix and two characters');
    assert.ok(!listed.stdout.includes(secret.slice(0, 11)), 'and not a third');
    assert.match(listed.stdout, /account ops/);

    const readOnly = secretOf(kobo(dataDir, 'keys', 'create', '--account', 'ops', '--scopes', 'read').stdout);
    assert.equal((await api('GET', `/v1/customers/${customerId}`, { key: readOnly })).status, 200);
    const denied = await api('POST', '/v1/transactions', { key: readOnly, idempotencyKey: idem(), body: { type: 'funding', customer_id: customerId, amount_minor: 100, currency: 'NGN' } });
    assert.equal(denied.status, 403);
    assert.equal(denied.body.error.code, 'FORBIDDEN');

    const bound = secretOf(kobo(dataDir, 'keys', 'create', '--account', 'ops', '--customer', customerId).stdout);
    const methods = await api('GET', '/v1/payments/methods', { key: bound });
    assert.equal(methods.status, 200, 'a customer-bound key needs no customer_id');
    assert.equal(methods.body.data.customer_id, customerId);

    const rotated = kobo(dataDir, 'keys', 'rotate', idOf(created.stdout), '--grace-hours', '1');
    assert.equal(rotated.status, 0, rotated.stderr);
    const next = secretOf(rotated.stdout);
    assert.equal((await api('GET', `/v1/customers/${customerId}`, { key: next })).status, 200, 'new key works');
    assert.equal((await api('GET', `/v1/customers/${customerId}`, { key: secret })).status, 200, 'old key works during the grace period');

    const revoked = kobo(dataDir, 'keys', 'revoke', idOf(rotated.stdout));
    assert.equal(revoked.status, 0, revoked.stderr);
    await new Promise((resolve) => setTimeout(resolve, 1_100)); // the server's key cache lives 1 s
    const refused = await api('GET', `/v1/customers/${customerId}`, { key: next });
    assert.equal(refused.status, 401);
    assert.equal(refused.body.error.code, 'UNAUTHENTICATED');

    assert.notEqual(kobo(dataDir, 'keys', 'revoke', 'key_NOPE').status, 0);
  } finally {
    await server.stop();
  }
});

test('keys create --customer: a customer outside the key\'s account or environment (or none at all) → one-line error, exit non-zero, no key; its own account → a key that works', { timeout: 90_000 }, async () => {
  const dataDir = tempDataDir();
  const unknown = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
  const early = kobo(dataDir, '--init', 'keys', 'create', '--customer', unknown);
  assert.notEqual(early.status, 0, `a data dir with no customers yet: ${early.stdout}`);
  assert.match(early.stderr, new RegExp(`kobo: keys create: no customer ${unknown} in account default \\(test\\)`));
  const owner = secretOf(kobo(dataDir, 'keys', 'create', '--account', 'ops').stdout);
  const server = await startServer({ dataDir });
  try {
    const customer = await client(server.baseUrl, owner)('POST', '/v1/customers', { idempotencyKey: idem(), body: { name: 'Ops', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
    assert.equal(customer.status, 201, JSON.stringify(customer.body));
    const id = customer.body.data.id as string;
    const before = kobo(dataDir, 'keys', 'list').stdout;
    for (const [args, why] of [
      [[], new RegExp(`no customer ${id} in account default \\(test\\); it belongs to account ops \\(test\\): pass --account ops`)],
      [['--account', 'elsewhere'], new RegExp(`no customer ${id} in account elsewhere \\(test\\)`)],
      [['--account', 'ops', '--env', 'live'], new RegExp(`no customer ${id} in account ops \\(live\\)`)],
      [['--account', 'ops', '--customer', unknown], new RegExp(`no customer ${unknown} in account ops \\(test\\)$`, 'm')],
    ] as const) {
      const refused = kobo(dataDir, 'keys', 'create', '--customer', id, ...args);
      assert.notEqual(refused.status, 0, `${args.join(' ')} accepted:\n${refused.stdout}`);
      assert.match(refused.stderr, why);
      assert.equal(refused.stderr.trim().split('\n').filter((line) => line.startsWith('kobo: keys create')).length, 1, refused.stderr);
      assert.doesNotMatch(refused.stdout, /secret/, 'no key was printed');
    }
    assert.equal(kobo(dataDir, 'keys', 'list').stdout, before, 'no key was stored');
    const made = kobo(dataDir, 'keys', 'create', '--account', 'ops', '--customer', id);
    assert.equal(made.status, 0, made.stderr);
    const bound = await client(server.baseUrl, secretOf(made.stdout))('GET', `/v1/customers/${id}`);
    assert.equal(bound.status, 200, JSON.stringify(bound.body));
  } finally {
    await server.stop();
  }
});

test('start: no key configured on a fresh data dir → a sandbox key is created and printed once', { timeout: 30_000 }, async () => {
  const server = await startServer({ keys: [] });
  // The secret goes to stderr, the listening line to stdout: two pipes, so either may arrive first.
  const deadline = Date.now() + 5_000;
  while (!/sandbox secret key/.test(server.output()) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
  const match = /sandbox secret key \(shown once, store it now\): (sk_test_\S+)/.exec(server.output());
  try {
    assert.ok(match, server.output());
    const api = client(server.baseUrl, match[1]!);
    assert.equal((await api('GET', '/v1/test_helpers/clock')).status, 200);
  } finally {
    await server.stop();
  }
  const again = await startServer({ keys: [], dataDir: server.dataDir });
  try {
    await new Promise((resolve) => setTimeout(resolve, 300)); // what stderr had to say has arrived
    assert.doesNotMatch(again.output(), /sandbox secret key/);
  } finally {
    await again.stop();
  }
});

test('keys create refuses a scope, IP or customer that is not one; rotate never brings an expired key back nor lengthens a grace', { timeout: 90_000 }, async () => {
  const dataDir = tempDataDir();
  assert.equal(kobo(dataDir, '--init', 'keys', 'list').status, 0);
  for (const [args, why] of [
    [['--scopes', 'payment:read'], /scope "payment:read" is not/],
    [['--scopes', 'payments:delete'], /scope "payments:delete" is not/],
    [['--scopes', 'payments:read:x'], /scope "payments:read:x" is not/],
    [['--ip-allow', '999.1.1.1'], /"999.1.1.1" is not an IP address or CIDR block/],
    [['--ip-allow', '10.0.0.0/33'], /"10.0.0.0\/33" is not an IP address/],
    [['--ip-allow', 'abc'], /"abc" is not an IP address/],
    [['--customer', 'NOTANID'], /--customer NOTANID is not a customer id/],
  ] as const) {
    const refused = kobo(dataDir, 'keys', 'create', '--account', 'ops', ...args);
    assert.notEqual(refused.status, 0, `${args.join(' ')} accepted:\n${refused.stdout}`);
    assert.match(refused.stderr, why);
  }
  for (const args of [['--scopes', '*'], ['--scopes', 'read,payments:write,webhooks'], ['--ip-allow', '127.0.0.1,10.0.0.0/8,2001:db8::/32']]) {
    assert.equal(kobo(dataDir, 'keys', 'create', '--account', 'ops', ...args).status, 0, args.join(' '));
  }
  assert.doesNotMatch(kobo(dataDir, 'keys', 'list').stdout, /payment:read|999\.1/, 'nothing refused was stored');

  const original = kobo(dataDir, 'keys', 'create', '--account', 'ops', '--label', 'leaked');
  const secret = secretOf(original.stdout);
  const id = idOf(original.stdout);
  assert.equal(kobo(dataDir, 'keys', 'rotate', id, '--grace-hours', '0.0005').status, 0); // 1.8 s
  // A second rotation inside the grace asks for 24 h: the old key's end does not move.
  const second = kobo(dataDir, 'keys', 'rotate', id, '--grace-hours', '24');
  assert.equal(second.status, 0, second.stderr);
  const line = kobo(dataDir, 'keys', 'list').stdout.split('\n').find((l) => l.startsWith(id))!;
  const expiresAt = Date.parse(/expires (\S+)/.exec(line)![1]!);
  assert.ok(expiresAt - Date.now() < 5_000, `still ends within seconds: ${line}`);
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, expiresAt - Date.now()) + 100));
  assert.match(kobo(dataDir, 'keys', 'list').stdout.split('\n').find((l) => l.startsWith(id))!, /  expired  /);
  const again = kobo(dataDir, 'keys', 'rotate', id, '--grace-hours', '24');
  assert.notEqual(again.status, 0, 'an expired key cannot be rotated back to life');
  assert.match(again.stderr, /has expired/);
  const server = await startServer({ dataDir, keys: [] });
  try {
    const r = await client(server.baseUrl, secret)('GET', '/v1/test_helpers/clock');
    assert.equal(r.status, 401, 'the old secret stays refused');
  } finally {
    await server.stop();
  }
});
