// One pass of each request sequence the benchmark will drive, against the
// built bundles under plain workerd: proves the peers serve before anyone
// measures them. Not a load generator. Usage (after build.sh):
//   node bench/peer/smoke.mjs
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const HERE = import.meta.dirname;
const WORKERD = resolve(HERE, '../../node_modules/workerd/bin/workerd');

const freePort = () => new Promise((ok) => {
  const s = net.createServer().listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => ok(port)); });
});

const [pa, pb] = [await freePort(), await freePort()];
const storage = mkdtempSync(join(tmpdir(), 'peer-do-'));
const workerd = spawn(WORKERD, ['serve', join(HERE, 'workerd.capnp'), '-d', `peer-do-storage=${storage}`,
  '-s', `stateless=127.0.0.1:${pa}`, '-s', `session=127.0.0.1:${pb}`], { stdio: ['ignore', 'inherit', 'inherit'] });
const stop = () => { workerd.kill('SIGTERM'); rmSync(storage, { recursive: true, force: true }); };

// Responses come back as JSON or, from McpAgent, as an SSE stream whose one
// `data:` line is the JSON-RPC message.
async function post(url, headers, body) {
  const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, body: JSON.stringify(body) });
  const text = await r.text();
  const data = r.headers.get('content-type')?.includes('text/event-stream') ? text.split('\n').find((l) => l.startsWith('data: '))?.slice(6) : text;
  return { status: r.status, headers: r.headers, json: data ? JSON.parse(data) : undefined };
}
let passed = 0;
function expect(cond, what, got) {
  if (!cond) throw new Error(`${what}: got ${JSON.stringify(got)}`);
  console.log(`ok  ${what}`);
  passed++;
}

const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } };
const modern = (name, id, extra = {}) => post(`http://127.0.0.1:${pa}/mcp`,
  { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': name },
  { jsonrpc: '2.0', id, method: 'tools/call', params: { name, ...extra, _meta: META } });

try {
  for (let i = 0; ; i++) { // until workerd has compiled the bundles and listens
    try { await fetch(`http://127.0.0.1:${pa}/`); await fetch(`http://127.0.0.1:${pb}/`); break; } catch (e) {
      if (i > 100) throw e;
      await new Promise((ok) => setTimeout(ok, 100));
    }
  }

  // A: 2026-07-28 echo, then the two-request confirm round trip.
  let r = await modern('echo', 1, { arguments: { text: 'hi' } });
  expect(r.json?.result?.content?.[0]?.text === 'hi' && r.json.result.resultType === 'complete', 'stateless echo', r.json);
  r = await modern('confirm', 1, { arguments: {} });
  const { requestState, inputRequests } = r.json?.result ?? {};
  expect(r.json?.result?.resultType === 'input_required' && requestState && inputRequests?.confirm, 'stateless confirm asks', r.json);
  r = await modern('confirm', 2, { arguments: {}, inputResponses: { confirm: { action: 'accept', content: { ok: true } } }, requestState });
  expect(r.json?.result?.resultType === 'complete' && r.json.result.content[0].text === 'confirmed', 'stateless confirm completes', r.json);

  // B: 2025-11-25 session: initialize, initialized, echo in the session.
  const url = `http://127.0.0.1:${pb}/mcp`;
  r = await post(url, {}, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'smoke', version: '0' } } });
  const sid = r.headers.get('mcp-session-id');
  expect(sid && r.json?.result?.protocolVersion === '2025-11-25', 'session initialize', r.json);
  const inSession = { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' };
  r = await post(url, inSession, { jsonrpc: '2.0', method: 'notifications/initialized' });
  expect(r.status === 202, 'session initialized', r.status);
  r = await post(url, inSession, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: { text: 'hi' } } });
  expect(r.json?.result?.content?.[0]?.text === 'hi', 'session echo', r.json);
  console.log(`${passed} passed, 0 failed`);
} catch (e) {
  console.error(e.message);
  console.log(`${passed} passed, 1 failed`);
  process.exitCode = 1;
} finally {
  stop();
}
