// The 2025-11-25 session wire end to end: the `deploy` tool asks over a
// call's SSE stream, the answers come back as POSTs, and the call resumes
// by Last-Event-ID or requests/resume, across a dropped stream, a restart
// of wrangler dev, the resume policy's maxWait and the session's idle TTL.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { freshPersistDir } from './wrangler.mjs';
import { startServer, VIA } from './server.mjs';
import { objectFiles } from './workerd.mjs';
import { parseSse, SseReader, TIMEOUT } from './sse.mjs';

const SESSION = '2025-11-25';
const CAPS = { elicitation: {}, sampling: {} };
const RESUMABLE_CAPS = { ...CAPS, resumableRequests: {} };
const RESULT_TEXT = /^Deployed api to staging \(ticket CHG-[0-9A-F]{8}\)\.$/;
/** No single request may hang a test: a held-open stream that never ends is a failure. */
const REQUEST_TIMEOUT_MS = 20_000;

/** Every wrangler started here, so after() can stop leftovers. */
const running = new Set();

async function wrangler(opts = {}) {
  const s = await startServer(opts);
  running.add(s);
  return {
    ...s,
    async stop() { running.delete(s); await s.stop(); },
  };
}

after(async () => {
  for (const s of [...running]) await s.stop();
});

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function headersFor(sid) {
  const h = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  if (sid) {
    h['mcp-session-id'] = sid;
    h['mcp-protocol-version'] = SESSION;
  }
  return h;
}

/**
 * A raw POST. An SSE answer is read to its end (polling mode closes it),
 * so `events` holds every event, priming events included.
 * @returns {Promise<{status: number, contentType: string, text: string, json?: any, events?: import('./sse.mjs').SseEvent[]}>}
 */
async function post(url, sid, body) {
  const r = await fetch(url, {
    method: 'POST', headers: headersFor(sid), body: JSON.stringify(body), signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  const text = await r.text();
  const contentType = r.headers.get('content-type') ?? '';
  const out = { status: r.status, contentType, text, sessionId: r.headers.get('mcp-session-id') };
  if (contentType.startsWith('text/event-stream')) out.events = parseSse(text);
  else if (text) out.json = JSON.parse(text);
  return out;
}

/** `initialize` + `notifications/initialized`; returns the session id. */
async function initialize(url, capabilities = CAPS) {
  const r = await post(url, null, {
    jsonrpc: '2.0', id: 0, method: 'initialize',
    params: { protocolVersion: SESSION, capabilities, clientInfo: { name: 'session-e2e', version: '0.0.1' } },
  });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.result.protocolVersion, SESSION, r.text);
  assert.equal(r.json.result.serverInfo.name, 'durable-mcp', r.text);
  assert.match(r.sessionId ?? '', /^[0-9a-f]{32}$/, `Mcp-Session-Id: ${r.sessionId}`);
  const n = await post(url, r.sessionId, { jsonrpc: '2.0', method: 'notifications/initialized' });
  assert.equal(n.status, 202, n.text);
  return r.sessionId;
}

/** Opens a GET on the session (with Last-Event-ID) and returns a reader on it. */
async function openGet(url, sid, lastEventId) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), REQUEST_TIMEOUT_MS);
  const h = { accept: 'text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': SESSION };
  if (lastEventId !== undefined) h['last-event-id'] = lastEventId;
  const r = await fetch(url, { method: 'GET', headers: h, signal: controller.signal });
  assert.equal(r.status, 200, `GET Last-Event-ID ${lastEventId}: ${r.status}`);
  assert.equal(r.headers.get('content-type'), 'text/event-stream');
  const reader = new SseReader(r, controller);
  reader.done = () => clearTimeout(timer);
  return reader;
}

/** A GET with Last-Event-ID read to its end (the server closes it). */
async function get(url, sid, lastEventId) {
  const reader = await openGet(url, sid, lastEventId);
  try {
    return await reader.rest();
  } finally {
    reader.done();
  }
}

