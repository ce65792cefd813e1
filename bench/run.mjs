// npm run bench: durable-mcp against a plain Worker on the same workerd, in
// the same run, so the ratios mean something on a noisy machine.
//
// Measured (sequential requests over one keep-alive connection each):
//   ceiling     POST to a plain Worker returning a fixed result
//   stateless   tools/call `add` (2026-07-28: validation, dispatch, JSON)
//   mrtr        a two-request MRTR round trip (input_required + sealed
//               state, then the retry that verifies it and completes)
//   durable     the same round trip on a durable tool (each request goes
//               through the call's Durable Object and its SQLite)
// Prints per-scenario median and p95 latency, throughput and the ratio of
// each median to the ceiling's.
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { freePort, freshPersistDir, startWrangler } from '../tests/e2e/wrangler.mjs';

const ROOT = resolve(import.meta.dirname, '..');
const N = Number(process.env.BENCH_N ?? 300);
const WARMUP = 30;

const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': { elicitation: {}, sampling: {} },
};
function modern(url, method, params, id) {
  const headers = {
    'content-type': 'application/json', accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2026-07-28', 'mcp-method': method,
  };
  if (params.name) headers['mcp-name'] = params.name;
  return fetch(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: META } }) })
    .then((r) => r.json());
}

async function startCeiling() {
  const port = await freePort();
  const child = spawn(process.execPath, [resolve(ROOT, 'node_modules/wrangler/bin/wrangler.js'), 'dev', '--ip', '127.0.0.1',
    '--port', String(port), '--persist-to', freshPersistDir(), '--show-interactive-dev-session=false',
    '--inspector-port', String(await freePort())], {
    cwd: resolve(import.meta.dirname, 'plain'), detached: true, stdio: 'ignore',
    env: { ...process.env, CLOUDFLARE_CF_FETCH_ENABLED: 'false', WRANGLER_SEND_METRICS: 'false' },
  });
  const url = `http://127.0.0.1:${port}/`;
  for (let i = 0; i < 480; i++) {
    try { await fetch(url, { method: 'POST', body: '{}' }); break; } catch { await new Promise((r) => setTimeout(r, 250)); }
  }
  return { url, stop: () => { try { process.kill(-child.pid, 'SIGTERM'); } catch {} } };
}

async function measure(name, once, requests = 1) {
  for (let i = 0; i < WARMUP; i++) await once(i);
  const times = [];
  const t0 = performance.now();
  for (let i = 0; i < N; i++) {
    const s = performance.now();
    await once(i);
    times.push(performance.now() - s);
  }
  const total = performance.now() - t0;
  times.sort((a, b) => a - b);
  return { name, requests, median: times[Math.floor(N / 2)], p95: times[Math.floor(N * 0.95)], perSec: (N / total) * 1000 };
}

const ceiling = await startCeiling();
const server = await startWrangler();
try {
  const results = [];
  results.push(await measure('ceiling', (i) => fetch(ceiling.url, { method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', id: i }) }).then((r) => r.json())));
  results.push(await measure('stateless', async (i) => {
    const r = await modern(server.url, 'tools/call', { name: 'add', arguments: { a: 1, b: 2 } }, i);
    if (r.result?.structuredContent?.sum !== 3) throw new Error(JSON.stringify(r));
  }));
  const roundTrip = (tool, args, key, answer) => async (i) => {
    const r1 = await modern(server.url, 'tools/call', { name: tool, arguments: args }, i);
    const state = r1.result?.requestState;
    if (!state) throw new Error(JSON.stringify(r1));
    const r2 = await modern(server.url, 'tools/call', { name: tool, arguments: args, requestState: state, inputResponses: { [key]: answer } }, i);
    if (r2.result?.resultType !== 'complete' && r2.result?.resultType !== 'input_required') throw new Error(JSON.stringify(r2));
  };
  results.push(await measure('mrtr (2 requests)', roundTrip('test_input_required_result_elicitation', {}, 'user_name', { action: 'accept', content: { name: 'A' } }), 2));
  results.push(await measure('durable (2 requests)', roundTrip('deploy', { service: 'bench' }, 'target', { action: 'accept', content: { target: 'staging' } }), 2));
  const base = results[0].median;
  console.log(`\n${N} sequential requests (or round trips) each, after ${WARMUP} warm-up; same machine, same run\n`);
  console.log('scenario                 median ms   p95 ms    per s   per request / ceiling');
  for (const r of results) {
    const ratio = r.median / r.requests / base;
    console.log(`${r.name.padEnd(24)} ${r.median.toFixed(2).padStart(9)} ${r.p95.toFixed(2).padStart(8)} ${r.perSec.toFixed(0).padStart(8)}   ${ratio.toFixed(2)}x`);
  }
} finally {
  ceiling.stop();
  await server.stop();
}
