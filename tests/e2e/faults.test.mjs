// Faults under wrangler dev: duplicate answers on the session wire, a
// session used by another principal, and a crash in the middle of a side
// effect. Each case is a failure a flaky network or a hostile client causes.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { freshPersistDir, startWrangler } from './wrangler.mjs';
import { parseSse, SseReader, TIMEOUT } from './sse.mjs';
import { callTool, startWebhook } from './webhook.mjs';

const SESSION = '2025-11-25';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Everything started here, stopped in after(). */
const running = new Set();
async function track(p) {
  const s = await p;
  running.add(s);
  return s;
}
after(async () => {
  for (const s of [...running]) await s.stop();
});

/** A session-wire POST (or GET/DELETE) as `token` (none: no Authorization). */
async function send(url, { sid, token, method = 'POST', body, lastEventId, timeoutMs = 20_000 } = {}) {
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  if (sid) {
    headers['mcp-session-id'] = sid;
    headers['mcp-protocol-version'] = SESSION;
  }
  if (token) headers.authorization = `Bearer ${token}`;
  if (lastEventId) headers['last-event-id'] = lastEventId;
  const r = await fetch(url, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await r.text();
  const ct = r.headers.get('content-type') ?? '';
  const out = { status: r.status, text, sid: r.headers.get('mcp-session-id') };
  if (ct.startsWith('text/event-stream')) out.events = parseSse(text);
  else if (text) out.json = JSON.parse(text);
  return out;
}

async function initialize(url, token) {
  const r = await send(url, {
    token,
    body: { jsonrpc: '2.0', id: 0, method: 'initialize', params: {
      protocolVersion: SESSION, capabilities: { elicitation: {}, sampling: {} }, clientInfo: { name: 'faults', version: '1' } } },
  });
  assert.equal(r.status, 200, r.text);
  return r.sid;
}

const deployCall = (id) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'deploy', arguments: { service: 'api' } } });
const messages = (events) => (events ?? []).filter((e) => e.data !== '').map((e) => e.message);

describe('the 2025-11-25 session wire', () => {
  test('twenty copies of the answer that completes a round, sent at once, run it once: one webhook POST, one result', async () => {
    // The webhook holds its answer back so the round is still running when
    // the copies arrive.
    const hook = await track(startWebhook({ delayMs: 500 }));
    const server = await track(startWrangler({ vars: { TICKET_WEBHOOK: hook.url('/dup') } }));
    const sid = await initialize(server.url);
    const call = await send(server.url, { sid, body: deployCall(5) });
    const elicit = messages(call.events).find((m) => m.method === 'elicitation/create');
    assert.ok(elicit, call.text);
    const a1 = await send(server.url, { sid, body: { jsonrpc: '2.0', id: elicit.id, result: { action: 'accept', content: { target: 'staging' } } } });
    assert.equal(a1.status, 202, a1.text);
    // The next question is on the call's stream.
    const after1 = await send(server.url, { sid, method: 'GET', lastEventId: 'c1:0' });
    const sample = messages(after1.events).find((m) => m.method === 'sampling/createMessage');
    assert.ok(sample, after1.text);

    const answer = { jsonrpc: '2.0', id: sample.id, result: { role: 'assistant', model: 'e2e', content: { type: 'text', text: 'yes' } } };
    const copies = await Promise.all(Array.from({ length: 20 }, () => send(server.url, { sid, body: answer })));
    for (const c of copies) assert.equal(c.status, 202, c.text);
    // Let the one round that runs finish.
    for (let i = 0; i < 40 && hook.count('/dup') === 0; i++) await sleep(100);
    await sleep(1000);
    assert.equal(hook.count('/dup'), 1, 'one webhook POST');
    const log = await send(server.url, { sid, method: 'GET', lastEventId: 'c1:0' });
    const results = messages(log.events).filter((m) => m.id === 5 && (m.result || m.error));
    assert.equal(results.length, 1, `one result for the call: ${log.text}`);
    assert.equal(results[0].result.content[0].text, 'Deployed api to staging (ticket T-1).');
  });

  test('a session belongs to its principal: another caller cannot ping it, read it, answer it or end it', async () => {
    const server = await track(startWrangler({ vars: { API_TOKENS: 'alice:tok-alice-0001,bob:tok-bob-0002' } }));
    const alice = 'tok-alice-0001';
    const bob = 'tok-bob-0002';
    const sid = await initialize(server.url, alice);
    const call = await send(server.url, { sid, token: alice, body: deployCall(5) });
    const elicit = messages(call.events).find((m) => m.method === 'elicitation/create');
    assert.ok(elicit, call.text);
    assert.match(elicit.params.message, /Where should api be deployed/);

    const notFound = (r, what) => {
      assert.equal(r.status, 404, `${what}: ${r.text}`);
      if (r.json) assert.equal(r.json.error.code, -32001, `${what}: ${r.text}`);
    };
    notFound(await send(server.url, { sid, token: bob, body: { jsonrpc: '2.0', id: 1, method: 'ping' } }), 'ping');
    notFound(await send(server.url, { sid, token: bob, method: 'GET', lastEventId: 'c1:0' }), 'read the event log');
    notFound(await send(server.url, { sid, token: bob, body: { jsonrpc: '2.0', id: elicit.id, result: { action: 'accept', content: { target: 'production' } } } }), 'answer');
    notFound(await send(server.url, { sid, token: bob, method: 'DELETE' }), 'delete');

    // Alice's session is untouched, and her answer is the one that counts.
    const mine = await send(server.url, { sid, token: alice, body: { jsonrpc: '2.0', id: elicit.id, result: { action: 'accept', content: { target: 'staging' } } } });
    assert.equal(mine.status, 202, mine.text);
    const next = await send(server.url, { sid, token: alice, method: 'GET', lastEventId: 'c1:0' });
    const sample = messages(next.events).find((m) => m.method === 'sampling/createMessage');
    assert.ok(sample, next.text);
    assert.match(JSON.stringify(sample.params), /to staging/);
  });
});