const deployCall = (id) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'deploy', arguments: { service: 'api' } } });
const targetAnswer = (id, target = 'staging') => ({ jsonrpc: '2.0', id, result: { action: 'accept', content: { target } } });
const safetyAnswer = (id, text = 'yes') => ({
  jsonrpc: '2.0', id, result: { role: 'assistant', content: { type: 'text', text }, model: 'e2e-model', stopReason: 'endTurn' },
});

/** The (id, message) pairs of the events that carry a message. */
const pairs = (events) => events.filter((e) => e.data !== '').map((e) => [e.id, e.message]);

function assertPriming(ev, id, { retry = true } = {}) {
  assert.equal(ev?.id, id, JSON.stringify(ev));
  assert.equal(ev.data, '', 'a priming event has empty data');
  if (retry) assert.equal(ev.retry, 1000, 'polling mode sends the retry hint');
  else assert.equal(ev.retry, undefined, 'no retry hint on a stream whose call is over');
}

function assertElicitation(ev, eventId, round = 1) {
  assert.equal(ev?.id, eventId, JSON.stringify(ev));
  assert.deepEqual(ev.message, {
    jsonrpc: '2.0',
    id: `c1/${round}/target`,
    method: 'elicitation/create',
    params: {
      message: 'Where should api be deployed?',
      mode: 'form',
      requestedSchema: {
        type: 'object',
        properties: { target: { type: 'string', enum: ['staging', 'production'] } },
        required: ['target'],
      },
    },
  });
}

function assertSampling(ev, eventId) {
  assert.equal(ev?.id, eventId, JSON.stringify(ev));
  assert.deepEqual(ev.message, {
    jsonrpc: '2.0',
    id: 'c1/2/safety',
    method: 'sampling/createMessage',
    params: {
      messages: [{ role: 'user', content: { type: 'text', text: 'Is it safe to deploy api to staging right now? Answer yes or no.' } }],
      maxTokens: 50,
    },
  });
}

/** The call's JSON-RPC result on its stream; returns the result text. */
function assertResult(ev, eventId, requestId) {
  assert.equal(ev?.id, eventId, JSON.stringify(ev));
  const m = ev.message;
  assert.equal(m.jsonrpc, '2.0');
  assert.equal(m.id, requestId, JSON.stringify(m));
  assert.equal(m.error, undefined, JSON.stringify(m));
  assert.equal(m.result.resultType, undefined, '2026 fields are not sent to a 2025-11-25 client');
  assert.equal(m.result.isError, undefined, JSON.stringify(m));
  assert.equal(m.result.content.length, 1, JSON.stringify(m));
  assert.equal(m.result.content[0].type, 'text');
  assert.match(m.result.content[0].text, RESULT_TEXT);
  return m.result.content[0].text;
}

function assertSseReply(r) {
  assert.equal(r.status, 200, r.text);
  assert.equal(r.contentType, 'text/event-stream', r.text);
}

function assertError(r, status, code, pattern) {
  assert.equal(r.status, status, r.text);
  assert.equal(r.json?.error?.code, code, r.text);
  assert.equal(r.json.result, undefined, r.text);
  if (pattern) assert.match(r.json.error.message, pattern, r.text);
}

/** getStatus for a resumable call. */
function getStatus(url, sid, requestId, resumeToken, id = 90) {
  return post(url, sid, { jsonrpc: '2.0', id, method: 'requests/getStatus', params: { requestId, resumeToken } });
}

function resume(url, sid, requestId, resumeToken) {
  return post(url, sid, { jsonrpc: '2.0', id: requestId, method: 'requests/resume', params: { resumeToken } });
}

