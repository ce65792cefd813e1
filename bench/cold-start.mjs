// Cold starts: the time from a fresh isolate — a `workerd serve` started on
// one bundle — to its first answered request, repeated (BENCH_COLD_STARTS,
// 10) and interleaved across the workers, plus each bundle's size.
//
// Each start spawns workerd on one worker, then sends the worker's first
// request every millisecond until one is answered (a refused connection is
// retried): "until listening" is when the answered attempt was sent, "first
// request" how long it took, "second" a warm request after it for scale.
// Which part of our start-up costs what comes from three more workers
// built from the fixtures worker's own wasm, each one step more (see
// `steps`): a plain JS worker that only imports the module (workerd
// compiles it), one that also instantiates it (with stub imports), and
// the real bundle (its JS glue and `__wbindgen_start`, then, still before
// it listens, the server and its registry built and a rehearsal request
// served to compile the serve path: `host/rehearse.rs`; on the first
// request, the call served).
// (Stub imports: functions that throw, and the runtime's `JSTag` for the
// exception tag wasm-bindgen imports.)
// `node bench/profile.mjs fixtures first` profiles that first request.
// What V8 compiled before the first answer comes from one more start of
// each wasm worker under V8's `--trace-wasm-compilation-times` (a line per
// function compiled; V8 compiles a wasm function when it is first called):
// the functions and their bytes, before listening and for the first
// request. Unlike the times, it does not move with the box's load: the same
// build compiles the same functions.
import { spawn, spawnSync } from 'node:child_process';
import http from 'node:http';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { freePort } from '../tests/e2e/wrangler.mjs';
import { OUT, WORKERD, bundleFiles, capnpConfig } from './workerd.mjs';
import { modernReq } from './requests.mjs';

const STARTS = Number(process.env.BENCH_COLD_STARTS ?? 10);
const DIR = join(OUT, 'cold');

const call = (name, args, path = '/mcp') => ({ ...modernReq(name, args), path });
const initialize = { method: 'POST', path: '/mcp', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
  body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } }) };
const anything = { method: 'GET', path: '/', headers: {}, body: '' };

/** Each subject's first request, by worker name. */
const FIRST = {
  floor: call('add', { a: 1, b: 2 }, '/call'),
  ceiling: call('add', { a: 1, b: 2 }, '/rpc-mcp'),
  fixtures: call('add', { a: 1, b: 2 }),
  quickstart: call('add', { a: 1, b: 2 }),
  minimal: call('add', { a: 1, b: 2 }),
  'peer-stateless': call('echo', { text: 'hi' }),
  'peer-session': initialize,
};

/**
 * The steps of our start-up as workers of their own, over the fixtures
 * worker's wasm: `compiled` imports it (workerd compiles a wasm module when
 * it loads the worker), `instantiated` also instantiates it at load with
 * every import a stub (no glue, no `__wbindgen_start`).
 */
function steps(fixtures) {
  const wasm = bundleFiles(fixtures.out).find((f) => f.endsWith('.wasm'));
  const make = (name, body) => {
    const out = join(DIR, name);
    mkdirSync(out, { recursive: true });
    writeFileSync(join(out, 'index.js'), `import wasm from './${wasm}';\n${body}\n`
      + 'export default { fetch() { return new Response(String(typeof ready)); } };\n');
    writeFileSync(join(out, wasm), readFileSync(join(fixtures.out, wasm)));
    return { name, out, classes: {}, vars: {} };
  };
  return [
    make('step-compiled', 'const ready = wasm;'),
    make('step-instantiated', `const imports = {};
for (const { module, name, kind } of WebAssembly.Module.imports(wasm)) {
  (imports[module] ??= {})[name] = kind === 'tag' ? WebAssembly.JSTag : () => { throw new Error('stub'); };
}
const ready = new WebAssembly.Instance(wasm, imports);`),
  ];
}

