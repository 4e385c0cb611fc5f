// Rate-limit headers on every authenticated answer, and Retry-After on 429 (so clients back off for
// exactly as long as the window needs).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { client, secretKey, startServer, type TestServer } from '../helpers/server.ts';

const key = secretKey();
let server: TestServer;

before(async () => {
  server = await startServer({ keys: [`${key}@rate`], shards: 1, env: { KOBO_RATE_LIMIT_READ_PER_MIN: '3' } });
});
after(async () => server.stop());

test('429 RATE_LIMITED → Retry-After equal to X-RateLimit-Reset; a 404 over the limit is a 429 too', async () => {
  const api = client(server.baseUrl, key);
  const answers = [];
  for (let i = 0; i < 3; i += 1) answers.push(await api('GET', '/v1/no-such-thing'));
  for (const a of answers) {
    assert.equal(a.status, 404);
    assert.match(a.headers.get('x-ratelimit-remaining') ?? '', /^\d+$/);
  }
  assert.equal(answers[2]!.headers.get('x-ratelimit-remaining'), '0');
  for (const path of ['/v1/no-such-thing', '/v1/test_helpers/clock']) {
    const limited = await api('GET', path);
    assert.equal(limited.status, 429);
    assert.equal(limited.body.error.code, 'RATE_LIMITED');
    assert.match(limited.headers.get('retry-after') ?? '', /^\d+$/);
    assert.equal(limited.headers.get('retry-after'), limited.headers.get('x-ratelimit-reset'));
  }
});