/** Starts a resumable deploy call; returns its resume token (after checking the policy and the request). */
async function startResumable(url, sid, requestId, maxWait) {
  const r = await post(url, sid, deployCall(requestId));
  assertSseReply(r);
  assert.equal(r.events.length, 3, r.text);
  assertPriming(r.events[0], 'c1:0');
  const policy = r.events[1];
  assert.equal(policy.id, 'c1:1');
  assert.equal(policy.message.method, 'notifications/requests/resumePolicy', r.text);
  assert.equal(policy.message.id, undefined, 'the policy is a notification');
  assert.equal(policy.message.params.requestId, requestId);
  assert.equal(policy.message.params.maxWait, maxWait);
  assert.match(policy.message.params.resumeToken, /^[0-9a-f]{32}$/);
  assertElicitation(r.events[2], 'c1:2');
  return { token: policy.message.params.resumeToken, events: r.events };
}

/** A fetch for the SDK that records every HTTP exchange it makes. */
function recorder() {
  const wire = [];
  const recordingFetch = async (url, init = {}) => {
    const h = new Headers(init.headers);
    const r = await fetch(url, init);
    wire.push({ method: init.method ?? 'GET', lastEventId: h.get('last-event-id'), status: r.status });
    return r;
  };
  return { wire, recordingFetch };
}

