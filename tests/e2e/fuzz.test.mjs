// A seeded mutation fuzz of requests against wrangler dev: valid requests of
// every wire, mutated (bytes flipped, cut short, fields retyped, headers
// dropped or changed, HTTP methods swapped, deep nesting), sent with a few
// at a time. Every one must get an answer below 500 within its timeout.
// Bounded by count and time; FUZZ_SEED and FUZZ_COUNT change the run.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startWrangler } from './wrangler.mjs';
import { prng } from './prng.mjs';

const SEED = Number(process.env.FUZZ_SEED ?? 20261122);
const COUNT = Number(process.env.FUZZ_COUNT ?? 3000);
const BUDGET_MS = 90_000;
const CONCURRENCY = 6;
const MODERN = '2026-07-28';
const META = {
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientCapabilities': { elicitation: {}, sampling: {}, roots: {} },
};

let server;
before(async () => { server = await startWrangler(); });
after(async () => { await server?.stop(); });

function modern(method, params) {
  const headers = {
    'content-type': 'application/json', accept: 'application/json, text/event-stream',
    'mcp-protocol-version': MODERN, 'mcp-method': method,
  };
  if (params.name) headers['mcp-name'] = params.name;
  if (params.uri) headers['mcp-name'] = params.uri;
  return { method: 'POST', headers, body: { jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: META } } };
}

/** Valid requests of every wire (no listen streams: they stay open by design). */
function corpus() {
  const plain = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  return [
    modern('tools/list', {}),
    modern('tools/call', { name: 'add', arguments: { a: 1, b: 2 } }),
    modern('tools/call', { name: 'deploy', arguments: { service: 'api' } }),
    modern('tools/call', { name: 'test_elicitation', arguments: { message: 'hi' } }),
    modern('tools/call', { name: 'deploy', arguments: { service: 'api' }, requestState: 'v1.eyJ4IjoxfQ.AAAA',
      inputResponses: { target: { action: 'accept', content: { target: 'staging' } } } }),
    modern('resources/read', { uri: 'test://static-text' }),
    modern('prompts/get', { name: 'test_prompt_with_arguments', arguments: { arg1: 'a', arg2: 'b' } }),
    modern('completion/complete', { ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' }, argument: { name: 'arg1', value: 'a' } }),
    modern('server/discover', {}),
    { method: 'POST', headers: plain, body: { jsonrpc: '2.0', id: 2, method: 'tools/callSaga', params: { name: 'deploy', arguments: { service: 'api' } } } },
    { method: 'POST', headers: plain, body: { jsonrpc: '2.0', id: 3, method: 'tools/resumeSaga', params: { sagaToken: 'v1.x.y', completedSteps: [] } } },
    { method: 'POST', headers: { ...plain, 'mcp-dependent-requests': '1' }, body: { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'test_elicitation', arguments: { message: 'x' } } } },
    { method: 'POST', headers: plain, body: { jsonrpc: '2.0', id: 5, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'f', version: '1' } } } },
    { method: 'POST', headers: { ...plain, 'mcp-session-id': '0123456789abcdef0123456789abcdef' }, body: { jsonrpc: '2.0', id: 6, method: 'ping' } },
    { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-session-id': '0123456789abcdef0123456789abcdef', 'last-event-id': 'c1:0' } },
  ];
}

const WEIRD = [null, true, 0, -1, 1e308, '', 'x'.repeat(300), [], {}, [[[]]], { a: { b: { c: {} } } }];

function mutate(req, rnd) {
  const pick = (xs) => xs[Math.floor(rnd() * xs.length)];
  const r = { method: req.method, headers: { ...req.headers }, body: req.body === undefined ? undefined : structuredClone(req.body) };
  let raw;
  switch (Math.floor(rnd() * 9)) {
    case 0: { // retype a top-level field or a param
      const target = rnd() < 0.5 || !r.body?.params ? r.body : r.body.params;
      if (target && typeof target === 'object') {
        const keys = Object.keys(target);
        if (keys.length) target[pick(keys)] = pick(WEIRD);
      }
      break;
    }
    case 1: { // drop or change a header
      const keys = Object.keys(r.headers);
      if (keys.length) {
        const k = pick(keys);
        if (rnd() < 0.5) delete r.headers[k]; else r.headers[k] = pick(['', 'x', '=?base64?!!!?=', 'application/jsonx', '1999-01-01', 'tools/call']);
      }
      break;
    }
    case 2: r.method = pick(['GET', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']); break;
    case 3: { // cut the body short
      const s = JSON.stringify(r.body ?? {});
      raw = s.slice(0, Math.floor(rnd() * s.length));
      break;
    }
    case 4: { // flip bytes
      const b = Buffer.from(JSON.stringify(r.body ?? {}));
      for (let i = 0; i < 1 + Math.floor(rnd() * 4); i++) b[Math.floor(rnd() * b.length)] = Math.floor(rnd() * 256);
      raw = b;
      break;
    }
    case 5: raw = '['.repeat(2000) + ']'.repeat(2000); break; // deep nesting
    case 6: raw = JSON.stringify([r.body, r.body]); break; // a batch
    case 7: if (r.body) r.body.params = { ...(r.body.params ?? {}), _meta: pick(WEIRD) }; break;
    default: if (r.body) r.body.id = pick([null, 1.5, {}, [], 'x', -1]);
  }
  return { ...r, raw };
}

async function fire(url, req) {
  const init = { method: req.method, headers: req.headers, signal: AbortSignal.timeout(10_000) };
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    init.body = req.raw ?? (req.body === undefined ? undefined : JSON.stringify(req.body));
  }
  const r = await fetch(url, init);
  const text = await r.text();
  return { status: r.status, text, contentType: r.headers.get('content-type') ?? '' };
}

test(`${COUNT} mutated requests (seed ${SEED}) all get an answer below 500, none hangs`, async (t) => {
  const rnd = prng(SEED);
  const base = corpus();
  const started = Date.now();
  const statuses = new Map();
  const failures = [];
  let sent = 0;
  let next = 0;
  async function worker() {
    while (next < COUNT && Date.now() - started < BUDGET_MS) {
      const i = next++;
      const req = mutate(base[i % base.length], rnd);
      try {
        const r = await fire(server.url, req);
        sent++;
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        if (r.status >= 500) failures.push(`#${i} ${req.method} → ${r.status}: ${r.text.slice(0, 200)}`);
        if (r.contentType.startsWith('application/json') && r.text) {
          const body = JSON.parse(r.text);
          if (body.error && typeof body.error.code !== 'number') failures.push(`#${i}: error without a code: ${r.text.slice(0, 200)}`);
        }
      } catch (e) {
        sent++;
        failures.push(`#${i} ${req.method}: ${e.name === 'TimeoutError' ? 'hung (no answer in 10 s)' : e.message}`);
      }
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const summary = [...statuses.entries()].sort((a, b) => a[0] - b[0]).map(([s, n]) => `${s}×${n}`).join(' ');
  t.diagnostic(`${sent} requests in ${Date.now() - started} ms: ${summary}`);
  assert.ok(sent >= Math.min(COUNT, 500), `only ${sent} requests within the time budget`);
  assert.deepEqual(failures.slice(0, 10), [], `${failures.length} failures`);
  // The server is still well after all that.
  const ok = await fire(server.url, modern('tools/call', { name: 'add', arguments: { a: 2, b: 2 } }));
  assert.equal(ok.status, 200, ok.text);
});