describe('a crash in the middle of a side effect', () => {
  test('kill -9 while the ticket POST is in flight: after a restart the retry runs it again with the same Idempotency-Key, and the call completes', async () => {
    const hook = await track(startWebhook({ delayMs: 2000 }));
    const P = freshPersistDir();
    const vars = { TICKET_WEBHOOK: hook.url('/crash'), CLAIM_TIMEOUT_SECONDS: '2' };
    const first = await track(startWrangler({ persistTo: P, vars }));
    const args = { service: 'api' };
    const r1 = await callTool(first.url, 'deploy', args, {}, { id: 1 });
    const s1 = r1.json.result.requestState;
    const r2 = await callTool(first.url, 'deploy', args, { requestState: s1, inputResponses: { target: { action: 'accept', content: { target: 'staging' } } } }, { id: 2 });
    const s2 = r2.json.result.requestState;
    assert.ok(s2, r2.text);
    const safety = { safety: { role: 'assistant', model: 'e2e', content: { type: 'text', text: 'yes' } } };

    // The round claims, then POSTs the ticket; the webhook holds its answer
    // while the server is killed.
    const inFlight = callTool(first.url, 'deploy', args, { requestState: s2, inputResponses: safety }, { id: 3 }).catch((e) => e);
    for (let i = 0; i < 100 && hook.count('/crash') === 0; i++) await sleep(50);
    assert.equal(hook.count('/crash'), 1, 'the effect was in flight');
    first.kill();
    await inFlight;

    const second = await track(startWrangler({ persistTo: P, vars }));
    // Within the claim timeout the round still counts as running elsewhere.
    let r = await callTool(second.url, 'deploy', args, { requestState: s2, inputResponses: safety }, { id: 4 });
    if (r.status === 409) {
      assert.equal(r.json.error.code, -32010, r.text);
      await sleep(2500);
      r = await callTool(second.url, 'deploy', args, { requestState: s2, inputResponses: safety }, { id: 5 });
    }
    assert.equal(r.status, 200, r.text);
    assert.match(r.json.result.content[0].text, /^Deployed api to staging \(ticket T-2\)\.$/);
    // At least once, with a key: the receiver sees the same key twice.
    const keys = hook.hits.filter((h) => h.path === '/crash').map((h) => h.idempotencyKey);
    assert.equal(keys.length, 2, 'the effect ran again after the crash');
    assert.ok(keys[0], 'the effect carries an Idempotency-Key');
    assert.equal(keys[0], keys[1], 'the same Idempotency-Key both times');
  });
});