describe(`the 2025-11-25 session wire (${VIA})`, () => {
  let server;
  before(async () => { server = await wrangler(); });
  after(async () => { await server?.stop(); });

  test('the v1 SDK client runs the deploy story with its own elicitation and sampling handlers', { timeout: 60_000 }, async () => {
    const { wire, recordingFetch } = recorder();
    const client = new Client({ name: 'session-e2e-v1', version: '0.0.1' }, { capabilities: { elicitation: {}, sampling: {} } });
    const errors = [];
    client.onerror = (e) => errors.push(e);
    const elicited = [];
    const sampled = [];
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      elicited.push(request.params);
      return { action: 'accept', content: { target: 'staging' } };
    });
    client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
      sampled.push(request.params);
      return { role: 'assistant', model: 'e2e-model', content: { type: 'text', text: 'yes, go ahead' }, stopReason: 'endTurn' };
    });
    const transport = new StreamableHTTPClientTransport(new URL(server.url), {
      fetch: recordingFetch,
      reconnectionOptions: { initialReconnectionDelay: 100, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1.5, maxRetries: 3 },
    });
    try {
      await client.connect(transport);
      const sid = transport.sessionId;
      assert.match(sid, /^[0-9a-f]{32}$/);
      assert.equal(transport.protocolVersion, SESSION);
      assert.equal(client.getServerVersion().name, 'durable-mcp');
      assert.deepEqual(client.getServerCapabilities().resources, { subscribe: true });

      const { tools } = await client.listTools();
      const deploy = tools.find((t) => t.name === 'deploy');
      assert.ok(deploy, `tools: ${tools.map((t) => t.name).join(', ')}`);
      assert.deepEqual(deploy.inputSchema.required, ['service']);
      assert.ok(tools.some((t) => t.name === 'add'));

      const tokens = [];
      const res = await client.callTool({ name: 'deploy', arguments: { service: 'api' } }, undefined,
        { onresumptiontoken: (t) => tokens.push(t), timeout: 30_000 });
      assert.equal(res.isError, undefined, JSON.stringify(res));
      assert.equal(res.content.length, 1);
      assert.match(res.content[0].text, /^Deployed api to staging \(ticket CHG-/);
      assert.match(res.content[0].text, RESULT_TEXT);

      assert.equal(elicited.length, 1, 'the elicitation handler ran once');
      assert.equal(elicited[0].message, 'Where should api be deployed?');
      assert.deepEqual(elicited[0].requestedSchema.properties.target.enum, ['staging', 'production']);
      assert.equal(sampled.length, 1, 'the sampling handler ran once');
      assert.equal(sampled[0].messages[0].content.text, 'Is it safe to deploy api to staging right now? Answer yes or no.');
      assert.equal(sampled[0].maxTokens, 50);

      // The POST stream closed after the elicitation request (polling), and
      // the SDK came back twice with Last-Event-ID: once for the sampling
      // request, once for the result.
      assert.deepEqual([...new Set(tokens)], ['c1:0', 'c1:1', 'c1:2', 'c1:3']);
      const resumes = wire.filter((w) => w.method === 'GET' && w.lastEventId !== null);
      assert.deepEqual(resumes.map((w) => [w.lastEventId, w.status]), [['c1:1', 200], ['c1:2', 200]]);
      // Its standalone GET (no Last-Event-ID) got 405: polling mode has no standalone stream.
      assert.deepEqual(wire.filter((w) => w.method === 'GET' && w.lastEventId === null).map((w) => w.status), [405]);
      assert.deepEqual(errors, []);

      await transport.terminateSession();
      assert.deepEqual(wire.filter((w) => w.method === 'DELETE').map((w) => w.status), [204]);
      assert.equal(transport.sessionId, undefined);
      const gone = await post(server.url, sid, { jsonrpc: '2.0', id: 1, method: 'ping' });
      assertError(gone, 404, -32001, /^Session not found/);
    } finally {
      await client.close();
    }
  });

  test('a dropped stream is resumed with Last-Event-ID and no event is lost or duplicated', { timeout: 60_000 }, async () => {
    const url = server.url;
    const sid = await initialize(url);
    const received = [];

    // The call: a priming event, then the elicitation request; the stream
    // closes after it (polling mode).
    const call = await post(url, sid, deployCall(7));
    assertSseReply(call);
    assert.equal(call.events.length, 2, call.text);
    assertPriming(call.events[0], 'c1:0');
    assertElicitation(call.events[1], 'c1:1');
    received.push(...pairs(call.events));

    const a1 = await post(url, sid, targetAnswer('c1/1/target'));
    assert.equal(a1.status, 202, a1.text);
    assert.equal(a1.text, '');

    // Back with the id of the elicitation event: the sampling request.
    const g1 = await get(url, sid, 'c1:1');
    assert.equal(g1.length, 2, JSON.stringify(g1));
    assertPriming(g1[0], 'c1:1');
    assertSampling(g1[1], 'c1:2');
    received.push(...pairs(g1));

    // Back before answering: nothing is new, so the GET is held open ...
    const held = await openGet(url, sid, 'c1:2');
    try {
      assert.equal(await held.next({ timeoutMs: 750 }), TIMEOUT, 'a held GET sends nothing until there is something');
      // ... and the answer's result is pushed to it, then it closes.
      const a2 = await post(url, sid, safetyAnswer('c1/2/safety'));
      assert.equal(a2.status, 202, a2.text);
      const pushed = await held.rest();
      assert.equal(pushed.length, 1, JSON.stringify(pushed));
      assertResult(pushed[0], 'c1:3', 7);
      received.push(...pairs(pushed));
    } finally {
      held.done();
      await held.close();
    }

    // The same thing again with the sampling event's id, now that the call is over.
    const g2 = await get(url, sid, 'c1:2');
    assert.equal(g2.length, 2, JSON.stringify(g2));
    assertPriming(g2[0], 'c1:2', { retry: false });
    assertResult(g2[1], 'c1:3', 7);
    assert.deepEqual(pairs(g2), received.slice(2));

    // Replaying from the start: exactly what arrived piecewise, in order.
    const all = await get(url, sid, 'c1:0');
    assertPriming(all[0], 'c1:0', { retry: false });
    assert.deepEqual(pairs(all), received);
    const ids = received.map(([id]) => id);
    assert.deepEqual(ids, ['c1:1', 'c1:2', 'c1:3']);
    assert.equal(new Set(ids).size, ids.length, 'no duplicate event ids');
    assert.deepEqual(received.map(([, m]) => m.method ?? m.id), ['elicitation/create', 'sampling/createMessage', 7]);

    // A late duplicate answer changes nothing.
    const dup = await post(url, sid, safetyAnswer('c1/2/safety'));
    assert.equal(dup.status, 202, dup.text);
    assert.deepEqual(pairs(await get(url, sid, 'c1:0')), received);
  });

  test('requests/getStatus and requests/resume work after a disconnect', { timeout: 60_000 }, async () => {
    const url = server.url;
    const sid = await initialize(url, RESUMABLE_CAPS);
    // The default policy: RESUME_MAX_WAIT_SECONDS unset, 300 s.
    const { token, events } = await startResumable(url, sid, 5, 300);

    // The stream is gone (closed after the elicitation); nothing confirmed yet.
    let s = await getStatus(url, sid, 5, token);
    assert.equal(s.status, 200, s.text);
    assert.deepEqual(s.json.result, {
      requestId: 5, status: 'awaiting_elicit', lastEventId: 'c1:2', deliveredEventId: 'c1:0', undeliveredMessages: 2,
    });

    // A wrong token finds nothing.
    assertError(await resume(url, sid, 5, 'f'.repeat(32)), 200, -32602, /no resumable request/);
    assertError(await getStatus(url, sid, 5, 'f'.repeat(32)), 200, -32602, /no resumable request/);
    // Nor does the right token with another request id.
    assertError(await resume(url, sid, 6, token), 200, -32602, /no resumable request/);

    // Resume with the original id: the undelivered events, policy first.
    const r1 = await resume(url, sid, 5, token);
    assertSseReply(r1);
    assertPriming(r1.events[0], 'c1:0');
    assert.deepEqual(pairs(r1.events), pairs(events));
    assert.equal(r1.events[1].message.method, 'notifications/requests/resumePolicy');

    // Answer, then confirm up to the elicitation with a GET: the sampling request.
    const a1 = await post(url, sid, targetAnswer('c1/1/target'));
    assert.equal(a1.status, 202, a1.text);
    const g1 = await get(url, sid, 'c1:2');
    assert.equal(g1.length, 2, JSON.stringify(g1));
    assertPriming(g1[0], 'c1:2');
    assertSampling(g1[1], 'c1:3');

    // Drop again: the sampling request was sent but not confirmed.
    s = await getStatus(url, sid, 5, token);
    assert.deepEqual(s.json.result, {
      requestId: 5, status: 'awaiting_sample', lastEventId: 'c1:3', deliveredEventId: 'c1:2', undeliveredMessages: 1,
    });
    const r2 = await resume(url, sid, 5, token);
    assertSseReply(r2);
    assert.equal(r2.events.length, 2, r2.text);
    assertPriming(r2.events[0], 'c1:2');
    assertSampling(r2.events[1], 'c1:3');

    const a2 = await post(url, sid, safetyAnswer('c1/2/safety'));
    assert.equal(a2.status, 202, a2.text);
    const g2 = await get(url, sid, 'c1:3');
    assert.equal(g2.length, 2, JSON.stringify(g2));
    assertPriming(g2[0], 'c1:3', { retry: false });
    const text = assertResult(g2[1], 'c1:4', 5);

    s = await getStatus(url, sid, 5, token);
    assert.equal(s.json.result.status, 'completed', s.text);
    assert.equal(s.json.result.lastEventId, 'c1:4');
    assert.equal(s.json.result.deliveredEventId, 'c1:3');
    assert.equal(s.json.result.undeliveredMessages, 1);

    // Resuming a finished call delivers its unconfirmed result once more.
    const r3 = await resume(url, sid, 5, token);
    assertSseReply(r3);
    assert.equal(r3.events.length, 2, r3.text);
    assertPriming(r3.events[0], 'c1:3', { retry: false });
    assert.equal(assertResult(r3.events[1], 'c1:4', 5), text);
  });
});

