// What this server is: its version (package.json), the Node it runs on, and the commit dist/ was built
// from (written in by scripts/build.mjs; 'unknown' when run from source or built outside a git clone).
// Any thread; constant for the life of the process.
import pkg from '../../package.json' with { type: 'json' };

/** Replaced by the commit at bundle time (esbuild `define`); undeclared when run from source. */
declare const KOBO_BUILD_COMMIT: string | undefined;

export interface BuildInfo {
  version: string;
  nodeVersion: string;
  commit: string;
}

export const BUILD_INFO: Readonly<BuildInfo> = Object.freeze({
  version: pkg.version,
  nodeVersion: process.version,
  commit: typeof KOBO_BUILD_COMMIT === 'string' && KOBO_BUILD_COMMIT !== '' ? KOBO_BUILD_COMMIT : 'unknown',
});
