// Raw HTTP against `wrangler dev`: every bad input gets the right HTTP status
// and JSON-RPC error code, and errors echo the request id whenever the body
// named one.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { startServer, VIA } from './server.mjs';
import {
  MODERN, META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES,
  modernMeta, modernRequest, send, post, rawHttp, base64HeaderValue,
} from './modern.mjs';

/** Asserts a JSON-RPC error reply: HTTP status, error code and echoed id. */
function assertError(r, status, code, id) {
  const shown = `HTTP ${r.status} ${r.text}`;
  assert.equal(r.status, status, `status; got ${shown}`);
  assert.equal(r.headers.get('content-type')?.split(';')[0], 'application/json', `content-type; got ${shown}`);
  assert.equal(r.json?.jsonrpc, '2.0', `jsonrpc; got ${shown}`);
  assert.equal(r.json?.error?.code, code, `error code; got ${shown}`);
  assert.equal(typeof r.json.error.message, 'string');
  assert.equal(r.json.result, undefined);
  if (id !== undefined) assert.equal(r.json.id, id, `id echoed; got ${shown}`);
}

/** A valid tools/call of `add` (1 + 2). */
const ADD = { name: 'add', arguments: { a: 1, b: 2 } };

describe(`default configuration (${VIA})`, () => {
  let server;
  let url;
  before(async () => {
    server = await startServer();
    url = server.url;
  });
  after(async () => { await server?.stop(); });

  test('a well-formed request succeeds, so the failures below are caused by the one thing each changes', async () => {
    const r = await send(url, 'tools/call', ADD, { id: 'ok-1' });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.id, 'ok-1');
    assert.equal(r.json.result.resultType, 'complete');
    assert.deepEqual(r.json.result.structuredContent, { sum: 3 });
  });

  // ---- framing ----

  test('malformed JSON is 400 with a parse error (-32700) and a null id', async () => {
    const { headers } = modernRequest('tools/list');
    const r = await post(url, headers, '{"jsonrpc":"2.0","id":11,"method":');
    assertError(r, 400, -32700, null);
  });

  test('jsonrpc "1.0" is 400 with invalid request (-32600), echoing the id', async () => {
    const { headers } = modernRequest('tools/list');
    const r = await post(url, headers, JSON.stringify({ jsonrpc: '1.0', id: 12, method: 'tools/list', params: { _meta: modernMeta() } }));
    assertError(r, 400, -32600, 12);
  });

  test('a batch array is 400 with invalid request (-32600)', async () => {
    const { headers, body } = modernRequest('tools/list', {}, { id: 13 });
    const r = await post(url, headers, JSON.stringify([body]));
    assertError(r, 400, -32600, null);
  });

  test('a wrong Accept is 406 and a wrong Content-Type is 415', async () => {
    const { headers, body } = modernRequest('tools/list', {}, { id: 14 });
    const r1 = await post(url, { ...headers, accept: 'text/html' }, body);
    assert.equal(r1.status, 406, r1.text);
    const r2 = await post(url, { ...headers, 'content-type': 'text/plain' }, JSON.stringify(body));
    assert.equal(r2.status, 415, r2.text);
  });

  // ---- _meta ----

  test('missing _meta is 400 with invalid params (-32602), echoing the id', async () => {
    const r = await send(url, 'tools/list', { _meta: undefined }, { id: 21 });
    assertError(r, 400, -32602, 21);
    assert.match(r.json.error.message, /_meta/);
  });

  test('_meta without protocolVersion is 400 with invalid params (-32602)', async () => {
    const meta = { [META_CLIENT_CAPABILITIES]: {} };
    const r = await send(url, 'tools/list', { _meta: meta }, { id: 22 });
    assertError(r, 400, -32602, 22);
  });

  test('_meta without clientCapabilities is 400 with invalid params (-32602)', async () => {
    const meta = { [META_PROTOCOL_VERSION]: MODERN };
    const r = await send(url, 'tools/list', { _meta: meta }, { id: 23 });
    assertError(r, 400, -32602, 23);
  });

  // ---- mirrored headers ----

  test('a missing MCP-Protocol-Version header is 400 with header mismatch (-32020)', async () => {
    const r = await send(url, 'tools/list', {}, { id: 31, headers: { 'mcp-protocol-version': undefined } });
    assertError(r, 400, -32020, 31);
  });

  test('an MCP-Protocol-Version header that differs from _meta is 400 with header mismatch (-32020)', async () => {
    const r = await send(url, 'tools/list', {}, { id: 32, headers: { 'mcp-protocol-version': '2025-11-25' } });
    assertError(r, 400, -32020, 32);
  });

  test('an unsupported version is 400 with -32022 naming the supported and requested versions', async () => {
    const meta = { [META_PROTOCOL_VERSION]: 'v999', [META_CLIENT_CAPABILITIES]: {} };
    const r = await send(url, 'server/discover', { _meta: meta }, { id: 33, headers: { 'mcp-protocol-version': 'v999' } });
    assertError(r, 400, -32022, 33);
    assert.deepEqual(r.json.error.data, { supported: [MODERN], requested: 'v999' });
  });

  test('an Mcp-Method header that differs from the body is 400 with header mismatch (-32020)', async () => {
    const r = await send(url, 'tools/list', {}, { id: 34, headers: { 'mcp-method': 'tools/call' } });
    assertError(r, 400, -32020, 34);
  });

  test('a missing Mcp-Method header is 400 with header mismatch (-32020)', async () => {
    const r = await send(url, 'tools/list', {}, { id: 35, headers: { 'mcp-method': undefined } });
    assertError(r, 400, -32020, 35);
  });

  test('an Mcp-Name header that differs from the tool name is 400 with header mismatch (-32020)', async () => {
    const r = await send(url, 'tools/call', ADD, { id: 36, headers: { 'mcp-name': 'deploy' } });
    assertError(r, 400, -32020, 36);
  });

  test('a missing Mcp-Name header on tools/call is 400 with header mismatch (-32020)', async () => {
    const r = await send(url, 'tools/call', ADD, { id: 37, headers: { 'mcp-name': undefined } });
    assertError(r, 400, -32020, 37);
  });

  test('the =?base64?…?= form of the right tool name is accepted', async () => {
    const encoded = base64HeaderValue('add');
    assert.equal(encoded, '=?base64?YWRk?=');
    const r = await send(url, 'tools/call', ADD, { id: 38, headers: { 'mcp-name': encoded } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.id, 38);
    assert.deepEqual(r.json.result.structuredContent, { sum: 3 });
  });

  test('the =?base64?…?= form of a wrong name, or broken base64, is 400 with header mismatch (-32020)', async () => {
    const wrong = await send(url, 'tools/call', ADD, { id: 39, headers: { 'mcp-name': base64HeaderValue('deploy') } });
    assertError(wrong, 400, -32020, 39);
    const broken = await send(url, 'tools/call', ADD, { id: 40, headers: { 'mcp-name': '=?base64?!!!?=' } });
    assertError(broken, 400, -32020, 40);
  });

  // ---- methods ----

  for (const [i, method] of ['initialize', 'ping', 'logging/setLevel', 'resources/subscribe', 'resources/unsubscribe'].entries()) {
    test(`the removed method ${method} is 404 with method not found (-32601)`, async () => {
      const params = method === 'logging/setLevel' ? { level: 'info' }
        : method.startsWith('resources/') ? { uri: 'test://static-text' }
          : method === 'initialize' ? { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'e2e', version: '0' } }
            : {};
      const r = await send(url, method, params, { id: 50 + i });
      assertError(r, 404, -32601, 50 + i);
    });
  }

  test('an unknown method is 404 with method not found (-32601)', async () => {
    const r = await send(url, 'nope/never', {}, { id: 'unknown-1' });
    assertError(r, 404, -32601, 'unknown-1');
  });

  test('GET is 405 and names POST in Allow', async () => {
    const r = await post(url, { accept: 'application/json, text/event-stream' }, undefined, 'GET');
    assert.equal(r.status, 405, r.text);
    assert.equal(r.headers.get('allow'), 'POST');
  });

  test('DELETE is 405 and names POST in Allow', async () => {
    const r = await post(url, {}, undefined, 'DELETE');
    assert.equal(r.status, 405, r.text);
    assert.equal(r.headers.get('allow'), 'POST');
  });

  test('DELETE of a session that does not exist is 404 with -32001', async () => {
    const r = await post(url, { 'mcp-session-id': 'whatever' }, undefined, 'DELETE');
    assert.equal(r.status, 404, r.text);
    assert.equal(r.json?.error?.code, -32001, r.text);
  });

  test('a session GET sent with Content-Length: 0 is answered as one without it, not with a 500', async () => {
    const hdrs = { accept: 'application/json, text/event-stream', 'content-type': 'application/json' };
    const init = await post(url, hdrs, {
      jsonrpc: '2.0', id: 1, method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'e2e', version: '1' } },
    });
    const sid = init.headers.get('mcp-session-id');
    assert.ok(sid, init.text);
    // The runtime hands such a GET over with an empty body stream, which
    // the Worker once forwarded to the session's object (refused: a 500).
    const get = { accept: 'text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' };
    const plain = await rawHttp(url, get, '', 'GET');
    const zero = await rawHttp(url, { ...get, 'content-length': '0' }, '', 'GET');
    assert.notEqual(zero.status, 500, zero.text);
    assert.equal(zero.status, plain.status, zero.text);
  });

  test('PUT and PATCH with a live session id are 405 and never reach the session', async () => {
    const hdrs = { accept: 'application/json, text/event-stream', 'content-type': 'application/json' };
    const init = await post(url, hdrs, {
      jsonrpc: '2.0', id: 1, method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'e2e', version: '1' } },
    });
    const sid = init.headers.get('mcp-session-id');
    assert.ok(sid, init.text);
    for (const method of ['PUT', 'PATCH']) {
      const r = await post(url, { ...hdrs, 'mcp-session-id': sid }, { jsonrpc: '2.0', id: 2, method: 'ping' }, method);
      assert.equal(r.status, 405, `${method}: ${r.text}`);
      assert.equal(r.json?.error?.code, -32600, r.text);
    }
    // The session is untouched: a ping over POST still works.
    const ping = await post(url, { ...hdrs, 'mcp-session-id': sid }, { jsonrpc: '2.0', id: 3, method: 'ping' });
    assert.equal(ping.status, 200, ping.text);
    assert.deepEqual(ping.json.result, {});
  });

  test('a notification is 202 with an empty body', async () => {
    const { headers } = modernRequest('notifications/cancelled');
    const body = { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1, _meta: modernMeta() } };
    const r = await post(url, headers, body);
    assert.equal(r.status, 202);
    assert.equal(r.text, '');
  });

  // ---- DNS rebinding ----

  test('a foreign Origin is 403', async () => {
    const r = await send(url, 'server/discover', {}, { id: 61, headers: { origin: 'http://evil.example' } });
    assertError(r, 403, -32600);
    assert.match(r.json.error.message, /Origin/);
    // A loopback origin passes, so the 403 above is the Origin's doing.
    const ok = await send(url, 'server/discover', {}, { id: 62, headers: { origin: 'http://localhost:5173' } });
    assert.equal(ok.status, 200, ok.text);
  });

  test('a foreign Host is 403', async () => {
    // fetch (undici) does not send a caller-chosen Host, so this goes
    // through node:http. wrangler dev passes the Host header through to
    // the worker unchanged: the same request with the real Host is 200.
    const { headers, body } = modernRequest('server/discover', {}, { id: 63 });
    const bad = await rawHttp(url, { ...headers, host: 'evil.example:8787' }, body);
    assert.equal(bad.status, 403, bad.text);
    assert.equal(bad.json.error.code, -32600);
    assert.match(bad.json.error.message, /Host/);
    const good = await rawHttp(url, { ...headers, host: new URL(url).host }, body);
    assert.equal(good.status, 200, good.text);
    assert.equal(good.json.id, 63);
  });

  test("a client's internal headers never reach an object: a durable call with forged ones is still that call", async () => {
    // `deploy` runs in its call's object. Were these honoured there, the
    // hub header would make the request a broadcast (204), the session
    // header a session's request, the task header a task's.
    const forged = {
      'x-durable-mcp-hub': 'broadcast',
      'x-durable-mcp-session-id': 'victim',
      'x-durable-mcp-session-new': '1',
      'x-durable-mcp-task-id': 'victim',
      'x-durable-mcp-call-id': 'victim',
    };
    const r = await send(url, 'tools/call', { name: 'deploy', arguments: { service: 'api' } }, { id: 64, headers: forged });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.id, 64);
    assert.equal(r.json.result.resultType, 'input_required', r.text);
    assert.ok(r.json.result.inputRequests.target, r.text);
  });

  // ---- state and resources ----

  test('a tampered requestState is 400 with invalid params (-32602)', async () => {
    const args = { name: 'deploy', arguments: { service: 'api' } };
    const first = await send(url, 'tools/call', args, { id: 71 });
    assert.equal(first.status, 200, first.text);
    assert.equal(first.json.result.resultType, 'input_required');
    const state = first.json.result.requestState;
    assert.equal(typeof state, 'string');
    // Flip one character in the middle of the sealed state.
    const mid = Math.floor(state.length / 2);
    const tampered = state.slice(0, mid) + (state[mid] === 'A' ? 'B' : 'A') + state.slice(mid + 1);
    const inputResponses = { target: { action: 'accept', content: { target: 'staging' } } };
    const r = await send(url, 'tools/call', { ...args, requestState: tampered, inputResponses }, { id: 72 });
    assertError(r, 400, -32602, 72);
    // The untampered state is accepted: the next round asks the safety question.
    const real = await send(url, 'tools/call', { ...args, requestState: state, inputResponses }, { id: 73 });
    assert.equal(real.status, 200, real.text);
    assert.equal(real.json.result.inputRequests.safety.method, 'sampling/createMessage');
  });

  test('an unknown resource is an invalid-params error (-32602) carrying its uri', async () => {
    const r = await send(url, 'resources/read', { uri: 'nope://missing' }, { id: 81 });
    assertError(r, 404, -32602, 81);
    assert.deepEqual(r.json.error.data, { uri: 'nope://missing' });
  });
});

