// A CPU profile of one benchmark scenario: serves one bundled worker from
// bench/.out (run `npm run bench` once, or BENCH_ONLY=… to bundle) in plain
// `workerd serve` with the inspector on, drives it with autocannon, records
// a V8 CPU profile over the DevTools protocol meanwhile, and prints the
// functions with the most self time (wasm functions by their Rust names).
//
//   node bench/profile.mjs quickstart add            # stateless tools/call
//   node bench/profile.mjs ceiling rpc-full|rpc-mcp|rpc|do|do-alarm|do-shard|do-shard-state   (rpc: a minimal request)
//   PROFILE_SECONDS=8 node bench/profile.mjs fixtures mrtr   # MRTR round trip
//   node bench/profile.mjs fixtures mrtr-1|mrtr-2            # MRTR round 1 / round 2 alone
//   node bench/profile.mjs fixtures durable                  # durable round trip
//   node bench/profile.mjs fixtures session                  # a 2025-11-25 session call
//   node bench/profile.mjs floor add|mrtr|mrtr-1|mrtr-2      # the JS floor (bench/floor), the same bytes
//                                        (its fixed state PROFILE_STATE_LENGTH characters long, 610 by default)
//   node bench/profile.mjs fixtures first                    # the first request of a fresh isolate
//
// Release builds strip the wasm name section: bundle with
// CARGO_PROFILE_RELEASE_STRIP=false to see Rust function names.
//
// Writes bench/.out/<worker>-<scenario>.cpuprofile (open it in Chrome
// DevTools' Performance panel for the whole picture). Needs Node 22
// (global WebSocket): `source scripts/lib.sh && with_node22 node …`.
//
// PROFILE_CPU=1 runs without the inspector (whose sampling slows the
// isolate) and prints instead the CPU time workerd spent per request (user +
// system, from /proc/<pid>/stat): on a noisy 2-core box a steadier measure
// of a change than rps, since it does not depend on what else ran.
import { spawn } from 'node:child_process';
import net from 'node:net';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import autocannon from 'autocannon';
import { freePort } from '../tests/e2e/wrangler.mjs';

