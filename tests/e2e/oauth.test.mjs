// Sign-in end to end (issue 21): a real OpenID provider on loopback
// (oidc-provider, RFC 9068 JWT access tokens for the resource the client
// names), the official TypeScript clients' own OAuth flow (401 → metadata →
// registration → PKCE with `resource` → token), and the Worker checking the
// tokens with the provider's JWKS and WebCrypto. Paused calls outlive their
// access token: refreshed mid-pause, stepped up mid-call, refused to anyone
// else. No token is ever stored or logged.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, createPublicKey } from 'node:crypto';
import { createServer } from 'node:http';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, CreateMessageRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { UnauthorizedError as V1Unauthorized } from '@modelcontextprotocol/sdk/client/auth.js';
import { startProvider } from './oauth/provider.mjs';
import { connectWithOAuth, jwtPayload, makeAuthProvider, recorder } from './oauth/client.mjs';
import { MODERN, send } from './modern.mjs';
import { everything } from './persisted.mjs';
import { startServer, VIA } from './server.mjs';

const REDIRECT = 'http://127.0.0.1:9/callback';
const JWKS_TTL_SECONDS = 4;
const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));

let op;
let server;
/** Every access token any client was given: none may reach storage or logs. */
const issued = new Set();

before(async () => {
  op = await startProvider({ scopes: ['mcp:read', 'release:write'] });
  server = await startServer({
    vars: {
      OAUTH_ISSUER: op.issuer,
      OAUTH_SCOPES: 'mcp:read',
      // Expiry is tested for real, without waiting out a minute of skew.
      OAUTH_CLOCK_SKEW_SECONDS: '0',
      OAUTH_JWKS_TTL_SECONDS: String(JWKS_TTL_SECONDS),
    },
  });
});

after(async () => {
  await server?.stop();
  await op?.stop();
});

/** Signs `sub` in with the official v2 client, 2026-07-28 pinned, with handlers. */
async function signIn(sub, { onElicit, onSample } = {}) {
  const ap = makeAuthProvider({ redirectUrl: REDIRECT, sub });
  const { wire, fetchFn } = recorder();
  const { client, transport } = await connectWithOAuth(server.url, ap, {
    clientOptions: {
      capabilities: { elicitation: { form: {} }, sampling: {} },
      versionNegotiation: { mode: { pin: MODERN } },
    },
    transportOptions: { fetch: fetchFn },
    setup(c) {
      if (onElicit) c.setRequestHandler('elicitation/create', onElicit);
      if (onSample) c.setRequestHandler('sampling/createMessage', onSample);
    },
  });
  const remember = () => { for (const t of ap.tokenHistory) issued.add(t.access_token); };
  remember();
  return { ap, client, transport, wire, remember };
}

const textOf = (r) => r.content?.[0]?.text ?? '';
const yes = { role: 'assistant', model: 'e2e', content: { type: 'text', text: 'yes' }, stopReason: 'endTurn' };

