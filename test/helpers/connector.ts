// Starts the reference connector (`kobo connector`) as a separate process for a test, and writes the
// KOBO_CONNECTORS_FILE that points kobo at it. Tests kill it when done.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, tempDataDir } from './server.ts';

export interface TestConnector {
  url: string;
  child: ChildProcess;
  output: () => string;
  stop: () => Promise<void>;
}

export async function startConnector(args: string[]): Promise<TestConnector> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src', 'cli', 'kobo.ts'), 'connector', '--port', '0', ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`connector did not start in 30 s:\n${output}`)), 30_000);
    child.stdout!.on('data', () => {
      const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
      if (match !== null) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`connector exited with ${code}:\n${output}`));
    });
  });
  return {
    url,
    child,
    output: () => output,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

export function connectorsFile(connectors: object[]): string {
  const file = path.join(tempDataDir('connectors'), 'connectors.json');
  fs.writeFileSync(file, JSON.stringify(connectors));
  return file;
}
