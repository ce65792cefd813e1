// Runs the official conformance suite (@modelcontextprotocol/conformance)
// against this repository's client: the suite starts a mock server per
// scenario and runs target/debug/durable-mcp-conformance against it (built
// here if missing; `cargo test --workspace` has usually built it). Exits
// non-zero when a required scenario fails.
//
//   node tests/conformance/client.mjs 2026-07-28
//   node tests/conformance/client.mjs 2025-11-25
//
// Required: every scenario the revision scores, plus those in
// ALSO_REQUIRED, which the suite runs but does not score (JSON Schema
// 2020-12 preservation came after the revisions were frozen; we hold
// ourselves to it). The client-credentials extension scenarios are
// reported on their own lines and not counted; when the requirement run
// does not include them, each is run alone with `--spec-version 2026-07-28
// --force` (extension scenarios are off the spec timeline).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../..');
const revision = process.argv[2] ?? '2026-07-28';
const ALSO_REQUIRED = ['json-schema-2020-12-preservation'];
const EXTENSIONS = ['auth/client-credentials-jwt', 'auth/client-credentials-basic'];
const SUITE = join(ROOT, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
const CLIENT = join(process.env.CARGO_TARGET_DIR ?? join(ROOT, 'target'), 'debug/durable-mcp-conformance');

if (!existsSync(CLIENT)) {
  const build = spawnSync('cargo', ['build', '-p', 'durable-mcp-client', '--bins'], { cwd: ROOT, stdio: 'inherit' });
  if (build.status !== 0) {
    console.log(`conformance client ${revision}: 0 required scenarios passed, 1 failed (the client did not build)`);
    process.exit(1);
  }
}

// The suite needs Node 22 (fs.globSync); the test script puts it first on PATH.
const suite = (args, minutes) =>
  spawnSync(process.execPath, [SUITE, 'client', '--command', CLIENT, ...args], {
    cwd: ROOT, encoding: 'utf8', timeout: minutes * 60_000, maxBuffer: 64 << 20,
  });

const r = suite(['--requirements', revision], 20);
const output = (r.stdout ?? '') + (r.stderr ?? '');
process.stdout.write(output);
let status = r.status ?? 1;

// Count scored scenarios from the summary ("✓ name: …" / "✗ name: …"),
// leaving out the ones the suite lists as not scored.
const summary = output.split('=== SUITE SUMMARY ===')[1] ?? '';
const [scoredPart, notScoredPart = ''] = summary.split(/Not scored for/);
const notScored = new Set([...notScoredPart.matchAll(/[✓✗] (\S+) \(/g)].map((m) => m[1]));
const results = new Map([...scoredPart.matchAll(/^([✓✗]) (\S+): (.*)$/gm)].map((m) => [m[2], [m[1] === '✓', m[3]]]));
let passed = 0;
let failed = 0;
for (const [name, [ok]] of results) {
  if (notScored.has(name) && !ALSO_REQUIRED.includes(name)) continue;
  if (ok) passed++; else failed++;
}
for (const name of ALSO_REQUIRED) {
  if (!results.has(name)) failed++; // required but not run
}

// The extension scenarios: reported, never counted.
for (const name of EXTENSIONS) {
  let line = results.has(name) ? `${results.get(name)[0] ? '✓' : '✗'} ${results.get(name)[1]}` : null;
  if (line === null) {
    const one = suite(['--scenario', name, '--spec-version', '2026-07-28', '--force'], 5);
    const text = (one.stdout ?? '') + (one.stderr ?? '');
    const counts = text.match(/Passed: (\d+)\/(\d+), (\d+) failed, (\d+) warnings/);
    const ok = one.status === 0 && counts && counts[3] === '0' && counts[4] === '0';
    line = `${ok ? '✓' : '✗'} ${counts ? counts[0] : `no summary, exit ${one.status}`} (alone)`;
    if (!ok) process.stdout.write(text.slice(-3000));
  }
  console.log(`extension ${name} (not counted): ${line}`);
}

if (failed > 0 && status === 0) status = 1;
if (status !== 0 && failed === 0) failed = 1; // the suite failed in a way the summary does not show
console.log(`conformance client ${revision}: ${passed} required scenarios passed, ${failed} failed`);
process.exit(status);