test(`a pending elicitation survives a restart of ${VIA}`, { timeout: 180_000 }, async () => {
  const P = freshPersistDir();
  const first = await wrangler({ persistTo: P });
  let sid;
  try {
    sid = await initialize(first.url);
    const call = await post(first.url, sid, deployCall(11));
    assertSseReply(call);
    assert.equal(call.events.length, 2, call.text);
    assertPriming(call.events[0], 'c1:0');
    assertElicitation(call.events[1], 'c1:1');
  } finally {
    await first.stop();
  }

  const second = await wrangler({ persistTo: P });
  try {
    assert.notEqual(second.port, first.port);
    const a1 = await post(second.url, sid, targetAnswer('c1/1/target'));
    assert.equal(a1.status, 202, a1.text);
    const g1 = await get(second.url, sid, 'c1:1');
    assert.equal(g1.length, 2, JSON.stringify(g1));
    assertPriming(g1[0], 'c1:1');
    assertSampling(g1[1], 'c1:2');
    const a2 = await post(second.url, sid, safetyAnswer('c1/2/safety'));
    assert.equal(a2.status, 202, a2.text);
    const g2 = await get(second.url, sid, 'c1:2');
    assert.equal(g2.length, 2, JSON.stringify(g2));
    assertResult(g2[1], 'c1:3', 11);
    // The whole stream, the part logged before the restart included.
    const all = await get(second.url, sid, 'c1:0');
    assert.deepEqual(pairs(all).map(([id, m]) => [id, m.method ?? m.id]),
      [['c1:1', 'elicitation/create'], ['c1:2', 'sampling/createMessage'], ['c1:3', 11]]);
  } finally {
    await second.stop();
  }
});

