// Runs the official conformance suite (@modelcontextprotocol/conformance)
// against a wrangler dev it starts with the fixtures on, and exits with the
// suite's exit code: any failing scored scenario fails `npm test`.
//
//   node tests/conformance/run.mjs 2026-07-28
//   node tests/conformance/run.mjs 2025-11-25
//
// An expected-failures file beside this script (expected-failures-<rev>.yml),
// when present, is passed to the suite; it lists what is known not to pass yet.
//
// Scenarios the suite runs but does not score count too when they are named
// in ALSO_REQUIRED: we hold ourselves to them (2025-11-25's session lifecycle
// and SSE polling). For 2026-07-28 every scenario the run lists counts,
// scored or not (the tasks extension, custom headers); and each `tasks-*`
// and `sep-2640-*` (skills) scenario is run once more on its own with
// `--spec-version 2026-07-28 --force` (extension scenarios are off the spec
// timeline, so the suite skips them there unless forced).
//
// A scenario run alone passes only with every check run: none failed, none
// a warning, and none SKIPPED (read from its checks.json). The suite skips
// every check of a server that declares nothing, so a skipped check would
// otherwise pass unnoticed. SUITE_SKIPS names the checks the suite itself
// always skips, with why.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startWrangler } from '../e2e/wrangler.mjs';

const ROOT = resolve(import.meta.dirname, '../..');
const revision = process.argv[2] ?? '2026-07-28';
const ALSO_REQUIRED = {
  '2025-11-25': ['server-session-lifecycle', 'server-sse-polling', 'json-schema-2020-12'],
  '2026-07-28': ['json-schema-2020-12', 'http-header-validation', 'http-custom-header-server-validation'],
}[revision] ?? [];
const ALL_REQUIRED = revision === '2026-07-28';
const TASK_SCENARIOS = revision === '2026-07-28' ? [
  'tasks-lifecycle', 'tasks-capability-negotiation', 'tasks-wire-fields', 'tasks-request-state-removal',
  'tasks-mrtr-input', 'tasks-request-headers', 'tasks-dispatch-and-envelope', 'tasks-status-notifications',
  'tasks-required-task-error', 'tasks-mrtr-composition',
  'sep-2640-skills-enumeration', 'sep-2640-skills-manifest', 'sep-2640-skills-directory',
] : [];
const SUITE_SKIPS = {
  // The suite's harness for it is not written yet (it says so, as the
  // check's errorMessage): it reports one SKIPPED check and nothing else.
  'tasks-status-notifications': ['tasks-status-notifications'],
};
const SUITE = join(ROOT, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');

/**
 * The ids of the checks a scenario run alone skipped (beyond SUITE_SKIPS),
 * read from the checks.json it wrote under `out`. No checks.json, or one
 * with no checks at all, counts as a skip: nothing was checked.
 */
function skippedChecks(out, scenario) {
  const runs = readdirSync(out).filter((d) => existsSync(join(out, d, 'checks.json')));
  if (runs.length !== 1) return [`(${runs.length} checks.json files)`];
  const checks = JSON.parse(readFileSync(join(out, runs[0], 'checks.json'), 'utf8'));
  if (!Array.isArray(checks) || checks.length === 0) return ['(no checks)'];
  const allowed = SUITE_SKIPS[scenario] ?? [];
  return checks.filter((c) => c.status === 'SKIPPED' && !allowed.includes(c.id)).map((c) => c.id);
}
const server = await startWrangler();
// dns-rebinding-protection needs a localhost URL.
const url = server.url.replace('127.0.0.1', 'localhost');
const args = [SUITE, 'server', '--url', url, '--requirements', revision];
const baseline = join(import.meta.dirname, `expected-failures-${revision}.yml`);
if (existsSync(baseline)) args.push('--expected-failures', baseline);
let status = 1;
let output = '';
const single = [];
try {
  // The suite needs Node 22 (fs.globSync); the test script puts it first on PATH.
  const r = spawnSync(process.execPath, args, { encoding: 'utf8', timeout: 20 * 60_000, maxBuffer: 64 << 20 });
  output = (r.stdout ?? '') + (r.stderr ?? '');
  process.stdout.write(output);
  status = r.status ?? 1;
  for (const scenario of TASK_SCENARIOS) {
    const out = mkdtempSync(join(tmpdir(), `conformance-${scenario}-`));
    const one = spawnSync(process.execPath, [SUITE, 'server', '--url', url, '--scenario', scenario,
      '--spec-version', revision, '--force', '--output-dir', out],
    { encoding: 'utf8', timeout: 5 * 60_000, maxBuffer: 64 << 20 });
    const text = (one.stdout ?? '') + (one.stderr ?? '');
    const line = text.match(/Passed: (\d+)\/(\d+), (\d+) failed, (\d+) warnings/);
    const skipped = skippedChecks(out, scenario);
    const ok = one.status === 0 && line && line[3] === '0' && line[4] === '0' && skipped.length === 0;
    const why = skipped.length ? `, ${skipped.length} skipped: ${skipped.join(', ')}` : '';
    console.log(`${ok ? '✓' : '✗'} ${scenario} (alone): ${line ? line[0] : `no summary, exit ${one.status}`}${why}`);
    if (!ok) process.stdout.write(text.slice(-3000));
    single.push([scenario, ok]);
    rmSync(out, { recursive: true, force: true });
  }
} finally {
  await server.stop();
}
// Count scored scenarios from the summary ("✓ name: …" / "✗ name: …"),
// leaving out the ones the suite lists as not scored.
const summary = output.split('=== SUMMARY ===')[1] ?? '';
const [scoredPart, notScoredPart = ''] = summary.split(/Not scored for/);
const notScored = new Set([...notScoredPart.matchAll(/[✓✗] (\S+) \(/g)].map((m) => m[1]));
let passed = 0;
let failed = 0;
const seen = new Set();
for (const m of scoredPart.matchAll(/^([✓✗]) (\S+): /gm)) {
  if (notScored.has(m[2]) && !ALSO_REQUIRED.includes(m[2]) && !ALL_REQUIRED) continue;
  seen.add(m[2]);
  if (m[1] === '✓') passed++; else failed++;
}
for (const name of ALSO_REQUIRED) {
  if (!seen.has(name)) failed++; // required but not run
}
for (const [, ok] of single) {
  if (ok) passed++; else failed++;
}
if (failed > 0 && status === 0) status = 1;
if (status !== 0 && failed === 0) failed = 1; // the suite failed in a way the summary does not show
console.log(`conformance ${revision}: ${passed} required scenarios passed, ${failed} failed (exit ${status})`);
process.exit(status);