describe(`the official client signs in and its paused calls outlive its tokens (${VIA})`, () => {
  test('401 → metadata → dynamic registration → PKCE S256 with resource → token; whoami is the user', { timeout: 60_000 }, async () => {
    const bare = await send(server.url, 'tools/list', {}, { id: 1 });
    assert.equal(bare.status, 401, bare.text);
    assert.equal(bare.headers.get('www-authenticate'),
      `Bearer resource_metadata="${new URL(server.url).origin}/.well-known/oauth-protected-resource/mcp", scope="mcp:read"`);
    const prm = await (await fetch(`${new URL(server.url).origin}/.well-known/oauth-protected-resource/mcp`)).json();
    assert.equal(prm.resource, server.url);
    assert.deepEqual(prm.authorization_servers, [op.issuer]);

    const s = await signIn('ada');
    try {
      assert.equal(s.ap.registrations.length, 1, 'registered dynamically');
      const authz = s.ap.authorizationUrls[0];
      assert.equal(authz.searchParams.get('code_challenge_method'), 'S256');
      assert.equal(authz.searchParams.get('resource'), server.url);
      assert.match(authz.searchParams.get('scope'), /mcp:read/);
      const token = s.ap.tokens().access_token;
      assert.equal(jwtPayload(token).aud, server.url);
      const who = JSON.parse(textOf(await s.client.callTool({ name: 'whoami', arguments: {} })));
      assert.equal(who.subject, 'ada');
      assert.equal(who.issuer, op.issuer);
      assert.equal(who.clientId, s.ap.registrations[0].client_id);
      assert.ok(who.scopes.includes('mcp:read'), JSON.stringify(who));
    } finally {
      await s.client.close();
    }
  });

  test('2026-07-28: a durable call paused past its access token expiry is refreshed by the client and completes', { timeout: 90_000 }, async () => {
    op.setAccessTokenTtl(3);
    let s;
    try {
      s = await signIn('ada', {
        onElicit: async () => {
          // The user takes their time: the access token expires meanwhile.
          await sleep(4500);
          return { action: 'accept', content: { target: 'staging' } };
        },
        onSample: async () => yes,
      });
      const r = await s.client.callTool({ name: 'deploy', arguments: { service: 'api' } });
      s.remember();
      assert.match(textOf(r), /^Deployed api to staging \(ticket CHG-/);
      const tokens = s.ap.tokenHistory.map((t) => t.access_token);
      assert.ok(tokens.length >= 2, `refreshed at least once (${tokens.length} tokens)`);
      assert.deepEqual([...new Set(tokens.map((t) => jwtPayload(t).sub))], ['ada']);
      // The retry with the expired token was refused, the refreshed one went on.
      const calls = s.wire.filter((w) => w.body?.method === 'tools/call');
      const refused = calls.findIndex((w) => w.status === 401);
      assert.ok(refused > 0, `a round was refused for the expired token: ${calls.map((w) => w.status)}`);
      assert.match(calls[refused].challenge, /error="invalid_token"/);
      assert.ok(calls[refused].body.params.requestState, 'the refused request was a retry of the paused call');
      const after = calls.slice(refused + 1).find((w) => w.body.params.requestState === calls[refused].body.params.requestState);
      assert.ok(after && after.status === 200, 'the same retry went through with the refreshed token');
      assert.notEqual(after.auth, calls[refused].auth);
    } finally {
      op.setAccessTokenTtl(3600);
      await s?.client.close();
    }
  });

  test('step-up: the second round needs release:write; the 403 names every scope, and after signing in again the same retry completes', { timeout: 90_000 }, async () => {
    const s = await signIn('ada', { onElicit: async () => ({ action: 'accept', content: { confirm: true } }) });
    try {
      assert.equal(jwtPayload(s.ap.tokens().access_token).scope.split(' ').includes('release:write'), false);
      await assert.rejects(s.client.callTool({ name: 'release', arguments: { build: 'v7' } }), (e) => /nauthorized|403|scope/i.test(String(e?.message ?? e)));
      const calls = s.wire.filter((w) => w.body?.method === 'tools/call');
      const forbidden = calls.find((w) => w.status === 403);
      assert.ok(forbidden, `a 403: ${calls.map((w) => w.status)}`);
      assert.match(forbidden.challenge, /error="insufficient_scope"/);
      assert.match(forbidden.challenge, /scope="mcp:read release:write"/);
      assert.ok(forbidden.body.params.requestState, 'refused at a later round, not at the start');
      // The client went to the authorization server for the wider scope.
      const params = s.ap.takeCallbackParams();
      assert.ok(params?.get('code'), 'the user was sent to sign in again');
      assert.match(s.ap.authorizationUrls.at(-1).searchParams.get('scope'), /release:write/);
      await s.transport.finishAuth(params);
      s.remember();
      const wider = s.ap.tokens().access_token;
      assert.ok(jwtPayload(wider).scope.split(' ').includes('release:write'));
      // The very request that was refused, again, with the new token.
      const again = await fetch(server.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json', accept: 'application/json, text/event-stream',
          'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'release',
          authorization: `Bearer ${wider}`,
        },
        body: JSON.stringify(forbidden.body),
      });
      const done = await again.json();
      assert.equal(again.status, 200, JSON.stringify(done));
      assert.equal(done.result.resultType, 'complete', JSON.stringify(done));
      assert.match(done.result.content[0].text, /^Released v7 for ada /);
    } finally {
      await s.client.close();
    }
  });

  test('2025-11-25 session: the v1 client answers a form after its token expired, refreshes, and the call completes', { timeout: 90_000 }, async () => {
    op.setAccessTokenTtl(3);
    const ap = makeAuthProvider({ redirectUrl: REDIRECT, sub: 'grace' });
    const { wire, fetchFn } = recorder();
    const make = () => {
      const client = new V1Client({ name: 'e2e-v1', version: '1' }, { capabilities: { elicitation: {}, sampling: {} } });
      client.setRequestHandler(ElicitRequestSchema, async () => {
        await sleep(4500);
        return { action: 'accept', content: { target: 'staging' } };
      });
      client.setRequestHandler(CreateMessageRequestSchema, async () => yes);
      return { client, transport: new V1Transport(new URL(server.url), { authProvider: ap, fetch: fetchFn }) };
    };
    let c = make();
    try {
      try {
        await c.client.connect(c.transport);
      } catch (e) {
        if (!(e instanceof V1Unauthorized)) throw e;
        await c.transport.finishAuth(ap.takeCallbackParams().get('code'));
        c = make();
        await c.client.connect(c.transport);
      }
      const r = await c.client.callTool({ name: 'deploy', arguments: { service: 'api' } });
      for (const t of ap.tokenHistory) issued.add(t.access_token);
      assert.match(textOf(r), /^Deployed api to staging \(ticket CHG-/);
      assert.ok(ap.tokenHistory.length >= 2, 'refreshed during the pause');
      assert.ok(wire.some((w) => w.status === 401 && w.body && !w.body.method), 'the answer with the expired token was refused');
    } finally {
      op.setAccessTokenTtl(3600);
      await c.client.close();
    }
  });
});

