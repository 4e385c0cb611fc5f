// Summarises V8 .cpuprofile files (node --cpu-prof): self time per function, heaviest first.
// Run: npx tsx bench/lib/profile-summary.ts FILE.cpuprofile [--top 30] [--by function|file]. Diagnosis only.
import fs from 'node:fs';
import path from 'node:path';
import { table } from './report.ts';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export function summarise(file: string, top: number, by: 'function' | 'file'): string {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as Profile;
  const byNode = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<string, number>();
  let totalUs = 0;
  profile.samples.forEach((id, i) => {
    const node = byNode.get(id);
    const delta = profile.timeDeltas[i] ?? 0;
    if (node === undefined) return;
    const frame = node.callFrame;
    const where = frame.url === '' ? '' : ` ${path.basename(frame.url.replace(/^file:\/\//, ''))}:${frame.lineNumber + 1}`;
    const key = by === 'file' ? (frame.url === '' ? frame.functionName || '(native)' : where.trim().replace(/:\d+$/, '')) : `${frame.functionName || '(anonymous)'}${where}`;
    selfUs.set(key, (selfUs.get(key) ?? 0) + delta);
    totalUs += delta;
  });
  const rows = [...selfUs.entries()].sort((a, b) => b[1] - a[1]).slice(0, top);
  return table([
    [by, 'self ms', 'self %'],
    ...rows.map(([key, us]) => [key, (us / 1000).toFixed(0), ((100 * us) / totalUs).toFixed(1)]),
  ]);
}

const files = process.argv.slice(2).filter((a) => a.endsWith('.cpuprofile'));
const at = process.argv.indexOf('--top');
const top = at < 0 ? 30 : Number(process.argv[at + 1]);
const byAt = process.argv.indexOf('--by');
const by = byAt >= 0 && process.argv[byAt + 1] === 'file' ? 'file' : 'function';
for (const file of files) process.stdout.write(`${file}\n${summarise(file, top, by)}\n\n`);