/** A plain POST for the seed wires (saga, sketch), as `token`. */
async function seed(url, body, token) {
  const headers = { 'content-type': 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  const r = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body), signal: AbortSignal.timeout(20_000) });
  const text = await r.text();
  return { status: r.status, text, json: text ? JSON.parse(text) : undefined };
}

const DEPLOY = { name: 'deploy', arguments: { service: 'api' } };
const TARGET = { action: 'accept', content: { target: 'staging' } };
const SAMPLED = { role: 'assistant', model: 'e2e', content: { type: 'text', text: 'yes' } };

/** The three stateless wires, each as: start(token) → state, then continue(state, token). */
const WIRES = {
  mrtr: {
    async start(url, token) {
      const r = await callTool(url, 'deploy', DEPLOY.arguments, {}, { headers: token ? { authorization: `Bearer ${token}` } : {} });
      return r.json.result.requestState;
    },
    async next(url, state, token) {
      return callTool(url, 'deploy', DEPLOY.arguments, { requestState: state, inputResponses: { target: TARGET } },
        { id: 2, headers: token ? { authorization: `Bearer ${token}` } : {} });
    },
  },
  saga: {
    async start(url, token) {
      const r = await seed(url, { jsonrpc: '2.0', id: 1, method: 'tools/callSaga', params: DEPLOY }, token);
      return { token: r.json.result.sagaToken, stepId: r.json.result.steps[0].stepId };
    },
    async next(url, state, token) {
      return seed(url, { jsonrpc: '2.0', id: 2, method: 'tools/resumeSaga',
        params: { sagaToken: state.token, completedSteps: [{ stepId: state.stepId, result: TARGET }] } }, token);
    },
  },
  sketch: {
    async start(url, token) {
      const r = await seed(url, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: DEPLOY, dependent_responses: {} }, token);
      return r.json.requestState;
    },
    async next(url, state, token) {
      return seed(url, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: DEPLOY, requestState: state,
        dependent_responses: { target: { result: TARGET } } }, token);
    },
  },
};

/** The round after the target answer asks for the safety verdict, on any wire. */
function asksSafety(r) {
  const j = r.json;
  return JSON.stringify(j?.result?.inputRequests ?? j?.result?.steps ?? j?.dependent_requests ?? {}).includes('Is it safe to deploy api to staging');
}

describe('paused state of every stateless wire is bound to its principal', () => {
  for (const [wire, w] of Object.entries(WIRES)) {
    test(`${wire}: another principal cannot continue a call, its owner can`, async () => {
      const server = await track(startWrangler({ vars: { API_TOKENS: 'alice:tok-alice-0001,bob:tok-bob-0002' } }));
      const state = await w.start(server.url, 'tok-alice-0001');
      const bob = await w.next(server.url, state, 'tok-bob-0002');
      assert.equal(bob.status, 400, bob.text);
      assert.equal(bob.json.error.code, -32602, bob.text);
      assert.match(bob.json.error.message, /principal/, bob.text);
      const alice = await w.next(server.url, state, 'tok-alice-0001');
      assert.equal(alice.status, 200, alice.text);
      assert.ok(asksSafety(alice), alice.text);
    });
  }
});

describe('kill -9 between rounds, on every stateless wire', () => {
  for (const [wire, w] of Object.entries(WIRES)) {
    test(`${wire}: a call paused before a crash continues on the restarted server`, async () => {
      const P = freshPersistDir();
      const first = await track(startWrangler({ persistTo: P }));
      const state = await w.start(first.url);
      first.kill();
      const second = await track(startWrangler({ persistTo: P }));
      const r = await w.next(second.url, state);
      assert.equal(r.status, 200, r.text);
      assert.ok(asksSafety(r), r.text);
    });
  }
});