const ROOT = resolve(import.meta.dirname, '..');
const OUT = join(ROOT, 'bench/.out');
const WORKERD = join(ROOT, 'node_modules/workerd/bin/workerd');
const [worker = 'quickstart', scenario = 'add'] = process.argv.slice(2);
const SECONDS = Number(process.env.PROFILE_SECONDS ?? 6);
// PROFILE_RATE: a fixed offered rate instead of saturation; as in
// bench/run.mjs, the requests' own latencies (see its `run`).
const RATE = process.env.PROFILE_RATE ? { overallRate: Number(process.env.PROFILE_RATE), ignoreCoordinatedOmission: true } : {};
// Durable Object storage: on disk, as the benchmark keeps it; PROFILE_TMPFS=1
// puts it on tmpfs (/dev/shm), where the DO lanes wait on no disk I/O and the
// profile shows the CPU each side spends (fine for one short scenario; a
// whole benchmark run's objects exhaust it).
const STORAGE = process.env.PROFILE_TMPFS ? '/dev/shm/durable-mcp-profile-storage' : join(OUT, 'profile-storage');
const KEY = 'bench:bench-key-0123456789abcdef0123456789abcdef';
const MODERN = '2026-07-28';
const META = { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': { elicitation: {}, sampling: {} } };

// PROFILE_BEARER: sent as `Authorization: Bearer …` on every scenario's request.
const BEARER = process.env.PROFILE_BEARER ? { authorization: `Bearer ${process.env.PROFILE_BEARER}` } : {};
const call = (name, args, extra = {}) => ({
  method: 'POST', path: '/mcp',
  headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream',
    'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': name, ...BEARER },
  body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args, _meta: META, ...extra } }),
});
/** A two-request round trip: the second carries the state the first answered. */
const roundTrip = (name, args, answers) => [
  { ...call(name, args), onResponse: (status, body, ctx) => { try { ctx.state = JSON.parse(body).result?.requestState; } catch { ctx.state = null; } } },
  { ...call(name, args), setupRequest: (req, ctx) => ({ ...req, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call',
    params: { name, arguments: args, _meta: META, requestState: ctx.state, inputResponses: answers } }) }) },
];
/** A 2025-11-25 session opened once; every request is a call in it. */
async function sessionCall(base) {
  const h = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  const r = await fetch(`${base}/mcp`, { method: 'POST', headers: h, body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } }) });
  await r.text();
  const sh = { ...h, 'mcp-session-id': r.headers.get('mcp-session-id'), 'mcp-protocol-version': '2025-11-25' };
  await (await fetch(`${base}/mcp`, { method: 'POST', headers: sh, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })).text();
  return { method: 'POST', path: '/mcp', headers: sh,
    body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'add', arguments: { a: 1, b: 2 } } }) };
}
/** MRTR's second round alone: one real first round, then its retry again and again. */
async function mrtrRetry(base) {
  const [first, second] = SCENARIOS.mrtr;
  const reply = await (await fetch(`${base}${first.path}`, { method: 'POST', headers: first.headers, body: first.body })).text();
  const ctx = {};
  first.onResponse(200, reply, ctx);
  if (!ctx.state) throw new Error(`the first round answered no requestState: ${reply}`);
  const { setupRequest, ...retry } = second;
  return setupRequest(retry, ctx);
}
function ceilingRoundTrip(prefix) {
  const answers = { target: { action: 'accept', content: { target: 'staging' } } };
  const state = `v1.${'A'.repeat(1040)}.${'B'.repeat(43)}`;
  return [
    { ...call('deploy', { service: 'bench' }), setupRequest: (r, ctx) => { ctx.n = `${Math.random()}`; return { ...r, path: `${prefix}${ctx.n}` }; } },
    { ...call('deploy', { service: 'bench' }, { requestState: state, inputResponses: answers }),
      setupRequest: (r, ctx) => ({ ...r, path: `${prefix}${ctx.n}` }) },
  ];
}
/** The durable round trip: `deploy`, its form answered (the signed-state floor is driven alike). */
const durableTrip = () => roundTrip('deploy', { service: 'bench' }, { target: { action: 'accept', content: { target: 'staging' } } });
const SCENARIOS = {
  add: [call('add', { a: 1, b: 2 })],
  rpc: [{ method: 'POST', path: '/rpc', headers: { 'content-type': 'application/json' }, body: '{"jsonrpc":"2.0","id":1,"method":"tools/call"}' }],
  // The ceiling sent the very request a stateless call gets (as the bench does).
  'rpc-full': [{ ...call('add', { a: 1, b: 2 }), path: '/rpc' }],
  'rpc-mcp': [{ ...call('add', { a: 1, b: 2 }), path: '/rpc-mcp' }],
  'mrtr-1': [call('test_input_required_result_elicitation', {})],
  mrtr: roundTrip('test_input_required_result_elicitation', {}, { user_name: { action: 'accept', content: { name: 'bench' } } }),
  durable: durableTrip(),
  // The ceiling's Durable Object round trip: a fresh object, then the same
  // one again, sent requests the size of a durable round trip's (the bench
  // sends a real one's bytes; the ceiling only stores them).
  do: ceilingRoundTrip('/do/'),
  // The same, arming the cleanup alarm on the first request (the floor).
  'do-alarm': ceilingRoundTrip('/do-alarm/'),
  'do-shard': ceilingRoundTrip('/do-shard/'),
  // The sharded DO with a signed state, driven as `durable` is.
  'do-shard-state': durableTrip().map((r) => ({ ...r, path: '/do-shard-state' })),
};

/** The JS floor's routes for the scenarios it stands in for (bench/floor). */
const FLOOR_PATHS = { add: '/call', mrtr: '/mrtr', 'mrtr-1': '/mrtr', 'mrtr-2': '/mrtr' };

