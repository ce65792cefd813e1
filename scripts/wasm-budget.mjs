// The wasm size budget `npm test` keeps: each budgeted worker's wasm (as
// `bash scripts/build.sh` makes it: worker-build --release with wasm-opt)
// may not exceed its budget in scripts/wasm-budget.json by more than
// TOLERANCE, raw or gzip. Raising a budget is a one-line change there,
// with its reason in docs/PERFORMANCE.md ("The wasm size budget").
//
//   node scripts/wasm-budget.mjs                      check every budgeted worker
//   node scripts/wasm-budget.mjs quickstart=path.wasm check another file as the quickstart
//   WASM_BUDGET_FILE=budget.json node scripts/wasm-budget.mjs   against other budgets (a test's)
//
// Prints a line per worker; exits 1 when one is over its budget (or its
// wasm is missing).
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';

const ROOT = resolve(import.meta.dirname, '..');
const TOLERANCE = 0.02;

const budgetFile = process.env.WASM_BUDGET_FILE ?? join(ROOT, 'scripts/wasm-budget.json');
const budgets = JSON.parse(readFileSync(budgetFile, 'utf8'));
const given = Object.fromEntries(process.argv.slice(2).map((a) => a.split('=')));
let over = 0;
for (const [name, budget] of Object.entries(budgets)) {
  const file = given[name] ? resolve(given[name]) : join(ROOT, budget.wasm);
  if (!existsSync(file)) {
    console.log(`wasm budget: ${name}: no wasm at ${file} (build it: bash scripts/build.sh)`);
    over++;
    continue;
  }
  const bytes = readFileSync(file);
  const sizes = { raw: bytes.length, gzip: gzipSync(bytes, { level: 9 }).length };
  for (const kind of ['raw', 'gzip']) {
    const limit = Math.floor(budget[kind] * (1 + TOLERANCE));
    const pct = (((sizes[kind] - budget[kind]) / budget[kind]) * 100).toFixed(1);
    const ok = sizes[kind] <= limit;
    if (!ok) over++;
    console.log(`wasm budget: ${name} ${kind} ${sizes[kind]} bytes, budget ${budget[kind]} (${pct.startsWith('-') ? '' : '+'}${pct} %, at most +${TOLERANCE * 100} %): ${ok ? 'ok' : 'OVER'}`);
  }
}
if (over) {
  console.log('wasm budget: over. Take the growth back, or raise the budget in scripts/wasm-budget.json with its reason in docs/PERFORMANCE.md.');
  process.exit(1);
}
