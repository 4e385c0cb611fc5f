// The CLI names the data dir it works on and never creates one by accident: a mistyped KOBO_DATA_DIR is
// refused (nothing written) unless --init is given; backups and replaced dirs land in git-ignored places.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from '../helpers/build.ts';
import { tempDataDir } from '../helpers/server.ts';
import { kobo } from '../helpers/cli.ts';

test('a directory that is not a data dir is refused, named, and left untouched; --init creates it', () => {
  const parent = tempDataDir('kobo-cli');
  const typo = path.join(parent, 'stat');
  for (const args of [['keys', 'list'], ['keys', 'create'], ['webhooks', 'list'], ['orders', 'resolve', '01ARZ3NDEKTSV4RRFFQ69G5FAV', '--outcome', 'delivered', '--no-wait']]) {
    const refused = kobo(typo, ...args);
    assert.equal(refused.status, 1, `${args.join(' ')}: ${refused.stderr}`);
    assert.match(refused.stderr, new RegExp(`^kobo: data dir ${typo}\\n`));
    assert.match(refused.stderr, /no kobo data dir at .*pass --init to create one/);
    assert.equal(fs.existsSync(typo), false, `${args.join(' ')} must not create ${typo}`);
  }
  const created = kobo(typo, '--init', 'keys', 'create', '--account', 'ops');
  assert.equal(created.status, 0, created.stderr);
  assert.match(created.stderr, new RegExp(`kobo: created data dir ${typo}`));
  assert.match(created.stdout, /secret \(shown once\): sk_test_/);
  const listed = kobo(typo, 'keys', 'list');
  assert.equal(listed.status, 0, listed.stderr);
  assert.match(listed.stderr, new RegExp(`^kobo: data dir ${typo}\\n`));
  assert.match(listed.stdout, /account ops/);
});

test('default backup and pre-restore locations are git-ignored; dist/ too', () => {
  const paths = ['data/backups/kobo-2026-11-23T20-00-00-000Z.kobo', 'data/state.pre-restore-2026-11-23T20-00-00-000Z/shard-0.db', 'data/state/control.db', 'dist/main.js'];
  const result = spawnSync('git', ['check-ignore', '--no-index', ...paths], { cwd: ROOT, encoding: 'utf8' });
  assert.equal(result.status, 0, result.stderr);
  assert.deepEqual(result.stdout.trim().split('\n').sort(), [...paths].sort());
});
