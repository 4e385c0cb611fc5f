// Covers the uWebSockets.js loader: the native addon is what the server runs on, never the package's
// slow pure-JS fallback, and a real server's responses come from uWS.
// Runs under node:test: loads src/http/uws.ts in this process and starts one real server process.
// Invariant checked: isNativeUws() tells the compiled addon from a JavaScript implementation.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { createRequire } from 'node:module';
import type * as Uws from 'uWebSockets.js';
import { isNativeUws, uws } from '../../src/http/uws.ts';
import { ROOT, startServer, type TestServer } from '../helpers/server.ts';

const FALLBACK_PATH = path.join(ROOT, 'node_modules', 'uWebSockets.js', 'dist', 'index.js');
let server: TestServer;

before(async () => {
  server = await startServer({});
});

after(async () => {
  await server?.stop();
});

describe('uWebSockets.js loader', () => {
  it('isNativeUws: the module src/http/uws.ts loaded → true', () => {
    assert.equal(isNativeUws(), true);
    assert.equal(isNativeUws(uws), true);
    assert.equal(typeof uws.App, 'function');
  });

  it('isNativeUws: the package JS fallback (dist/index.js) → false', () => {
    assert.ok(fs.existsSync(FALLBACK_PATH), `${FALLBACK_PATH} missing`);
    const fallback = createRequire(import.meta.url)('uWebSockets.js/dist/index.js') as typeof Uws;
    assert.equal(typeof fallback.App, 'function');
    assert.equal(isNativeUws(fallback), false);
  });

  it('native binary for this platform and Node ABI → present in the package', () => {
    const binary = path.join(ROOT, 'node_modules', 'uWebSockets.js', 'binaries', `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`);
    assert.ok(fs.existsSync(binary), binary);
  });
});

describe('a real server', () => {
  it('response → carries the uWebSockets header (the JS fallback sends none)', async () => {
    const res = await fetch(`${server.baseUrl}/v1/countries`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('uwebsockets') ?? '', /^\d+$/);
    await res.arrayBuffer();
    assert.doesNotMatch(server.output(), /fall(ing)? ?back/i);
  });

  it('keep-alive: 50 requests on one connection → all answered on the reused socket', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      let reused = 0;
      for (let i = 0; i < 50; i += 1) {
        const status = await new Promise<number>((resolve, reject) => {
          const req = http.get({ host: '127.0.0.1', port: server.port, path: '/v1/countries/NG/context', agent }, (res) => {
            if (req.reusedSocket) reused += 1;
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          });
          req.on('error', reject);
        });
        assert.equal(status, 200);
      }
      assert.equal(reused, 49);
    } finally {
      agent.destroy();
    }
  });
});