describe(`MAX_BODY_BYTES=1024 and API_TOKENS=alice:tok-alice-123 (${VIA})`, () => {
  const TOKEN = 'tok-alice-123';
  let server;
  let url;
  before(async () => {
    server = await startServer({ vars: { MAX_BODY_BYTES: '1024', API_TOKENS: `alice:${TOKEN}` } });
    url = server.url;
  });
  after(async () => { await server?.stop(); });

  test('a body over 1024 bytes is 413', async () => {
    const auth = { authorization: `Bearer ${TOKEN}` };
    const big = modernRequest('server/discover', { pad: 'x'.repeat(1100) }, { id: 91, headers: auth });
    const bigBody = JSON.stringify(big.body);
    assert.ok(bigBody.length > 1024);
    const r = await post(url, big.headers, bigBody);
    assertError(r, 413, -32600);
    // The same request under the limit goes through.
    const small = modernRequest('server/discover', { pad: 'x'.repeat(100) }, { id: 92, headers: auth });
    assert.ok(JSON.stringify(small.body).length < 1024);
    const ok = await post(url, small.headers, small.body);
    assert.equal(ok.status, 200, ok.text);
  });

  test('a body sent in chunks, with no Content-Length: served under 1024 bytes, 413 over', async () => {
    // The Worker reads a body of unknown length chunk by chunk, up to the
    // cap (a declared one it reads in one go): a path of its own.
    const auth = { authorization: `Bearer ${TOKEN}` };
    const chunked = (pad, id) => new Promise((ok, fail) => {
      const { headers, body } = modernRequest('server/discover', { pad }, { id, headers: auth });
      const text = JSON.stringify(body);
      const req = httpRequest(url, { method: 'POST', headers: { ...headers, 'transfer-encoding': 'chunked' } }, (res) => {
        let out = '';
        res.setEncoding('utf8');
        res.on('data', (c) => { out += c; });
        res.on('end', () => ok({ status: res.statusCode, headers: new Headers(res.headers), text: out, json: JSON.parse(out) }));
        res.on('error', fail);
      });
      req.on('error', fail);
      // Three writes: three chunks on the wire.
      const third = Math.ceil(text.length / 3);
      req.write(text.slice(0, third));
      req.write(text.slice(third, 2 * third));
      req.end(text.slice(2 * third));
    });
    const small = await chunked('x'.repeat(100), 97);
    assert.equal(small.status, 200, small.text);
    assert.equal(small.json.id, 97);
    assert.ok(Array.isArray(small.json.result.supportedVersions), small.text);
    const big = await chunked('x'.repeat(1100), 98);
    assertError(big, 413, -32600);
  });

  test('no Authorization header is 401 with a Bearer WWW-Authenticate challenge', async () => {
    const r = await send(url, 'server/discover', {}, { id: 93 });
    assertError(r, 401, -32600);
    const challenge = r.headers.get('www-authenticate');
    assert.ok(challenge?.startsWith('Bearer'), `WWW-Authenticate: ${challenge}`);
  });

  test('a wrong bearer token is 401', async () => {
    const r = await send(url, 'server/discover', {}, { id: 94, headers: { authorization: 'Bearer tok-mallory' } });
    assert.equal(r.status, 401, r.text);
    assert.equal(r.json.error.code, -32600);
    assert.ok(r.headers.get('www-authenticate')?.startsWith('Bearer'));
  });

  test('the right bearer token is 200 and results are cacheScope private', async () => {
    const auth = { authorization: `Bearer ${TOKEN}` };
    const r = await send(url, 'server/discover', {}, { id: 95, headers: auth });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.id, 95);
    assert.equal(r.json.result.cacheScope, 'private');
    const list = await send(url, 'tools/list', {}, { id: 96, headers: auth });
    assert.equal(list.status, 200, list.text);
    assert.equal(list.json.result.cacheScope, 'private');
  });
});
