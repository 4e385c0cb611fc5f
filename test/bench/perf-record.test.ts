// The perf report reader of bench/lib/perf-record.ts: layers and top symbols from `perf report`'s text.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { layerLine, parsePerfReport } from '../../bench/lib/perf-record.ts';

// Lines as `perf report --no-children --sort dso,sym -g none --stdio` prints them (a run of kobo under load).
const REPORT = `# To display the perf.data header info, please use --header/--header-only options.
#
# Samples: 17K of event 'cpu-clock:ppp'
# Event count (approx.): 8726861250
#
# Overhead  Shared Object           Symbol
# ........  ......................  ......
#
    14.05%  [kernel.kallsyms]       [k] _raw_spin_unlock_irqrestore
     2.36%  node                    [.] v8::internal::String::ComputeAndSetRawHash
     1.80%  node                    [.] v8::internal::Scavenger::ScavengeObject<v8::internal::FullHeapObjectSlot>
     1.70%  [JIT] tid 4490          [.] Builtins_FindOrderedHashMapEntry
     1.20%  [JIT] tid 4490          [.] JS:*send file:///work/main/dist/main.js:78871:7
     1.10%  better_sqlite3.node     [.] sqlite3BtreeIndexMoveto
     0.90%  libc.so.6               [.] malloc
     0.50%  uws_linux_x64_115.node  [.] HttpResponseWrapper::res_getRemoteAddress<0>
     0.40%  node                    [.] v8::internal::ArrayBufferSweeper::SweepingJob::SweepYoung
`;

test('perf report: each symbol counts towards its layer, and the sample count keeps its K suffix', () => {
  const summary = parsePerfReport(REPORT, 3);
  assert.equal(summary.samples, 17_000);
  const near = (actual: number, expected: number): void => assert.ok(Math.abs(actual - expected) < 1e-9, `${actual} ≠ ${expected}`);
  near(summary.layers.kernel, 0.1405);
  near(summary.layers.node, 0.0236);
  near(summary.layers.gc, 0.018 + 0.004);
  near(summary.layers.javascript, 0.017 + 0.012);
  near(summary.layers.sqlite, 0.011);
  near(summary.layers.libc, 0.009);
  near(summary.layers.uws, 0.005);
  assert.deepEqual(summary.top.map(([share, layer, symbol]) => [Math.round(share * 1e4) / 1e4, layer, symbol]), [
    [0.1405, 'kernel', '_raw_spin_unlock_irqrestore'],
    [0.0236, 'node', 'v8::internal::String::ComputeAndSetRawHash'],
    [0.018, 'gc', 'v8::internal::Scavenger::ScavengeObject<v8::internal::FullHeapObjectSlot>'],
  ]);
  assert.match(layerLine({ file: 'x', ...summary }), /^kernel 14\.1%, javascript 2\.9%, node 2\.4%, gc 2\.2%, sqlite 1\.1%, libc 0\.9%, uws 0\.5%$/);
});

test('perf report: text without sample rows gives empty layers', () => {
  const summary = parsePerfReport('# Samples: 0 of event \'cpu-clock\'\n');
  assert.equal(summary.samples, 0);
  assert.deepEqual(summary.top.map(([share, layer, symbol]) => [Math.round(share * 1e4) / 1e4, layer, symbol]), []);
  assert.equal(Object.values(summary.layers).reduce((a, b) => a + b, 0), 0);
});
