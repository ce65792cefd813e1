// The wasm size budget (scripts/wasm-budget.mjs, a gate of `npm test`):
// today's builds pass it; a planted 3 % growth of the quickstart's wasm
// fails it, raw and gzip (random bytes do not compress); 1 % of its gzip
// size passes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { gzipSync } from 'node:zlib';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../..');
const SCRIPT = join(ROOT, 'scripts/wasm-budget.mjs');
const budgets = JSON.parse(readFileSync(join(ROOT, 'scripts/wasm-budget.json'), 'utf8'));

const check = (args = [], env = {}) =>
  spawnSync(process.execPath, [SCRIPT, ...args], { encoding: 'utf8', env: { ...process.env, ...env } });

const dir = mkdtempSync(join(tmpdir(), 'wasm-budget-'));
const wasm = readFileSync(join(ROOT, budgets.quickstart.wasm));

/** A budget of exactly today's quickstart build (the checked-in one may be a little above it). */
function exactBudget() {
  const file = join(dir, 'budget.json');
  const gzip = gzipSync(wasm, { level: 9 }).length;
  writeFileSync(file, JSON.stringify({ quickstart: { wasm: budgets.quickstart.wasm, raw: wasm.length, gzip } }));
  return { file, gzip };
}

/** The quickstart's wasm grown by `bytes` random bytes (appended), in a temp file. */
function grown(bytes) {
  const file = join(dir, `grown-${bytes}.wasm`);
  writeFileSync(file, Buffer.concat([wasm, randomBytes(Math.ceil(bytes))]));
  return file;
}

test('today\'s builds are within their budgets', () => {
  const r = check();
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.equal(r.stdout.split('\n').filter((l) => l.endsWith(': ok')).length, 4, r.stdout);
});

test('a planted 3 % growth fails the budget; 1 % does not', () => {
  const { file, gzip } = exactBudget();
  const env = { WASM_BUDGET_FILE: file };
  const r = check([`quickstart=${grown(wasm.length * 0.03)}`], env);
  assert.equal(r.status, 1, r.stdout);
  assert.match(r.stdout, /quickstart raw \d+ bytes, budget \d+ \(\+3\.\d %, at most \+2 %\): OVER/);
  assert.match(r.stdout, /quickstart gzip .*: OVER/);
  // 1 % of the gzip size: under 2 % raw and gzip alike.
  const small = check([`quickstart=${grown(gzip * 0.01)}`], env);
  assert.equal(small.status, 0, small.stdout);
  // The same file against the exact budget, unchanged: ok.
  assert.equal(check([], env).status, 0);
});
