// The idempotency fingerprint is stored with every kept result (shard idempotency rows, the front end's
// table), so its bytes are a format: a record written by an earlier build must still match the same
// request after an upgrade, and any change to method, path or body must change it.
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { FrontIdempotencyStore } from '../../src/http/idempotency-store.ts';

const body = Buffer.from('{"customer_id":"01M891YZN202FG42810MK1G89C","amount_minor":10000,"currency":"NGN","method":"bank_transfer"}');

it('fingerprint: SHA-256 hex of "METHOD path\\n" then the raw body → the digest earlier builds stored', () => {
  const stored = createHash('sha256').update('POST /v1/payments\n').update(body).digest('hex');
  assert.equal(FrontIdempotencyStore.fingerprint('POST', '/v1/payments', body), stored);
  assert.equal(FrontIdempotencyStore.fingerprint('POST', '/v1/payments', Buffer.alloc(0)), createHash('sha256').update('POST /v1/payments\n').digest('hex'));
});

it('fingerprint: another method, path or one byte of body → another fingerprint', () => {
  const base = FrontIdempotencyStore.fingerprint('POST', '/v1/payments', body);
  const changed = Buffer.from(body);
  changed[changed.length - 2] = 0x58;
  const others = [
    FrontIdempotencyStore.fingerprint('PATCH', '/v1/payments', body),
    FrontIdempotencyStore.fingerprint('POST', '/v1/transfers', body),
    FrontIdempotencyStore.fingerprint('POST', '/v1/payments', changed),
    // The newline keeps the path and the body apart: moving a byte across them changes the digest.
    FrontIdempotencyStore.fingerprint('POST', '/v1/payments{', body.subarray(1)),
  ];
  for (const other of others) assert.notEqual(other, base);
  assert.equal(new Set(others).size, others.length);
});