/** One HTTP request, no keep-alive; rejects on a refused connection. */
function once(port, req) {
  return new Promise((resolve, reject) => {
    const r = http.request({ host: '127.0.0.1', port, path: req.path, method: req.method, agent: false,
      headers: { ...req.headers, 'content-length': Buffer.byteLength(req.body) } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    r.on('error', reject);
    r.end(req.body);
  });
}

/** V8's compile trace: a line per wasm function compiled (see the top). */
const TRACE = ['--trace-wasm-compilation-times'];
// `stdbuf` makes workerd's stdout line-buffered, so each line arrives as it
// is printed and falls on the right side of the first request.
const STDBUF = spawnSync('stdbuf', ['--version']).status === 0;

/** The functions a compile trace names and their bytes (Liftoff: first calls). */
function compiledIn(text) {
  let functions = 0;
  let bytes = 0;
  for (const m of text.matchAll(/using Liftoff, took \d+ μs and \d+ bytes; bodysize (\d+)/g)) {
    functions += 1;
    bytes += Number(m[1]);
  }
  return { functions, bytes };
}

/**
 * One cold start of `w`: ms until listening, the first request, a second.
 * With `trace`, under V8's compile trace instead, whose overhead makes the
 * times meaningless: what was compiled until listening and for the first
 * request.
 */
async function start(w, trace = false) {
  const port = await freePort();
  const disk = join(DIR, `${w.name}-disk`);
  rmSync(disk, { recursive: true, force: true });
  mkdirSync(disk, { recursive: true });
  const file = join(DIR, `${w.name}.capnp`);
  writeFileSync(file, capnpConfig([w], { [w.name]: port }, disk, DIR, trace ? TRACE : []));
  const req = FIRST[w.name] ?? (w.extra ? FIRST.minimal : anything);
  const t0 = performance.now();
  const [cmd, args] = trace ? ['stdbuf', ['-oL', WORKERD]] : [WORKERD, []];
  const child = spawn(cmd, [...args, 'serve', file, '--experimental'],
    { cwd: DIR, stdio: ['ignore', trace ? 'pipe' : 'ignore', 'inherit'], detached: true });
  let out = '';
  child.stdout?.on('data', (d) => { out += d; });
  const exited = new Promise((ok) => child.once('exit', ok));
  try {
    for (;;) {
      const sent = performance.now();
      const before = out.length;
      try {
        const status = await once(port, req);
        const answered = performance.now();
        if (status >= 400) throw new Error(`${w.name} answered its first request ${status}`);
        if (trace) {
          // The first request's lines are printed before its answer; let them arrive.
          await new Promise((r) => setTimeout(r, 50));
          return { listening: compiledIn(out.slice(0, before)), first: compiledIn(out.slice(before)) };
        }
        const again = performance.now();
        await once(port, req);
        return { listening: sent - t0, first: answered - sent, total: answered - t0, second: performance.now() - again };
      } catch (e) {
        if (e.code !== 'ECONNREFUSED') throw e;
        if (child.exitCode !== null || performance.now() - t0 > 30_000) throw new Error(`workerd did not serve ${w.name}`);
        await new Promise((r) => setTimeout(r, 1));
      }
    }
  } finally {
    try { process.kill(-child.pid, 'SIGTERM'); } catch { /* gone */ }
    await exited;
    rmSync(disk, { recursive: true, force: true });
  }
}

/** Bytes of a worker's modules (its JS and wasm), raw and gzipped. */
function size(w) {
  let raw = 0;
  let gzip = 0;
  for (const f of bundleFiles(w.out)) {
    const bytes = readFileSync(join(w.out, f));
    raw += bytes.length;
    gzip += gzipSync(bytes, { level: 9 }).length;
  }
  return { raw, gzip };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ms = (x) => x.toFixed(0);

/**
 * Cold starts of `workers` (served as the throughput pass serves them) and
 * of our start-up's steps; prints a table and returns the rows.
 */
export async function coldStarts(workers) {
  rmSync(DIR, { recursive: true, force: true });
  mkdirSync(DIR, { recursive: true });
  const fixtures = workers.find((w) => w.name === 'fixtures');
  // BENCH_EXTRA_BUNDLE's bundles (the build before) start beside the rest,
  // sent the stateless call every durable-mcp worker has.
  const subjects = [...workers.filter((w) => FIRST[w.name] || w.extra), ...(fixtures ? steps(fixtures) : [])];
  const runs = new Map(subjects.map((w) => [w.name, []]));
  for (let i = 0; i < STARTS; i++) {
    // Interleaved, each round in another order: whatever the box does
    // meanwhile lands on every subject alike.
    const order = subjects.map((w, k) => subjects[(k + i) % subjects.length]);
    for (const w of order) runs.get(w.name).push(await start(w));
  }
  // One start each under the compile trace: the workers with wasm (not
  // the steps, which serve nothing of it).
  const traces = new Map();
  if (STDBUF) {
    for (const w of subjects.filter((x) => !x.name.startsWith('step-') && bundleFiles(x.out).some((f) => f.endsWith('.wasm')))) {
      traces.set(w.name, await start(w, true));
    }
  }
  const rows = subjects.map((w) => {
    const rs = runs.get(w.name);
    const totals = rs.map((r) => r.total);
    return { name: w.name, starts: rs.length, listening: median(rs.map((r) => r.listening)), first: median(rs.map((r) => r.first)),
      total: median(totals), min: Math.min(...totals), max: Math.max(...totals), second: median(rs.map((r) => r.second)), ...size(w),
      compiled: traces.get(w.name) };
  });
  console.log(`\ncold starts: a fresh workerd serve per start, ${STARTS} starts each, interleaved, medians (ms)\n`);
  console.log('| worker | until listening | first request | total (min–max) | a second request | bundle raw | gzip |\n|---|---|---|---|---|---|---|');
  for (const r of rows) {
    console.log(`| ${r.name} | ${ms(r.listening)} | ${ms(r.first)} | ${ms(r.total)} (${ms(r.min)}–${ms(r.max)}) | ${r.second.toFixed(1)} | `
      + `${(r.raw / 1024).toFixed(0)} KiB | ${(r.gzip / 1024).toFixed(0)} KiB |`);
  }
  const traced = rows.filter((r) => r.compiled);
  if (traced.length) {
    console.log('\nwasm V8 compiled before the first answer (one start each under --trace-wasm-compilation-times; functions, KB of their bodies):\n');
    console.log('| worker | until listening | for the first request | in all |\n|---|---|---|---|');
    const kb = (c) => `${c.functions}, ${(c.bytes / 1024).toFixed(0)} KB`;
    for (const r of traced) {
      const { listening: l, first: f } = r.compiled;
      console.log(`| ${r.name} | ${kb(l)} | ${kb(f)} | ${kb({ functions: l.functions + f.functions, bytes: l.bytes + f.bytes })} |`);
    }
  } else {
    console.log('\n(no compile trace: `stdbuf` is not installed)');
  }
  const get = (n) => rows.find((r) => r.name === n);
  const [floor, compiled, instantiated, ours] = ['floor', 'step-compiled', 'step-instantiated', 'fixtures'].map(get);
  if (floor && compiled && instantiated && ours) {
    console.log('\nour start-up, step by step (medians, the fixtures worker\'s wasm; each step\'s difference from the one before):');
    console.log(`  workerd and a plain JS worker, until listening:  ${ms(floor.listening)} ms`);
    console.log(`  + compiling the wasm (until listening):          ${ms(compiled.listening - floor.listening)} ms`);
    console.log(`  + instantiating it (until listening):            ${ms(instantiated.listening - compiled.listening)} ms`);
    console.log(`  + the JS glue, __wbindgen_start, the server built and its rehearsal (listening): ${ms(ours.listening - instantiated.listening)} ms`);
    console.log(`  + the first request (the call served): ${ms(ours.first)} ms, against ${ms(floor.first)} ms for the JS floor's`);
  }
  return rows;
}
