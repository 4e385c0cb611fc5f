// `npm run bench`: the micro, memory, HTTP and webhook benches in sequence, each in its own process (memory needs
// node --expose-gc). Stops at the first failure with its exit code. Results land in bench/.out/*.json.
// Run: npx tsx bench/run-all.ts [--only micro,memory,http,webhooks]
import { spawn } from 'node:child_process';
import path from 'node:path';
import { BENCH_DIR, ROOT } from './lib/report.ts';

interface Step {
  name: string;
  nodeArgs: string[];
  file: string;
}

const STEPS: Step[] = [
  { name: 'micro', nodeArgs: [], file: 'micro.bench.ts' },
  { name: 'memory', nodeArgs: ['--expose-gc'], file: 'memory.bench.ts' },
  { name: 'http', nodeArgs: [], file: 'http.bench.ts' },
  { name: 'webhooks', nodeArgs: [], file: 'webhooks.bench.ts' },
];

function only(): Set<string> {
  const at = process.argv.indexOf('--only');
  return new Set(at < 0 ? STEPS.map((s) => s.name) : (process.argv[at + 1] ?? '').split(','));
}

async function runStep(step: Step): Promise<number> {
  const args = [...step.nodeArgs, '--import', 'tsx', path.join(BENCH_DIR, step.file)];
  const shown = [...step.nodeArgs, '--import', 'tsx', `bench/${step.file}`].join(' ');
  process.stdout.write(`\n=== ${step.name}: node ${shown}\n\n`);
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio: 'inherit' });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => resolve(code ?? (signal === null ? 1 : 128)));
  });
}

const selected = only();
for (const step of STEPS) {
  if (!selected.has(step.name)) continue;
  const code = await runStep(step);
  if (code !== 0) {
    process.stderr.write(`bench ${step.name} failed with exit code ${code}\n`);
    process.exit(code);
  }
}
process.stdout.write('\nall benches done; results in bench/.out/\n');