test('a request not resumed within maxWait is cancelled', { timeout: 120_000 }, async () => {
  const server = await wrangler({ vars: { RESUME_MAX_WAIT_SECONDS: '2' } });
  try {
    const url = server.url;
    const sid = await initialize(url, RESUMABLE_CAPS);
    const { token } = await startResumable(url, sid, 21, 2);
    let s = await getStatus(url, sid, 21, token);
    assert.equal(s.json?.result?.status, 'awaiting_elicit', s.text);

    // No contact for longer than maxWait: the session's alarm cancels the call.
    await sleep(4500);
    s = await getStatus(url, sid, 21, token);
    assert.equal(s.status, 200, s.text);
    // The cancellation itself is the call's last message (a -32800 error).
    assert.deepEqual(s.json.result, {
      requestId: 21, status: 'cancelled', lastEventId: 'c1:3', deliveredEventId: 'c1:0', undeliveredMessages: 3,
    });
    assertError(await resume(url, sid, 21, token), 200, -32602, /cancelled/);

    // A late answer does not revive it; a reader of the stream learns how it ended.
    const late = await post(url, sid, targetAnswer('c1/1/target'));
    assert.equal(late.status, 202, late.text);
    s = await getStatus(url, sid, 21, token);
    assert.equal(s.json.result.status, 'cancelled', s.text);
    const rest = await get(url, sid, 'c1:2');
    assert.equal(rest.length, 2, JSON.stringify(rest));
    assertPriming(rest[0], 'c1:2', { retry: false });
    const ended = JSON.parse(rest[1].data);
    assert.equal(rest[1].id, 'c1:3');
    assert.equal(ended.id, 21);
    assert.equal(ended.error.code, -32800, rest[1].data);

    // Only the call ended: the session goes on.
    const ping = await post(url, sid, { jsonrpc: '2.0', id: 22, method: 'ping' });
    assert.equal(ping.status, 200, ping.text);
    assert.deepEqual(ping.json, { jsonrpc: '2.0', id: 22, result: {} });
  } finally {
    await server.stop();
  }
});