/** A bearer request of tools/call whoami (or `params`) with `token`. */
function callWith(token, params = { name: 'whoami', arguments: {} }, extra = {}) {
  if (token) issued.add(token);
  return send(server.url, 'tools/call', params, { id: 9, headers: token ? { authorization: `Bearer ${token}` } : {}, ...extra });
}

/** Claims the provider would put in a token for the server, for `sub`. */
function claims(sub = 'ada', over = {}) {
  const now = Math.floor(Date.now() / 1000);
  return { iss: op.issuer, sub, aud: server.url, iat: now, exp: now + 300, client_id: 'c1', scope: 'mcp:read', ...over };
}

describe(`what a token validator must refuse, with real keys and WebCrypto (${VIA})`, () => {
  const invalid = async (what, token) => {
    const r = await callWith(token);
    assert.equal(r.status, 401, `${what}: ${r.text}`);
    assert.match(r.headers.get('www-authenticate') ?? '', /error="invalid_token"/, what);
    assert.equal(r.json?.result, undefined);
  };

  test('a token the provider signed is served, RS256 and ES256 alike', async () => {
    for (const alg of ['RS256', 'ES256']) {
      const r = await callWith(op.signJwt(claims('ada'), { alg }));
      assert.equal(r.status, 200, `${alg}: ${r.text}`);
    }
  });

  test('no token is 401 without an error code; a malformed one, a bad signature, alg none and HS256 with the public key are 401 invalid_token', async () => {
    const none = await callWith(null);
    assert.equal(none.status, 401);
    assert.doesNotMatch(none.headers.get('www-authenticate'), /error=/);
    await invalid('malformed', 'abc.def');
    const good = op.signJwt(claims());
    const [h, p, sig] = good.split('.');
    const flipped = Buffer.from(sig, 'base64url');
    flipped[10] ^= 1;
    await invalid('bad signature', `${h}.${p}.${flipped.toString('base64url')}`);
    const b64 = (v) => Buffer.from(JSON.stringify(v)).toString('base64url');
    const kid = JSON.parse(Buffer.from(h, 'base64url')).kid;
    await invalid('alg none', `${b64({ alg: 'none', typ: 'at+jwt', kid })}.${p}.`);
    const rsa = op.jwks().keys.find((k) => k.kty === 'RSA');
    const pem = createPublicKey({ key: rsa, format: 'jwk' }).export({ type: 'spki', format: 'pem' });
    const hs = `${b64({ alg: 'HS256', typ: 'at+jwt', kid: rsa.kid })}.${p}`;
    await invalid('HS256 keyed with the public key', `${hs}.${createHmac('sha256', pem).update(hs).digest('base64url')}`);
  });

  test('expired, not yet valid, another issuer, another audience, no subject: 401 invalid_token', async () => {
    const now = Math.floor(Date.now() / 1000);
    await invalid('expired', op.signJwt(claims('ada', { exp: now - 5 })));
    await invalid('nbf in the future', op.signJwt(claims('ada', { nbf: now + 600 })));
    await invalid('wrong iss', op.signJwt(claims('ada', { iss: `${op.issuer}/evil` })));
    await invalid('wrong aud', op.signJwt(claims('ada', { aud: 'http://127.0.0.1:1/mcp' })));
    await invalid('no sub', op.signJwt(claims('ada', { sub: '' })));
  });

  test('a valid token without the server-wide scope is 403 insufficient_scope naming it', async () => {
    const r = await callWith(op.signJwt(claims('ada', { scope: 'profile' })));
    assert.equal(r.status, 403, r.text);
    const c = r.headers.get('www-authenticate');
    assert.match(c, /error="insufficient_scope"/);
    assert.match(c, /scope="mcp:read"/);
    assert.match(c, /resource_metadata="/);
  });

  test('the admin API: a user without the admin scope gets 403, one with it the listing; no token or a bad one, 404', async () => {
    const get = (t) => fetch(new URL('/admin/api/calls', server.url), { headers: t ? { authorization: `Bearer ${t}` } : {} });
    const user = await get(op.signJwt(claims('ada', { scope: 'mcp:read' })));
    assert.equal(user.status, 403, await user.text());
    const operator = await get(op.signJwt(claims('ada', { scope: 'mcp:read mcp:admin' })));
    assert.equal(operator.status, 200, await operator.clone().text());
    const listing = await operator.json();
    assert.equal(typeof listing.counts.total, 'number');
    assert.equal((await get(null)).status, 404);
    assert.equal((await get('abc.def')).status, 404);
    const good = op.signJwt(claims('ada', { scope: 'mcp:admin' }));
    const [h, p, sig] = good.split('.');
    const flipped = Buffer.from(sig, 'base64url');
    flipped[10] ^= 1;
    assert.equal((await get(`${h}.${p}.${flipped.toString('base64url')}`)).status, 404, 'a bad signature');
  });

  test('a token in the query string is refused even when it is valid', async () => {
    const token = op.signJwt(claims());
    const url = `${server.url}?access_token=${token}`;
    const r = await send(url, 'tools/call', { name: 'whoami', arguments: {} }, { id: 3, headers: { authorization: `Bearer ${token}` } });
    assert.equal(r.status, 401, r.text);
    assert.match(r.headers.get('www-authenticate'), /error="invalid_request"/);
  });

  test('made-up key ids cost one JWKS fetch, not one each', async () => {
    const before = op.hits('/jwks');
    const [h, p, s] = op.signJwt(claims()).split('.');
    const header = JSON.parse(Buffer.from(h, 'base64url'));
    for (let i = 0; i < 10; i++) {
      const forged = Buffer.from(JSON.stringify({ ...header, kid: `made-up-${i}` })).toString('base64url');
      await invalid(`kid made-up-${i}`, `${forged}.${p}.${s}`);
    }
    assert.ok(op.hits('/jwks') - before <= 1, `JWKS fetched ${op.hits('/jwks') - before} times`);
  });

  test('a key removed from the JWKS stops verifying once the cached key set is older than OAUTH_JWKS_TTL_SECONDS', { timeout: 30_000 }, async () => {
    const old = op.signJwt(claims());
    assert.equal((await callWith(old)).status, 200);
    op.rotateKeys({ dropOld: true });
    await sleep(JWKS_TTL_SECONDS * 1000 + 1500);
    await invalid('signed with a removed key', old);
    assert.equal((await callWith(op.signJwt(claims()))).status, 200, 'the new key verifies');
  });

  test("another user's paused call is refused as if it did not exist", async () => {
    const ada = op.signJwt(claims('ada'));
    const first = await callWith(ada, { name: 'deploy', arguments: { service: 'api' } });
    assert.equal(first.json.result.resultType, 'input_required', first.text);
    const retry = { name: 'deploy', arguments: { service: 'api' }, requestState: first.json.result.requestState,
      inputResponses: { target: { action: 'accept', content: { target: 'staging' } } } };
    const bob = await callWith(op.signJwt(claims('bob')), retry);
    assert.equal(bob.status, 400, bob.text);
    assert.equal(bob.json.error.code, -32602);
    // Ada, with a token minted later (refreshed), goes on.
    const later = await callWith(op.signJwt(claims('ada', { jti: 'refreshed' })), retry);
    assert.equal(later.json?.result?.resultType, 'input_required', later.text);
  });
});

describe(`a task belongs to its user across tokens (${VIA})`, () => {
  const EXT = 'io.modelcontextprotocol/tasks';
  const meta = { 'io.modelcontextprotocol/protocolVersion': MODERN,
    'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} }, extensions: { [EXT]: {} } } };
  const taskCall = (token, method, params) => send(server.url, method, { ...params, _meta: meta }, {
    id: 5, headers: { authorization: `Bearer ${token}`, ...(params.taskId ? { 'mcp-name': params.taskId } : {}) },
  });
  const token = (sub, over = {}) => { const t = op.signJwt(claims(sub, over)); issued.add(t); return t; };

  test('a task paused for input is answered with a later token of the same user, and is unknown to anyone else', { timeout: 60_000 }, async () => {
    const created = await taskCall(token('ada', { jti: 't1' }), 'tools/call', { name: 'confirm_delete', arguments: { filename: 'a.txt' } });
    assert.equal(created.status, 200, created.text);
    assert.equal(created.json.result.resultType, 'task', created.text);
    const taskId = created.json.result.taskId;
    let t;
    for (let i = 0; i < 50; i++) {
      t = (await taskCall(token('ada', { jti: `poll${i}` }), 'tasks/get', { taskId })).json.result;
      if (t.status !== 'working') break;
      await sleep(200);
    }
    assert.equal(t.status, 'input_required', JSON.stringify(t));
    // Bob's token: the same answer as a task that does not exist.
    const bob = await taskCall(token('bob'), 'tasks/get', { taskId });
    const unknown = await taskCall(token('bob'), 'tasks/get', { taskId: '0'.repeat(32) });
    assert.equal(bob.status, unknown.status);
    assert.deepEqual(bob.json.error, unknown.json.error);
    // Ada, with a token minted later (a refresh), answers and the task completes.
    const ack = await taskCall(token('ada', { jti: 't2' }), 'tasks/update',
      { taskId, inputResponses: { confirm: { action: 'accept', content: { confirm: true } } } });
    assert.equal(ack.status, 200, ack.text);
    for (let i = 0; i < 50; i++) {
      t = (await taskCall(token('ada', { jti: `done${i}` }), 'tasks/get', { taskId })).json.result;
      if (['completed', 'failed', 'cancelled'].includes(t.status)) break;
      await sleep(200);
    }
    assert.equal(t.status, 'completed', JSON.stringify(t));
    assert.equal(t.result.content[0].text, 'Deleted a.txt.');
  });
});

describe(`a fresh isolate's first signed-in requests (${VIA})`, () => {
  test('requests that arrive together while the issuer\'s keys are being fetched are all served, on one fetch', { timeout: 60_000 }, async () => {
    // The key set is answered slowly, so every request arrives while the
    // first one's fetch is under way (they were refused with 401 then).
    let fetched = 0;
    const slow = createServer((_req, res) => {
      fetched += 1;
      setTimeout(() => { res.setHeader('content-type', 'application/json'); res.end(JSON.stringify(op.jwks())); }, 300);
    });
    await new Promise((ok) => slow.listen(0, '127.0.0.1', ok));
    const fresh = await startServer({ vars: {
      OAUTH_ISSUER: op.issuer, OAUTH_SCOPES: 'mcp:read', OAUTH_JWKS_URL: `http://127.0.0.1:${slow.address().port}/jwks` } });
    try {
      const token = op.signJwt({ ...claims('ada'), aud: fresh.url });
      const replies = await Promise.all(Array.from({ length: 8 }, (_, i) => send(fresh.url, 'tools/call',
        { name: 'whoami', arguments: {} }, { id: i, headers: { authorization: `Bearer ${token}` } })));
      assert.deepEqual(replies.map((r) => r.status), Array(8).fill(200), replies.map((r) => r.text).join('\n'));
      assert.equal(fetched, 1, 'the key set was fetched once');
    } finally {
      await fresh.stop();
      slow.close();
    }
  });
});

describe(`no access token reaches storage or logs (${VIA})`, () => {
  test('the bytes of every access token issued above appear nowhere under the persist directory', async () => {
    assert.ok(issued.size >= 4, `tokens collected: ${issued.size}`);
    // Stopped first, so that nothing moves while it is read: the objects'
    // WAL files are checkpointed into their databases, the log is complete.
    await server.stop();
    const files = everything(server.persistTo);
    assert.ok(files.some(([f]) => f.endsWith('.sqlite')), 'objects were stored');
    for (const [f, text] of files) {
      for (const t of issued) {
        // The signature part alone is enough to recognise a token (the
        // made-up ones without a real signature are skipped).
        const sig = t.split('.')[2] ?? '';
        if (sig.length < 20) continue;
        assert.equal(text.includes(sig), false, `a token's signature is in ${f}`);
        assert.equal(text.includes(t.split('.')[1]), false, `a token's claims part is in ${f}`);
      }
    }
  });
});
