import { serve } from './workerd.mjs';
import { KEY, modernReq, client } from './requests.mjs';
import { fork, spawnSync } from 'node:child_process';
const TOKENS = { steady: 'bench-steady-token-0123456789', noisy: 'bench-noisy-token-0123456789' };
const API_TOKENS = `steady:${TOKENS.steady},noisy:${TOKENS.noisy}`;
const out = '/work/main/bench/.out/fixtures';
const classes = { MCP_OBJECTS: 'McpObject' };
const LIM = JSON.stringify({ all: { rate: '100000000/60s' }, principals: { noisy: { all: { rate: '50/1s' } } } });
const lane = (name) => ({ name, out, classes, vars: { STATE_KEYS: KEY, SERVER_NAME: 'x', API_TOKENS, LIMITS: LIM } });
const a = await serve([lane('a')], { storage: '/dev/shm/two-a', config: 'two-a.capnp' });
const b = await serve([lane('b')], { storage: '/dev/shm/two-b', config: 'two-b.capnp' });
const call = (who) => { const r = modernReq('add', { a: 1, b: 2 }); return { ...r, headers: { ...r.headers, authorization: `Bearer ${TOKENS[who]}` } }; };
const q = (xs, p) => { const s = [...xs].sort((x, y) => x - y); return s[Math.ceil(p * s.length) - 1]; };
async function paced(url, request, rate, seconds) {
  const { send } = client(64); const base = new URL(url).origin; const start = performance.now(); const n = Math.round(rate * seconds); const lat = []; const sent = [];
  for (let i = 0; i < n; i++) { const due = start + (i * 1000) / rate; const w = due - performance.now(); if (w > 1) await new Promise((r) => setTimeout(r, w)); const t0 = performance.now();
    sent.push(send(base, request).then((r) => { if (r.status === 200) lat.push(performance.now() - t0); })); }
  await Promise.all(sent); return lat;
}
function noisy(url, seconds) {
  const child = fork(new URL('./limits.mjs', import.meta.url).pathname, [], { env: { ...process.env, BENCH_LIMITS_APART: '1' } });
  spawnSync('chrt', ['-a', '-i', '-p', '0', String(child.pid)]);
  const done = new Promise((r) => child.once('message', (m) => { child.disconnect(); r(m); }));
  child.send({ url, request: call('noisy'), rate: 500, seconds }); return done;
}
const ua = `http://127.0.0.1:${a.ports.a}/mcp`, ub = `http://127.0.0.1:${b.ports.b}/mcp`;
try {
  await paced(ua, call('steady'), 100, 2);
  const res = { alone: [], otherProc: [], sameProc: [] };
  for (let r = 0; r < 3; r++) {
    res.alone.push(...await paced(ua, call('steady'), 100, 10));
    await new Promise((x) => setTimeout(x, 1100));
    const [s1] = await Promise.all([paced(ua, call('steady'), 100, 10), noisy(ub, 10)]); res.otherProc.push(...s1);
    await new Promise((x) => setTimeout(x, 1100));
    const [s2] = await Promise.all([paced(ua, call('steady'), 100, 10), noisy(ua, 10)]); res.sameProc.push(...s2);
    await new Promise((x) => setTimeout(x, 1100));
  }
  for (const [k, v] of Object.entries(res)) console.error(k, 'p50', q(v, .5).toFixed(2), 'p99', q(v, .99).toFixed(2), 'n', v.length);
} finally { a.stop(); b.stop(); }
