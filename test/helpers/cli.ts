// Runs the operator CLI (`kobo …`) as a real process against a data dir.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { ROOT } from './server.ts';

export interface CliResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

export function kobo(dataDir: string, ...args: string[]): CliResult {
  const result = spawnSync(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src', 'cli', 'kobo.ts'), ...args], {
    cwd: ROOT,
    env: { ...process.env, KOBO_DATA_DIR: dataDir },
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}
