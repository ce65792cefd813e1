// A bounded soak under wrangler dev: several clients at once run the deploy
// story for a fixed time, half on the 2026-07-28 wire (durable MRTR, each
// round through the call's Durable Object) and half on 2025-11-25 sessions
// (each answer a POST, each next question read back with Last-Event-ID).
// Then every call started is accounted for: completed, with the right
// answer, and its ticket opened exactly once. SOAK_MS sets the time.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startWrangler } from './wrangler.mjs';
import { parseSse } from './sse.mjs';
import { callTool, startWebhook } from './webhook.mjs';

const SOAK_MS = Number(process.env.SOAK_MS ?? 15_000);
const CLIENTS = 6;
const MAX_CALLS = 300;

let server;
let hook;
before(async () => {
  hook = await startWebhook();
  server = await startWrangler({ vars: { TICKET_WEBHOOK: hook.url('/soak') } });
});
after(async () => {
  await server?.stop();
  await hook?.stop();
});

const TARGET = (target) => ({ action: 'accept', content: { target } });
const SAMPLE = { role: 'assistant', model: 'soak', content: { type: 'text', text: 'yes' } };

async function mrtrCall(service) {
  const args = { service };
  const r1 = await callTool(server.url, 'deploy', args, {}, { id: 1 });
  const r2 = await callTool(server.url, 'deploy', args, { requestState: r1.json.result.requestState, inputResponses: { target: TARGET('staging') } }, { id: 2 });
  const r3 = await callTool(server.url, 'deploy', args, { requestState: r2.json.result.requestState, inputResponses: { safety: SAMPLE } }, { id: 3 });
  return r3.json?.result?.content?.[0]?.text;
}

async function sessionSend(sid, { method = 'POST', body, lastEventId } = {}) {
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  if (sid) { headers['mcp-session-id'] = sid; headers['mcp-protocol-version'] = '2025-11-25'; }
  if (lastEventId) headers['last-event-id'] = lastEventId;
  const r = await fetch(server.url, { method, headers, body: body && JSON.stringify(body), signal: AbortSignal.timeout(20_000) });
  const text = await r.text();
  const events = (r.headers.get('content-type') ?? '').startsWith('text/event-stream') ? parseSse(text) : [];
  return { status: r.status, sid: r.headers.get('mcp-session-id'), json: events.length ? null : (text ? JSON.parse(text) : null), messages: events.filter((e) => e.data).map((e) => e.message) };
}

async function sessionCall(service) {
  const init = await sessionSend(null, { body: { jsonrpc: '2.0', id: 0, method: 'initialize', params: {
    protocolVersion: '2025-11-25', capabilities: { elicitation: {}, sampling: {} }, clientInfo: { name: 'soak', version: '1' } } } });
  const sid = init.sid;
  const call = await sessionSend(sid, { body: { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'deploy', arguments: { service } } } });
  const elicit = call.messages.find((m) => m.method === 'elicitation/create');
  await sessionSend(sid, { body: { jsonrpc: '2.0', id: elicit.id, result: TARGET('staging') } });
  const second = await sessionSend(sid, { method: 'GET', lastEventId: 'c1:0' });
  const sample = second.messages.find((m) => m.method === 'sampling/createMessage');
  await sessionSend(sid, { body: { jsonrpc: '2.0', id: sample.id, result: SAMPLE } });
  const log = await sessionSend(sid, { method: 'GET', lastEventId: 'c1:0' });
  const result = log.messages.filter((m) => m.id === 7);
  await sessionSend(sid, { method: 'DELETE' });
  if (result.length !== 1) throw new Error(`session ${sid}: ${result.length} results`);
  return result[0].result?.content?.[0]?.text;
}

test(`${CLIENTS} clients for ${SOAK_MS} ms on both wires: every call completes once`, async (t) => {
  const started = [];
  const outcomes = new Map();
  const errors = [];
  const t0 = Date.now();
  let n = 0;
  async function client(c) {
    while (Date.now() - t0 < SOAK_MS && n < MAX_CALLS) {
      const service = `svc${n++}`;
      const wire = c % 2 === 0 ? 'mrtr' : 'session';
      started.push(service);
      try {
        outcomes.set(service, await (wire === 'mrtr' ? mrtrCall(service) : sessionCall(service)));
      } catch (e) {
        errors.push(`${service} (${wire}): ${e.message}`);
      }
    }
  }
  await Promise.all(Array.from({ length: CLIENTS }, (_, c) => client(c)));
  t.diagnostic(`${started.length} calls in ${Date.now() - t0} ms; ${hook.count('/soak')} tickets`);
  assert.deepEqual(errors.slice(0, 5), [], `${errors.length} calls failed`);
  for (const service of started) {
    assert.match(outcomes.get(service) ?? '', new RegExp(`^Deployed ${service} to staging \\(ticket T-\\d+\\)\\.$`), service);
    const tickets = hook.hits.filter((h) => h.body?.service === service);
    assert.equal(tickets.length, 1, `${service}: one ticket`);
  }
  assert.equal(hook.count('/soak'), started.length, 'no ticket for a call that was not started');
  assert.ok(started.length >= CLIENTS, `only ${started.length} calls`);
});
