// Loads the native uWebSockets.js binary for this Node ABI, and refuses to start without it.
// Main thread. The registry build we use silently falls back to a slow pure-JS server when no binary
// matches; a payments front end must not quietly run at a fraction of its speed, so we load directly.
// Invariant: the exported module is the native addon (checked by test/http/uws.test.ts).
import { createRequire } from 'node:module';
import type * as Uws from 'uWebSockets.js';

const require = createRequire(import.meta.url);

function loadNative(): typeof Uws {
  const binary = `uWebSockets.js/binaries/uws_${process.platform}_${process.arch}_${process.versions.modules}.node`;
  try {
    return require(binary) as typeof Uws;
  } catch (error) {
    throw new Error(
      `kobo needs the native uWebSockets.js build for ${process.platform}/${process.arch} and Node ABI ` +
        `${process.versions.modules} (Node ${process.versions.node}); it could not be loaded. Use Node 20 ` +
        `(engines in package.json). Cause: ${(error as Error).message}`,
      { cause: error },
    );
  }
}

export const uws = loadNative();
export type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket, WebSocket, WebSocketBehavior } from 'uWebSockets.js';

/** True when `uws` is the compiled addon rather than a JavaScript fallback. */
export function isNativeUws(module: typeof Uws = uws): boolean {
  return Function.prototype.toString.call(module.App).includes('[native code]');
}
