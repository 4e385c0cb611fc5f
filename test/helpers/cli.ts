// Runs the operator CLI (`kobo …`) as a real process against a data dir.
import { spawnSync } from 'node:child_process';
import { ROOT, entryArgs } from './build.ts';

export interface CliResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

export function kobo(dataDir: string, ...args: string[]): CliResult {
  const result = spawnSync(process.execPath, [...entryArgs('kobo'), ...args], {
    cwd: ROOT,
    env: { ...process.env, KOBO_DATA_DIR: dataDir },
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}