/** The last round (the safety verdict, which opens the ticket) on each stateless wire. */
const LAST = {
  mrtr: {
    state: (r) => r.json.result.requestState,
    send: (url, s, answer = SAMPLED) => callTool(url, 'deploy', DEPLOY.arguments, { requestState: s, inputResponses: { safety: answer } }, { id: 3 }),
  },
  saga: {
    state: (r, first) => ({ token: r.json.result.sagaToken, done: [{ stepId: first.stepId, result: TARGET }], stepId: r.json.result.steps[0].stepId }),
    send: (url, s, answer = SAMPLED) => seed(url, { jsonrpc: '2.0', id: 3, method: 'tools/resumeSaga',
      params: { sagaToken: s.token, completedSteps: [...s.done, { stepId: s.stepId, result: answer }] } }),
  },
  sketch: {
    state: (r) => r.json.requestState,
    send: (url, s, answer = SAMPLED) => seed(url, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: DEPLOY, requestState: s,
      dependent_responses: { safety: { result: answer } } }),
  },
};
const SAMPLED_NO = { ...SAMPLED, content: { type: 'text', text: 'no' } };

describe('duplicates and lost replies on every stateless wire', () => {
  for (const [wire, w] of Object.entries(WIRES)) {
    test(`${wire}: two copies of the last round at once open one ticket; an exact retry after gets the same reply, other answers are refused`, async () => {
      const hook = await track(startWebhook({ delayMs: 400 }));
      const server = await track(startWrangler({ vars: { TICKET_WEBHOOK: hook.url(`/${wire}`) } }));
      const first = await w.start(server.url);
      const second = LAST[wire].state(await w.next(server.url, first), first);
      const copies = await Promise.all([LAST[wire].send(server.url, second), LAST[wire].send(server.url, second)]);
      const done = copies.filter((r) => r.status === 200);
      const busy = copies.filter((r) => r.status === 409);
      assert.equal(done.length + busy.length, 2, copies.map((r) => r.text).join(' | '));
      assert.ok(done.length >= 1, copies.map((r) => r.text).join(' | '));
      for (const r of done) assert.equal(r.json.result.content[0].text, 'Deployed api to staging (ticket T-1).', r.text);
      for (const r of busy) assert.equal(r.json.error.code, -32010, r.text);
      // The reply was lost: the exact retry gets it again, and nothing runs.
      const again = await LAST[wire].send(server.url, second);
      assert.equal(again.status, 200, again.text);
      assert.equal(again.json.result.content[0].text, 'Deployed api to staging (ticket T-1).');
      // Another answer to the answered round is refused.
      const other = await LAST[wire].send(server.url, second, SAMPLED_NO);
      assert.equal(other.status, 400, other.text);
      assert.equal(other.json.error.code, -32602, other.text);
      assert.match(other.json.error.message, /already used/);
      assert.equal(hook.count(`/${wire}`), 1, 'one ticket');
    });
  }
});

