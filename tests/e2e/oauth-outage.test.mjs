// The issuer down (issue 32, H): the Worker against a tiny loopback issuer
// of our own (RFC 8414 metadata and a JWKS, switched to answering 503 at
// will, every GET counted). While the issuer's keys cannot be read a
// request carrying a plausible token is answered 503 with Retry-After, and
// a flood of them costs the issuer a fetch or two, not three each; keys
// read before the outage keep verifying tokens past their TTL meanwhile.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { randomBytes } from 'node:crypto';
import { generateSigningJwk, publicJwk, signJwt } from './oauth/provider.mjs';
import { send } from './modern.mjs';
import { startServer, VIA } from './server.mjs';

const JWKS_TTL_SECONDS = 2;
const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));

/** An issuer that answers 503 while `down`, and counts what it is asked. */
async function startIssuer({ down = false } = {}) {
  const key = generateSigningJwk('ES256');
  const gets = [];
  const state = { down };
  const srv = createServer((req, res) => {
    const path = new URL(req.url, 'http://x').pathname;
    gets.push(path);
    const json = (status, body) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (state.down) return json(503, { error: 'temporarily_unavailable' });
    if (path === '/.well-known/oauth-authorization-server') {
      return json(200, { issuer, jwks_uri: `${issuer}/jwks`, response_types_supported: ['code'] });
    }
    if (path === '/jwks') return json(200, { keys: [publicJwk(key)] });
    return json(404, { error: 'not_found' });
  });
  await new Promise((ok) => srv.listen(0, '127.0.0.1', ok));
  const issuer = `http://127.0.0.1:${srv.address().port}`;
  return {
    issuer,
    key,
    gets,
    metadataGets: () => gets.filter((p) => p.startsWith('/.well-known/')).length,
    jwksGets: () => gets.filter((p) => p === '/jwks').length,
    set down(v) { state.down = v; },
    stop: () => new Promise((ok) => { srv.closeAllConnections?.(); srv.close(ok); }),
  };
}

let idp;
let server;

before(async () => {
  idp = await startIssuer({ down: true });
  server = await startServer({
    vars: {
      OAUTH_ISSUER: idp.issuer,
      OAUTH_JWKS_TTL_SECONDS: String(JWKS_TTL_SECONDS),
    },
  });
});

after(async () => {
  await server?.stop();
  await idp?.stop();
});

/** A token with the claims a good one has (iss, aud, sub, exp). */
function claims() {
  const now = Math.floor(Date.now() / 1000);
  return { iss: idp.issuer, aud: server.url, sub: 'ada', client_id: 'c1', iat: now, exp: now + 600, jti: randomBytes(8).toString('hex') };
}

/** Signed with the issuer's real key. */
const goodToken = () => signJwt(claims(), idp.key);

/** The public iss and aud, a made-up key id and signature: what anyone can send. */
function madeUpToken() {
  const b64 = (v) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const header = { alg: 'ES256', typ: 'at+jwt', kid: `made-up-${randomBytes(4).toString('hex')}` };
  return `${b64(header)}.${b64(claims())}.${randomBytes(64).toString('base64url')}`;
}

const list = (token) => send(server.url, 'tools/list', {}, { headers: { authorization: `Bearer ${token}` } });

function assertUnavailable(r) {
  assert.equal(r.status, 503, r.text);
  const retry = r.headers.get('retry-after');
  assert.match(retry ?? '', /^[1-9][0-9]*$/, `Retry-After: ${retry}`);
  assert.equal(r.json?.jsonrpc, '2.0', r.text);
  assert.equal(r.json.error?.code, -32603, r.text);
  assert.equal(r.json.error.data?.retryAfter, Number(retry), r.text);
  assert.match(r.json.error.message, /^Service unavailable/, r.text);
}

describe(`while the issuer's keys cannot be read (${VIA})`, () => {
  test('30 made-up tokens with the right iss and aud: each gets 503 with Retry-After, the issuer a few fetches', { timeout: 60_000 }, async (t) => {
    for (let i = 0; i < 30; i++) assertUnavailable(await list(madeUpToken()));
    // Ten at once as well: one refresh at a time.
    const together = await Promise.all(Array.from({ length: 10 }, () => list(madeUpToken())));
    for (const r of together) assertUnavailable(r);
    assert.ok(idp.metadataGets() >= 1, 'the metadata was asked for');
    assert.ok(idp.metadataGets() <= 5, `metadata fetched ${idp.metadataGets()} times for 40 requests: ${idp.gets}`);
    assert.equal(idp.jwksGets(), 0);
    t.diagnostic(`the issuer was asked ${idp.metadataGets()} times for 40 requests`);
    // A token its claims refuse costs nothing and is a 401 as ever.
    const before = idp.gets.length;
    const foreign = signJwt({ ...claims(), aud: 'https://elsewhere.example/mcp' }, idp.key);
    const r = await list(foreign);
    assert.equal(r.status, 401, r.text);
    assert.equal(idp.gets.length, before, 'no fetch for a token its claims refuse');
  });

  test('keys read before an outage keep verifying tokens past their TTL during it', { timeout: 60_000 }, async (t) => {
    // The issuer is back: once the back-off ends, a good token works.
    idp.down = false;
    let ok;
    for (let i = 0; i < 40; i++) {
      ok = await list(goodToken());
      if (ok.status !== 503) break;
      await sleep(500);
    }
    assert.equal(ok.status, 200, ok.text);
    assert.ok(Array.isArray(ok.json?.result?.tools), ok.text);
    // Down again, and the key set older than its TTL.
    idp.down = true;
    await sleep(JWKS_TTL_SECONDS * 1000 + 1000);
    const before = idp.gets.length;
    for (let i = 0; i < 10; i++) {
      const r = await list(goodToken());
      assert.equal(r.status, 200, `request ${i}: ${r.text}`);
      assert.ok(Array.isArray(r.json?.result?.tools), r.text);
    }
    const refreshes = idp.gets.length - before;
    assert.ok(refreshes >= 1 && refreshes <= 3, `key set fetched ${refreshes} times: ${idp.gets.slice(before)}`);
    t.diagnostic(`during the outage: ${refreshes} failed refresh(es) for 10 requests, all 200`);
    // A forged signature is still refused with the stale key; a key this
    // isolate never read might be the issuer's newest: 503.
    const good = goodToken();
    const forged = `${good.slice(0, good.lastIndexOf('.'))}.${randomBytes(64).toString('base64url')}`;
    assert.equal((await list(forged)).status, 401);
    assertUnavailable(await list(madeUpToken()));
  });
});
