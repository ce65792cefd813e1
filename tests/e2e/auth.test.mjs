// What a fault probe found, end to end (issue 22): a bodiless DELETE ends a
// session; API_TOKENS that are set but malformed refuse to serve (never
// open) and say why in the log; forged durable call tokens open no object;
// an answer of the right keys but the wrong types is refused with -32602 and
// the corrected answer completes the call; a retry decorated with `_meta`
// is the same answer. Runs under wrangler dev here and against plain
// workerd in auth.workerd.test.mjs.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { send, post, rawHttp } from './modern.mjs';
import { startServer, VIA } from './server.mjs';
import { objectFiles } from './workerd.mjs';

const running = new Set();
async function server(opts = {}) {
  const s = await startServer(opts);
  running.add(s);
  return s;
}
after(async () => {
  for (const s of running) await s.stop();
});

const SESSION_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

async function initialize(url) {
  const r = await post(url, SESSION_HEADERS, {
    jsonrpc: '2.0', id: 0, method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: { elicitation: {}, sampling: {} }, clientInfo: { name: 'auth-e2e', version: '1' } },
  });
  assert.equal(r.status, 200, r.text);
  const sid = r.headers.get('mcp-session-id');
  assert.ok(sid, r.text);
  return sid;
}

const ping = (url, sid) => post(url, { ...SESSION_HEADERS, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' },
  { jsonrpc: '2.0', id: 9, method: 'ping' });

describe(`a session DELETE with no body (${VIA})`, () => {
  test('curl -X DELETE (no body, no Content-Length) ends the session: 204, then 404', async () => {
    const s = await server();
    const sid = await initialize(s.url);
    const r = await rawHttp(s.url, { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' }, undefined, 'DELETE');
    assert.equal(r.status, 204, `${r.status} ${r.text}`);
    const gone = await ping(s.url, sid);
    assert.equal(gone.status, 404, gone.text);
    assert.equal(gone.json?.error?.code, -32001, gone.text);
  });

  test("fetch()'s DELETE with no body ends the session too", async () => {
    const s = await server();
    const sid = await initialize(s.url);
    const r = await fetch(s.url, { method: 'DELETE', headers: { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' } });
    assert.equal(r.status, 204, await r.text());
    assert.equal((await ping(s.url, sid)).status, 404);
  });
});

describe(`API_TOKENS that are set but malformed refuse to serve (${VIA})`, () => {
  for (const [what, value] of [['tokens without principals', 'tokA,tokB'], ['an empty token', 'alice:']]) {
    test(`${what} (${JSON.stringify(value)}): every request is 500 "misconfigured", with or without a bearer, and the log says why`, async () => {
      const s = await server({ vars: { API_TOKENS: value }, misconfigured: true });
      for (const authorization of [undefined, 'Bearer ', 'Bearer tokA', 'Bearer alice']) {
        const headers = authorization === undefined ? {} : { authorization };
        const r = await send(s.url, 'tools/call', { name: 'add', arguments: { a: 1, b: 2 } }, { id: 5, headers });
        assert.equal(r.status, 500, `${authorization}: ${r.text}`);
        assert.equal(r.json?.error?.code, -32603, r.text);
        assert.match(r.json.error.message, /misconfigured/);
        assert.equal(r.json.result, undefined);
        // The reason is the operator's to read, not the caller's.
        assert.doesNotMatch(r.text, /API_TOKENS/);
      }
      const deadline = Date.now() + 10_000;
      let log = '';
      while (Date.now() < deadline && !/API_TOKENS entry 1/.test(log)) {
        await new Promise((ok) => setTimeout(ok, 200));
        log = readFileSync(s.logPath, 'utf8');
      }
      assert.match(log, /misconfigured: API_TOKENS entry 1/);
      // (wrangler prints the vars it was given at start-up: only our lines count.)
      const ours = log.split('\n').filter((l) => l.includes('misconfigured')).join('\n');
      for (const secret of ['tokA', 'tokB']) assert.ok(!ours.includes(secret), `our log names no token: ${ours}`);
    });
  }

  test('well-formed tokens still work: the right bearer is served, an empty one is 401', async () => {
    const s = await server({ vars: { API_TOKENS: 'alice:tok-alice-0001' } });
    const ok = await send(s.url, 'tools/call', { name: 'add', arguments: { a: 1, b: 2 } }, { id: 6, headers: { authorization: 'Bearer tok-alice-0001' } });
    assert.equal(ok.status, 200, ok.text);
    const empty = await send(s.url, 'tools/call', { name: 'add', arguments: { a: 1, b: 2 } }, { id: 7, headers: { authorization: 'Bearer ' } });
    assert.equal(empty.status, 401, empty.text);
  });
});

/** A durable-call token whose MAC is made up: it names a call the server never issued. */
function forgedToken() {
  const payload = {
    kid: 'dev', method: 'tools/call', target: 'deploy', args: 'x', sub: '', iat: 0, exp: Date.now() + 3_600_000,
    sid: randomBytes(16).toString('hex'), round: 1, durable: true,
  };
  return `v1.${Buffer.from(JSON.stringify(payload)).toString('base64url')}.${randomBytes(32).toString('base64url')}`;
}

describe(`forged durable call tokens open no object (${VIA})`, () => {
  test('twenty forged call ids: each 400 -32602, and no object appears in storage; a real call does make one', async () => {
    // One object per call, so each forged id would have been an object.
    const s = await server({ vars: { CALL_SHARDS: '0' } });
    const args = { name: 'deploy', arguments: { service: 'api' } };
    const before = objectFiles(s.persistTo);
    for (let i = 0; i < 20; i++) {
      const r = await send(s.url, 'tools/call', {
        ...args, requestState: forgedToken(),
        inputResponses: { target: { action: 'accept', content: { target: 'staging' } } },
      }, { id: 100 + i });
      assert.equal(r.status, 400, r.text);
      assert.equal(r.json?.error?.code, -32602, r.text);
    }
    await new Promise((ok) => setTimeout(ok, 500));
    assert.deepEqual(objectFiles(s.persistTo), before, 'no object was opened for a forged id');
    // The count can move: a real durable call is stored in an object of its own.
    const real = await send(s.url, 'tools/call', args, { id: 200 });
    assert.equal(real.json?.result?.resultType, 'input_required', real.text);
    const waitFor = Date.now() + 5_000;
    while (objectFiles(s.persistTo).length === before.length && Date.now() < waitFor) {
      await new Promise((ok) => setTimeout(ok, 100));
    }
    assert.equal(objectFiles(s.persistTo).length, before.length + 1, 'the real call has its object');
  });
});

describe(`wrong-typed answers leave the question open (${VIA})`, () => {
  const args = { name: 'deploy', arguments: { service: 'api' } };
  const round = (url, state, answers, id) => send(url, 'tools/call', { ...args, requestState: state, inputResponses: answers }, { id });

  test('a durable call: each wrong-typed answer is -32602 naming its key, and the corrected answer completes the call', async () => {
    const s = await server();
    const first = await send(s.url, 'tools/call', args, { id: 1 });
    const s1 = first.json.result.requestState;
    for (const content of [{ target: 5 }, { target: 'mars' }]) {
      const r = await round(s.url, s1, { target: { action: 'accept', content } }, 2);
      assert.equal(r.status, 400, r.text);
      assert.equal(r.json.error.code, -32602, r.text);
      assert.match(r.json.error.message, /"target"/);
    }
    const second = await round(s.url, s1, { target: { action: 'accept', content: { target: 'staging' } } }, 3);
    assert.equal(second.json?.result?.resultType, 'input_required', second.text);
    const s2 = second.json.result.requestState;
    for (const bad of [{ role: 'assistant', content: 'yes' }, { role: 'assistant', content: null }, { role: 5, content: { type: 'text', text: 'yes' } }]) {
      const r = await round(s.url, s2, { safety: bad }, 4);
      assert.equal(r.status, 400, r.text);
      assert.equal(r.json.error.code, -32602, r.text);
      assert.match(r.json.error.message, /"safety"/);
    }
    const good = { safety: { role: 'assistant', content: { type: 'text', text: 'yes' } } };
    const done = await round(s.url, s2, good, 5);
    assert.equal(done.json?.result?.resultType, 'complete', done.text);
    assert.match(done.json.result.content[0].text, /^Deployed api to staging/);
    // The same answer again, decorated with `_meta`: the recorded reply, not "already used".
    const decorated = { safety: { ...good.safety, _meta: {} } };
    const again = await round(s.url, s2, decorated, 5);
    assert.equal(again.status, 200, again.text);
    assert.deepEqual(again.json, done.json);
  });
});