describe('kill -9 on the session wire', () => {
  test('during the ticket POST: after a restart and the claim timeout, the answer again runs it with the same Idempotency-Key, and the call completes once', async () => {
    const hook = await track(startWebhook({ delayMs: 2000 }));
    const P = freshPersistDir();
    const CLAIM_S = 5;
    const vars = { TICKET_WEBHOOK: hook.url('/session-crash'), CLAIM_TIMEOUT_SECONDS: String(CLAIM_S) };
    const first = await track(startWrangler({ persistTo: P, vars }));
    const sid = await initialize(first.url);
    const call = await send(first.url, { sid, body: deployCall(5) });
    const elicit = messages(call.events).find((m) => m.method === 'elicitation/create');
    await send(first.url, { sid, body: { jsonrpc: '2.0', id: elicit.id, result: TARGET } });
    const next = await send(first.url, { sid, method: 'GET', lastEventId: 'c1:0' });
    const sample = messages(next.events).find((m) => m.method === 'sampling/createMessage');
    const answer = { jsonrpc: '2.0', id: sample.id, result: SAMPLED };
    const claimedAt = Date.now();
    const inFlight = send(first.url, { sid, body: answer }).catch((e) => e);
    for (let i = 0; i < 100 && hook.count('/session-crash') === 0; i++) await sleep(50);
    assert.equal(hook.count('/session-crash'), 1, 'the effect was in flight');
    first.kill();
    await inFlight;

    const second = await track(startWrangler({ persistTo: P, vars }));
    // Within the claim timeout the round counts as running elsewhere: the
    // answer again runs nothing. (A slow restart may already be past it.)
    if (Date.now() - claimedAt < CLAIM_S * 1000 - 1000) {
      assert.equal((await send(second.url, { sid, body: answer })).status, 202);
      assert.equal(hook.count('/session-crash'), 1, 'nothing ran within the claim timeout');
    }
    await sleep(Math.max(0, claimedAt + CLAIM_S * 1000 + 500 - Date.now()));
    assert.equal((await send(second.url, { sid, body: answer })).status, 202);
    const log = await send(second.url, { sid, method: 'GET', lastEventId: 'c1:0' });
    const results = messages(log.events).filter((m) => m.id === 5 && m.result);
    assert.equal(results.length, 1, log.text);
    assert.equal(results[0].result.content[0].text, 'Deployed api to staging (ticket T-2).');
    const keys = hook.hits.filter((h) => h.path === '/session-crash').map((h) => h.idempotencyKey);
    assert.equal(keys.length, 2);
    assert.ok(keys[0]);
    assert.equal(keys[0], keys[1], 'the same Idempotency-Key both times');
  });

  test('during a held-open stream (SSE_POLLING=0): the restarted server replays the stream by Last-Event-ID and the call completes', async () => {
    const P = freshPersistDir();
    const vars = { SSE_POLLING: '0' };
    const first = await track(startWrangler({ persistTo: P, vars }));
    const sid = await initialize(first.url);
    // The call's stream stays open: read it until the question arrives.
    const controller = new AbortController();
    const r = await fetch(first.url, {
      method: 'POST', signal: controller.signal,
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': SESSION },
      body: JSON.stringify(deployCall(5)),
    });
    const reader = new SseReader(r, controller);
    let elicit;
    for (let i = 0; i < 10 && !elicit; i++) {
      const ev = await reader.next({ timeoutMs: 10_000 });
      if (ev && ev !== TIMEOUT && ev.message?.method === 'elicitation/create') elicit = ev;
    }
    assert.ok(elicit, 'the question came on the held-open stream');
    first.kill();
    controller.abort();

    const second = await track(startWrangler({ persistTo: P, vars }));
    // The stream replays from the log: the question is still there, once.
    const replayed = await readHeldOpen(second.url, sid, 'c1:0');
    assert.deepEqual(replayed.filter((m) => m.method === 'elicitation/create').map((m) => m.id), [elicit.message.id]);
    assert.equal((await send(second.url, { sid, body: { jsonrpc: '2.0', id: elicit.message.id, result: TARGET } })).status, 202);
    const answeredAfter = await readHeldOpen(second.url, sid, elicit.id);
    const sample = answeredAfter.find((m) => m.method === 'sampling/createMessage');
    assert.ok(sample, JSON.stringify(answeredAfter));
    assert.equal((await send(second.url, { sid, body: { jsonrpc: '2.0', id: sample.id, result: SAMPLED } })).status, 202);
    const done = await readHeldOpen(second.url, sid, elicit.id);
    const result = done.filter((m) => m.id === 5 && m.result);
    assert.equal(result.length, 1, JSON.stringify(done));
    assert.match(result[0].result.content[0].text, /^Deployed api to staging \(ticket CHG-[0-9A-F]{8}\)\.$/);
  });
});

/** Reads a held-open GET after `lastEventId` for a moment; returns its messages. */
async function readHeldOpen(url, sid, lastEventId) {
  const controller = new AbortController();
  const r = await fetch(url, {
    method: 'GET', signal: controller.signal,
    headers: { accept: 'text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': SESSION, 'last-event-id': lastEventId },
  });
  assert.equal(r.status, 200);
  const reader = new SseReader(r, controller);
  const out = [];
  for (;;) {
    const ev = await reader.next({ timeoutMs: 1500 });
    if (ev === TIMEOUT || ev === null) break;
    if (ev.message) out.push(ev.message);
  }
  controller.abort();
  return out;
}
