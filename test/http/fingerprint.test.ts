// The idempotency fingerprint is stored with every kept result (shard idempotency rows, the front end's
// table), so its bytes are a format: a record written by an earlier build (64 hex characters) must still
// match the same request after an upgrade, and any change to method, path or body must change it.
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { FrontIdempotencyStore } from '../../src/http/idempotency-store.ts';
import { FINGERPRINT_CHARS, sameRequest } from '../../src/idempotency-fingerprint.ts';

const body = Buffer.from('{"customer_id":"01M891YZN202FG42810MK1G89C","amount_minor":10000,"currency":"NGN","method":"bank_transfer"}');

it('fingerprint: base64url of the first 16 bytes of SHA-256 of "METHOD path\\n" then the raw body', () => {
  const digest = createHash('sha256').update('POST /v1/payments\n').update(body).digest();
  const fresh = FrontIdempotencyStore.fingerprint('POST', '/v1/payments', body);
  assert.equal(fresh, digest.subarray(0, 16).toString('base64url'));
  assert.equal(fresh.length, FINGERPRINT_CHARS);
  assert.equal(FrontIdempotencyStore.fingerprint('POST', '/v1/payments', Buffer.alloc(0)), createHash('sha256').update('POST /v1/payments\n').digest().subarray(0, 16).toString('base64url'));
});

it('fingerprint: a record stored by an earlier build (the whole SHA-256 in hex) → still the same request; another body → not', () => {
  const oldStored = createHash('sha256').update('POST /v1/payments\n').update(body).digest('hex');
  const fresh = FrontIdempotencyStore.fingerprint('POST', '/v1/payments', body);
  assert.equal(sameRequest(oldStored, fresh), true);
  assert.equal(sameRequest(fresh, fresh), true);
  const changed = Buffer.from(body);
  changed[5] = 0x41;
  const other = FrontIdempotencyStore.fingerprint('POST', '/v1/payments', changed);
  assert.equal(sameRequest(oldStored, other), false);
  assert.equal(sameRequest(fresh, other), false);
  // A hex digest whose first half matches but whose fresh side is not a fingerprint: no match.
  assert.equal(sameRequest(oldStored, oldStored.slice(0, 22)), false);
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