/** What one object's SQLite holds of a session (null tables: absent). */
function sessionTables(DatabaseSync, file) {
  if (!existsSync(file)) return { file, gone: true, tables: [] };
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'session_%' ORDER BY name")
      .all().map((r) => r.name);
    const count = (t) => (tables.includes(t) ? db.prepare(`SELECT count(*) AS n FROM ${t}`).get().n : null);
    const meta = tables.includes('session_meta') ? db.prepare('SELECT json FROM session_meta').all().map((r) => JSON.parse(r.json)) : [];
    return { file, gone: false, tables, meta, meta_rows: count('session_meta'), events: count('session_events'), calls: count('session_calls') };
  } finally {
    db.close();
  }
}

test('an idle session is deleted after its TTL', { timeout: 120_000 }, async () => {
  // node:sqlite is built into Node 22 (no flag since 22.13; it warns that it
  // is experimental). Loaded here so the other tests do not print the warning.
  const { DatabaseSync } = await import('node:sqlite');
  const server = await wrangler({ vars: { SESSION_TTL_SECONDS: '2' } });
  try {
    const url = server.url;
    const sid = await initialize(url);
    const call = await post(url, sid, deployCall(31));
    assertSseReply(call);
    assertElicitation(call.events[1], 'c1:1');

    // The session's object holds it: meta, the logged request, the call.
    const holders = objectFiles(server.persistTo).map((f) => sessionTables(DatabaseSync, f))
      .filter((t) => t.meta?.some((m) => m.id === sid));
    assert.equal(holders.length, 1, `one object holds session ${sid}`);
    const [before] = holders;
    assert.deepEqual(before.tables, ['session_calls', 'session_events', 'session_meta']);
    assert.deepEqual([before.meta_rows, before.events, before.calls], [1, 1, 1]);

    // Idle past the TTL: the alarm deletes the session's storage.
    await sleep(4500);
    const afterTtl = sessionTables(DatabaseSync, before.file);
    assert.ok(afterTtl.gone || afterTtl.tables.length === 0, `storage after the TTL: ${JSON.stringify(afterTtl)}`);

    const r = await post(url, sid, { jsonrpc: '2.0', id: 32, method: 'ping' });
    assertError(r, 404, -32001, /^Session not found/);
    const g = await fetch(url, { headers: { accept: 'text/event-stream', 'mcp-session-id': sid, 'last-event-id': 'c1:0' } });
    assert.equal(g.status, 404, await g.text());
    // The 404s left nothing behind either.
    const afterRequests = sessionTables(DatabaseSync, before.file);
    assert.ok(afterRequests.gone || afterRequests.tables.length === 0, `storage after the 404s: ${JSON.stringify(afterRequests)}`);
  } finally {
    await server.stop();
  }
});

test('with SSE_POLLING=0 the call\'s stream stays open and carries every request and the result', { timeout: 120_000 }, async () => {
  const server = await wrangler({ vars: { SSE_POLLING: '0' } });
  const { wire, recordingFetch } = recorder();
  const client = new Client({ name: 'session-e2e-hold', version: '0.0.1' }, { capabilities: { elicitation: {}, sampling: {} } });
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { target: 'production' } }));
  client.setRequestHandler(CreateMessageRequestSchema, async () => (
    { role: 'assistant', model: 'e2e-model', content: { type: 'text', text: 'yes' }, stopReason: 'endTurn' }));
  const transport = new StreamableHTTPClientTransport(new URL(server.url), { fetch: recordingFetch });
  try {
    await client.connect(transport);
    const tokens = [];
    const res = await client.callTool({ name: 'deploy', arguments: { service: 'db' } }, undefined,
      { onresumptiontoken: (t) => tokens.push(t), timeout: 30_000 });
    assert.match(res.content[0].text, /^Deployed db to production \(ticket CHG-[0-9A-F]{8}\)\.$/);
    // One POST stream carried it all: no resume was needed.
    assert.deepEqual([...new Set(tokens)], ['c1:0', 'c1:1', 'c1:2', 'c1:3']);
    assert.deepEqual(wire.filter((w) => w.method === 'GET' && w.lastEventId !== null), []);
    await transport.terminateSession();
  } finally {
    await client.close().catch(() => {});
    await server.stop();
  }
});