async function main() {
  // The JS floor is served as it is; everything else from its bundle.
  const dir = worker === 'floor' ? join(ROOT, 'bench/floor') : join(OUT, worker);
  const files = readdirSync(dir).filter((f) => /\.(m?js|wasm)$/.test(f) && !f.endsWith('.map'));
  const main = files.find((f) => f === 'shim.js' || f === 'index.js' || f === 'worker.js') ?? files.find((f) => f.endsWith('.js'));
  const mods = [main, ...files.filter((f) => f !== main)].map((f) =>
    `(name = ${JSON.stringify(f)}, ${f.endsWith('.wasm') ? 'wasm' : 'esModule'} = embed ${JSON.stringify(relative(OUT, join(dir, f)))})`);
  const [binding, cls] = worker === 'ceiling' ? ['CEILING', 'Ceiling'] : ['MCP_OBJECTS', 'McpObject'];
  const objects = worker === 'floor' ? '' : `(name = ${JSON.stringify(binding)}, durableObjectNamespace = ${JSON.stringify(cls)})`;
  // PROFILE_VARS: more vars, as JSON (`{"API_TOKENS": …, "LIMITS": …}`).
  const extraVars = Object.entries(JSON.parse(process.env.PROFILE_VARS ?? '{}'))
    .map(([k, v]) => `, (name = ${JSON.stringify(k)}, text = ${JSON.stringify(typeof v === 'string' ? v : JSON.stringify(v))})`).join('');
  const port = await freePort();
  const inspector = await freePort();
  const config = `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [(name = "w", worker = .w), (name = "disk", disk = (path = ${JSON.stringify(STORAGE)}, writable = true))],
  sockets = [(name = "w", address = "127.0.0.1:${port}", http = (), service = "w")],
);
const w :Workerd.Worker = (
  modules = [${mods.join(', ')}],
  compatibilityDate = "2026-04-20",
  bindings = [(name = "STATE_KEYS", text = ${JSON.stringify(KEY)}), (name = "STATE_LENGTH", text = "${process.env.PROFILE_STATE_LENGTH ?? 610}")${extraVars}${objects ? `, ${objects}` : ''}],
  durableObjectNamespaces = [${objects ? `(className = ${JSON.stringify(cls)}, uniqueKey = "p-${cls}", enableSql = true)` : ''}],
  durableObjectStorage = ${objects ? '(localDisk = "disk")' : '(none = void)'},
);
`;
  // A fresh storage directory per run: every durable scenario leaves an
  // object (a SQLite file) per iteration behind, and a directory grown
  // across runs slows each later one.
  rmSync(STORAGE, { recursive: true, force: true });
  mkdirSync(STORAGE, { recursive: true });
  const file = join(OUT, 'profile.capnp');
  writeFileSync(file, config);
  const cpuOnly = Boolean(process.env.PROFILE_CPU);
  const inspectorArgs = cpuOnly ? [] : [`--inspector-addr=127.0.0.1:${inspector}`];
  const child = spawn(WORKERD, ['serve', file, '--experimental', ...inspectorArgs],
    { cwd: OUT, stdio: ['ignore', 'inherit', 'inherit'], detached: true });
  const exited = new Promise((ok) => child.once('exit', ok));
  // The storage goes once workerd has exited: until then it may still be
  // writing an object's files, and removing the directory races it.
  const stop = async () => {
    try { process.kill(-child.pid, 'SIGTERM'); } catch { /* gone */ }
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
    rmSync(STORAGE, { recursive: true, force: true, maxRetries: 5 });
  };
  try {
    const url = `http://127.0.0.1:${port}`;
    // `first` profiles the isolate's first request: nothing may reach the
    // worker before it, so workerd is only connected to until it listens.
    for (let i = 0; ; i++) {
      try { await (scenario === 'first' ? connects(port) : fetch(url, { method: 'POST', body: '{}' })); break; } catch {
        if (i > 200) throw new Error('workerd did not start');
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    if (worker === 'floor') for (const k of Object.keys(FLOOR_PATHS)) SCENARIOS[k] = SCENARIOS[k]?.map((r) => ({ ...r, path: FLOOR_PATHS[k] }));
    if (scenario === 'session') SCENARIOS.session = [await sessionCall(url)];
    if (scenario === 'mrtr-2') SCENARIOS['mrtr-2'] = [await mrtrRetry(url)];
    if (cpuOnly) return await cpuPerRequest(url, child.pid);
    const targets = await (await fetch(`http://127.0.0.1:${inspector}/json/list`)).json();
    const ws = new WebSocket(targets[0].webSocketDebuggerUrl);
    await new Promise((ok, fail) => { ws.onopen = ok; ws.onerror = fail; });
    let id = 0;
    const pending = new Map();
    ws.onmessage = (m) => { const msg = JSON.parse(m.data); pending.get(msg.id)?.(msg); pending.delete(msg.id); };
    const send = (method, params = {}) => new Promise((ok) => { id += 1; pending.set(id, ok); ws.send(JSON.stringify({ id, method, params })); });
    await send('Profiler.enable');
    await send('Profiler.setSamplingInterval', { interval: scenario === 'first' ? 20 : 100 });
    if (scenario === 'first') return await firstRequest(url, send, ws, join(dir, main));
    // Warm up, then profile under load.
    await autocannon({ url, connections: 8, duration: 2, requests: SCENARIOS[scenario] });
    await send('Profiler.start');
    const load = await autocannon({ url, connections: 16, duration: SECONDS, requests: SCENARIOS[scenario], ...RATE });
    const { result } = await send('Profiler.stop');
    ws.close();
    const out = join(OUT, `${worker}-${scenario}.cpuprofile`);
    writeFileSync(out, JSON.stringify(result.profile));
    report(result.profile, load, join(dir, main));
    console.log(`\nprofile: ${relative(ROOT, out)}`);
  } finally {
    await stop();
  }
}

/** Resolves once a TCP connection to `port` opens (and closes it). */
function connects(port) {
  return new Promise((ok, fail) => {
    const socket = net.connect(port, '127.0.0.1', () => { socket.destroy(); ok(); });
    socket.on('error', fail);
  });
}

/**
 * `first`: the profile of the isolate's first request (a stateless `add`),
 * which builds the server and its registry before serving it: self time,
 * and time including callees, of the functions that took the most.
 */
async function firstRequest(url, send, ws, shim) {
  const req = call('add', { a: 1, b: 2 });
  await send('Profiler.start');
  const t0 = performance.now();
  const r = await fetch(`${url}/mcp`, { method: 'POST', headers: req.headers, body: req.body });
  await r.text();
  const wall = performance.now() - t0;
  const second = performance.now();
  await (await fetch(`${url}/mcp`, { method: 'POST', headers: req.headers, body: req.body })).text();
  const again = performance.now() - second;
  const { result } = await send('Profiler.stop');
  ws.close();
  const out = join(OUT, `${worker}-first.cpuprofile`);
  writeFileSync(out, JSON.stringify(result.profile));
  console.log(`first request ${r.status} in ${wall.toFixed(1)} ms (a second one: ${again.toFixed(1)} ms), under the profiler`);
  report(result.profile, { requests: { average: 0 }, latency: {}, errors: 0, timeouts: 0 }, shim, { inclusive: true });
  console.log(`\nprofile: ${relative(ROOT, out)}`);
}

/** workerd's CPU time so far (user + system), in microseconds. */
function cpuMicros(pid) {
  // Fields after the command name's closing parenthesis; utime and stime are
  // the 14th and 15th fields of the whole line, in clock ticks (100 Hz).
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

/** PROFILE_CPU: warm up, then CPU microseconds per request under load. */
async function cpuPerRequest(url, pid) {
  await autocannon({ url, connections: 8, duration: 2, requests: SCENARIOS[scenario] });
  const before = cpuMicros(pid);
  const load = await autocannon({ url, connections: 16, duration: SECONDS, requests: SCENARIOS[scenario], ...RATE });
  const spent = cpuMicros(pid) - before;
  const rss = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  const failed = load.errors + load.timeouts + (load.non2xx ?? 0);
  console.log(`${worker} ${scenario}: ${(spent / load.requests.total).toFixed(0)} µs CPU per request, ` +
    `${load.requests.average.toFixed(0)} rps (p50 ${load.latency.p50} ms, p90 ${load.latency.p90} ms, ` +
    `p99 ${load.latency.p99} ms, max ${load.latency.max} ms), workerd RSS ${(rss / 1024).toFixed(0)} MiB after` +
    `${failed ? `; ${failed} FAILED requests` : ''}`);
}

/**
 * The wasm-bindgen import an anonymous shim function is: the shim defines
 * them as `__wbg_name: __name(function(…) {…}, "__wbg_name")`.
 */
function shimName(lines, f) {
  const line = lines[f.lineNumber] ?? '';
  const before = line.slice(0, f.columnNumber);
  const m = [...before.matchAll(/(__wbg_[A-Za-z0-9_]+|__wbindgen_[A-Za-z0-9_]+)\s*:/g)].at(-1);
  return m ? m[1].replace(/_[0-9a-f]{16}$/, '') : `(anonymous)@${f.lineNumber + 1}:${f.columnNumber}`;
}

/** Where a frame's time goes: the worker's wasm, its JS glue, other JS, or the runtime's. */
function place(f, file) {
  if (f.functionName === '(garbage collector)') return 'garbage collection';
  if (f.functionName === '(program)') return 'runtime, unattributed ((program): native work on the JS thread)';
  if (f.url.startsWith('wasm://') || /\.wasm$/.test(file)) return 'wasm';
  if (file === 'shim.js' || file === 'inner.js') return 'JS glue (the bundle\'s shim.js)';
  if (file) return `JS (${file})`;
  return 'runtime built-ins (no source: Response, JSON, Headers, …)';
}

/**
 * Self time per function, and per place (wasm, glue, runtime) of the busy
 * samples; with `inclusive`, also time including callees (each sample
 * counted once per function on its stack).
 */
function report(profile, load, shim, { inclusive = false } = {}) {
  const lines = readFileSync(shim, 'utf8').split('\n');
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const counts = new Map();
  for (const s of profile.samples) counts.set(s, (counts.get(s) ?? 0) + 1);
  const total = profile.samples.length;
  const keyOf = (f) => {
    const file = f.url ? f.url.split('/').pop() : '';
    const name = f.functionName || (file === 'shim.js' ? shimName(lines, f) : '(anonymous)');
    return [`${name} ${file ? `[${file}]` : ''}`, file];
  };
  const self = new Map();
  const places = new Map();
  const incl = new Map();
  let busy = 0;
  for (const [nodeId, c] of counts) {
    const f = byId.get(nodeId).callFrame;
    const [key, file] = keyOf(f);
    self.set(key, (self.get(key) ?? 0) + c);
    if (f.functionName === '(idle)') continue;
    busy += c;
    const where = place(f, file);
    places.set(where, (places.get(where) ?? 0) + c);
    if (inclusive) {
      const seen = new Set();
      for (let id = nodeId; id !== undefined; id = parent.get(id)) {
        const [k] = keyOf(byId.get(id).callFrame);
        if (!seen.has(k)) { seen.add(k); incl.set(k, (incl.get(k) ?? 0) + c); }
      }
    }
  }
  const failed = load.errors + load.timeouts + (load.non2xx ?? 0);
  const ms = (c) => ((c * (profile.endTime - profile.startTime)) / total / 1000).toFixed(1);
  console.log(`${load.requests.average.toFixed(0)} rps under the profiler (p50 ${load.latency.p50} ms, p99 ${load.latency.p99} ms, max ${load.latency.max} ms); ${total} samples${failed ? `; ${failed} FAILED requests` : ''}`);
  const idle = [...self].filter(([k]) => /\(idle\)|\(program\)|\(garbage collector\)/.test(k));
  for (const [k, c] of idle) console.log(`  ${(100 * c / total).toFixed(1)}% ${k}`);
  console.log(`where the busy samples went (${busy} of ${total}, ${ms(busy)} ms):`);
  for (const [k, c] of [...places].sort((a, b) => b[1] - a[1])) console.log(`  ${(100 * c / busy).toFixed(1).padStart(5)}%  ${k}`);
  console.log('top self time:');
  for (const [k, c] of [...self].filter(([k]) => !/\(idle\)|\(program\)/.test(k)).sort((a, b) => b[1] - a[1]).slice(0, 40)) {
    console.log(`  ${(100 * c / total).toFixed(1).padStart(5)}%  ${inclusive ? `${ms(c).padStart(6)} ms  ` : ''}${k}`);
  }
  if (inclusive) {
    console.log('top time including callees:');
    for (const [k, c] of [...incl].sort((a, b) => b[1] - a[1]).slice(0, 40)) {
      console.log(`  ${(100 * c / busy).toFixed(1).padStart(5)}%  ${ms(c).padStart(6)} ms  ${k}`);
    }
  }
}

await main();
