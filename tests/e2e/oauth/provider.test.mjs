// Self-test of the OAuth harness (provider.mjs, user.mjs) with no MCP
// server: dynamic registration, an authorization-code flow with PKCE S256 and
// a resource indicator played over HTTP, the RFC 9068 JWT it yields (checked
// against the published JWKS with node:crypto), refresh-token rotation, the
// access-token TTL and key rotation.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createPublicKey, randomBytes, verify } from 'node:crypto';
import { startProvider } from './provider.mjs';
import { playUser, CookieJar } from './user.mjs';

const RESOURCE = 'http://127.0.0.1:1/mcp';
const SCOPES = ['mcp:read', 'deploy:write'];

let op;
const stops = [];

before(async () => {
  op = await startProvider({ scopes: SCOPES });
  stops.push(op);
});
after(async () => {
  for (const p of stops) await p.stop();
});

async function discovery(issuer) {
  const res = await fetch(`${issuer}/.well-known/openid-configuration`);
  assert.equal(res.status, 200);
  return res.json();
}

/** RFC 7591 registration of a public native client with a loopback redirect. */
async function register(issuer, redirectUri, extra = {}) {
  const { registration_endpoint } = await discovery(issuer);
  const res = await fetch(registration_endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: 'harness self-test',
      redirect_uris: [redirectUri],
      application_type: 'native',
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      ...extra,
    }),
  });
  const body = await res.json();
  assert.equal(res.status, 201, JSON.stringify(body));
  assert.ok(body.client_id);
  return body;
}

function pkce() {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** Authorization request -> played user -> callback params; returns what the token request needs. */
async function authorize(issuer, client, { sub, scope = SCOPES.join(' '), resource = RESOURCE, grant, redirectUri = client.redirect_uris[0] } = {}) {
  const { authorization_endpoint } = await discovery(issuer);
  const { verifier, challenge } = pkce();
  const state = randomBytes(8).toString('hex');
  const url = new URL(authorization_endpoint);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: client.client_id,
    redirect_uri: redirectUri,
    scope,
    state,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    resource,
  });
  const callback = new URL(await playUser(url, { sub, grant }));
  assert.equal(`${callback.origin}${callback.pathname}`, redirectUri);
  assert.equal(callback.searchParams.get('error'), null, callback.href);
  assert.equal(callback.searchParams.get('state'), state);
  assert.equal(callback.searchParams.get('iss'), issuer); // RFC 9207
  const code = callback.searchParams.get('code');
  assert.ok(code);
  return { code, verifier, redirectUri };
}

async function token(issuer, params) {
  const res = await fetch(`${issuer}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(params),
  });
  return { status: res.status, body: await res.json() };
}

function decodeJwt(jwt) {
  const parts = jwt.split('.');
  assert.equal(parts.length, 3, 'access token is a compact JWS');
  const [header, payload] = parts.slice(0, 2).map((p) => JSON.parse(Buffer.from(p, 'base64url')));
  return { header, payload, parts };
}

/** Checks the JWS signature against the provider's published JWKS; returns the decoded token. */
async function verifyWithJwks(issuer, jwt) {
  const { jwks_uri } = await discovery(issuer);
  const { keys } = await (await fetch(jwks_uri)).json();
  const { header, payload, parts } = decodeJwt(jwt);
  const jwk = keys.find((k) => k.kid === header.kid);
  assert.ok(jwk, `kid ${header.kid} is in the JWKS`);
  assert.equal(jwk.d, undefined, 'the JWKS publishes no private key material');
  const key = createPublicKey({ key: jwk, format: 'jwk' });
  const data = Buffer.from(`${parts[0]}.${parts[1]}`);
  const sig = Buffer.from(parts[2], 'base64url');
  const ok = header.alg === 'ES256'
    ? verify('sha256', data, { key, dsaEncoding: 'ieee-p1363' }, sig)
    : verify('sha256', data, key, sig);
  assert.ok(ok, 'signature verifies with the JWKS key');
  // Tampering with the payload must break it (the check is real).
  const forged = Buffer.from(`${parts[0]}.${Buffer.from(JSON.stringify({ ...payload, sub: 'mallory' })).toString('base64url')}`);
  const forgedOk = header.alg === 'ES256'
    ? verify('sha256', forged, { key, dsaEncoding: 'ieee-p1363' }, sig)
    : verify('sha256', forged, key, sig);
  assert.equal(forgedOk, false);
  return { header, payload };
}

test('discovery lists S256, a registration endpoint, the JWKS and the scopes', async () => {
  for (const path of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']) {
    const res = await fetch(`${op.issuer}${path}`);
    assert.equal(res.status, 200, path);
    const doc = await res.json();
    assert.equal(doc.issuer, op.issuer);
    assert.ok(doc.code_challenge_methods_supported.includes('S256'), path);
    assert.equal(doc.registration_endpoint, op.registrationEndpoint);
    assert.equal(doc.jwks_uri, op.jwksUrl);
    assert.equal(doc.token_endpoint, op.tokenEndpoint);
    assert.equal(doc.authorization_endpoint, op.authorizationEndpoint);
    for (const s of SCOPES) assert.ok(doc.scopes_supported.includes(s), `${s} in scopes_supported`);
    assert.ok(doc.grant_types_supported.includes('refresh_token'));
  }
  const { keys } = await (await fetch(op.jwksUrl)).json();
  assert.deepEqual(keys.map((k) => k.alg).sort(), ['ES256', 'RS256']);
  assert.ok(keys.every((k) => k.kid && k.d === undefined));

  // signJwt mints tokens the provider would not issue (here a wrong aud) with its keys.
  for (const alg of ['RS256', 'ES256']) {
    const jwt = op.signJwt({ iss: op.issuer, sub: 'eve', aud: 'http://elsewhere/mcp', exp: 1 }, { alg });
    const { header, payload } = await verifyWithJwks(op.issuer, jwt);
    assert.equal(header.alg, alg);
    assert.equal(payload.aud, 'http://elsewhere/mcp');
  }
});

test('code flow with PKCE and a resource yields an RFC 9068 JWT for that resource; refresh rotates', async () => {
  const client = await register(op.issuer, 'http://127.0.0.1:49152/callback');
  const { code, verifier, redirectUri } = await authorize(op.issuer, client, { sub: 'alice' });
  const before = Math.floor(Date.now() / 1000);
  const { status, body } = await token(op.issuer, {
    grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: verifier,
    client_id: client.client_id, resource: RESOURCE,
  });
  assert.equal(status, 200, JSON.stringify(body));
  assert.equal(body.token_type, 'Bearer');
  assert.ok(body.refresh_token, 'a refresh token for a client with the refresh_token grant');
  assert.deepEqual(body.scope.split(' ').sort(), [...SCOPES].sort());

  const { header, payload } = await verifyWithJwks(op.issuer, body.access_token);
  assert.equal(header.typ, 'at+jwt');
  assert.equal(header.alg, 'RS256');
  assert.equal(payload.iss, op.issuer);
  assert.equal(payload.aud, RESOURCE);
  assert.equal(payload.sub, 'alice');
  assert.equal(payload.client_id, client.client_id);
  assert.deepEqual(payload.scope.split(' ').sort(), [...SCOPES].sort());
  assert.ok(payload.jti);
  assert.ok(payload.iat >= before - 1 && payload.iat <= before + 5);
  assert.equal(payload.exp - payload.iat, 3600);
  assert.ok(payload.exp > Math.floor(Date.now() / 1000));

  const refreshed = await token(op.issuer, {
    grant_type: 'refresh_token', refresh_token: body.refresh_token, client_id: client.client_id, resource: RESOURCE,
  });
  assert.equal(refreshed.status, 200, JSON.stringify(refreshed.body));
  assert.notEqual(refreshed.body.access_token, body.access_token);
  assert.ok(refreshed.body.refresh_token);
  assert.notEqual(refreshed.body.refresh_token, body.refresh_token, 'refresh tokens rotate');
  const second = await verifyWithJwks(op.issuer, refreshed.body.access_token);
  assert.equal(second.payload.sub, 'alice');
  assert.equal(second.payload.aud, RESOURCE);
  assert.notEqual(second.payload.jti, payload.jti);

  // A refresh without `resource` still gets the granted resource's JWT.
  const noResource = await token(op.issuer, {
    grant_type: 'refresh_token', refresh_token: refreshed.body.refresh_token, client_id: client.client_id,
  });
  assert.equal(noResource.status, 200, JSON.stringify(noResource.body));
  assert.equal(decodeJwt(noResource.body.access_token).payload.aud, RESOURCE);

  // The first refresh token was rotated away: reusing it fails.
  const reused = await token(op.issuer, {
    grant_type: 'refresh_token', refresh_token: body.refresh_token, client_id: client.client_id, resource: RESOURCE,
  });
  assert.equal(reused.status, 400);
  assert.equal(reused.body.error, 'invalid_grant');

  // The code is single use; replaying it also revokes the grant (RFC 6749 4.1.2),
  // so the refresh tokens issued from it stop working.
  const again = await token(op.issuer, {
    grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: verifier,
    client_id: client.client_id, resource: RESOURCE,
  });
  assert.equal(again.status, 400);
  assert.equal(again.body.error, 'invalid_grant');
  const revoked = await token(op.issuer, {
    grant_type: 'refresh_token', refresh_token: noResource.body.refresh_token, client_id: client.client_id,
  });
  assert.equal(revoked.status, 400);
  assert.equal(revoked.body.error, 'invalid_grant');
});

test('PKCE is required and a wrong verifier is refused', async () => {
  const client = await register(op.issuer, 'http://127.0.0.1:49153/callback');
  const url = new URL(op.authorizationEndpoint);
  url.search = new URLSearchParams({
    response_type: 'code', client_id: client.client_id, redirect_uri: client.redirect_uris[0],
    scope: 'mcp:read', state: 's', resource: RESOURCE,
  });
  const callback = new URL(await playUser(url, { sub: 'alice' }));
  assert.equal(callback.searchParams.get('error'), 'invalid_request');
  assert.match(callback.searchParams.get('error_description'), /PKCE/);

  const { code, redirectUri } = await authorize(op.issuer, client, { sub: 'alice' });
  const bad = await token(op.issuer, {
    grant_type: 'authorization_code', code, redirect_uri: redirectUri,
    code_verifier: pkce().verifier, client_id: client.client_id, resource: RESOURCE,
  });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.error, 'invalid_grant');
});

test('localhost redirects work; the user may grant fewer scopes or deny', async () => {
  const client = await register(op.issuer, 'http://localhost:49154/cb');
  const { code, verifier, redirectUri } = await authorize(op.issuer, client, { sub: 'bob', grant: ['mcp:read'] });
  const { status, body } = await token(op.issuer, {
    grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: verifier,
    client_id: client.client_id, resource: RESOURCE,
  });
  assert.equal(status, 200, JSON.stringify(body));
  const { payload } = decodeJwt(body.access_token);
  assert.equal(payload.sub, 'bob');
  assert.equal(payload.scope, 'mcp:read');

  const url = new URL(op.authorizationEndpoint);
  const { challenge } = pkce();
  url.search = new URLSearchParams({
    response_type: 'code', client_id: client.client_id, redirect_uri: redirectUri, scope: 'mcp:read',
    state: 'd', resource: RESOURCE, code_challenge: challenge, code_challenge_method: 'S256',
  });
  const steps = [];
  const denied = new URL(await playUser(url, { sub: 'bob', deny: true, onStep: (e) => steps.push(e.kind) }));
  assert.equal(denied.searchParams.get('error'), 'access_denied');
  assert.ok(steps.includes('login') && steps.includes('consent'), steps.join());

  // With a kept cookie jar the provider session skips the login page.
  const jar = new CookieJar();
  const seen = [];
  for (let i = 0; i < 2; i++) {
    url.searchParams.set('state', `j${i}`);
    const cb = new URL(await playUser(url, { sub: 'bob', cookieJar: jar, onStep: (e) => seen.push(`${i}:${e.kind}`) }));
    assert.ok(cb.searchParams.get('code'));
  }
  assert.ok(seen.includes('0:login') && !seen.includes('1:login'), seen.join());
});

test('accessTokenTtlSeconds sets exp - iat; ES256 tokens verify; keys rotate', async () => {
  const short = await startProvider({ scopes: SCOPES, accessTokenTtlSeconds: 2, alg: 'ES256' });
  stops.push(short);
  const client = await register(short.issuer, 'http://127.0.0.1:49155/callback');
  const { code, verifier, redirectUri } = await authorize(short.issuer, client, { sub: 'carol', scope: 'mcp:read' });
  const { status, body } = await token(short.issuer, {
    grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: verifier,
    client_id: client.client_id, resource: RESOURCE,
  });
  assert.equal(status, 200, JSON.stringify(body));
  assert.equal(body.expires_in, 2);
  const { header, payload } = await verifyWithJwks(short.issuer, body.access_token);
  assert.equal(header.alg, 'ES256');
  assert.equal(payload.exp - payload.iat, 2);

  short.setAccessTokenTtl(5);
  const oldKid = header.kid;
  short.rotateKeys();
  const refreshed = await token(short.issuer, {
    grant_type: 'refresh_token', refresh_token: body.refresh_token, client_id: client.client_id, resource: RESOURCE,
  });
  assert.equal(refreshed.status, 200, JSON.stringify(refreshed.body));
  const after = await verifyWithJwks(short.issuer, refreshed.body.access_token);
  assert.notEqual(after.header.kid, oldKid, 'signed with the new key');
  assert.equal(after.payload.exp - after.payload.iat, 5);
  assert.equal(after.payload.sub, 'carol');
  const { keys } = await (await fetch(short.jwksUrl)).json();
  assert.ok(keys.some((k) => k.kid === oldKid), 'the old key is still published');
});

test('a client registered with fewer scopes can step up, unless enforceClientScope', async () => {
  const client = await register(op.issuer, 'http://127.0.0.1:49156/callback', { scope: 'mcp:read' });
  assert.equal(client.scope, 'mcp:read');
  const { code, verifier, redirectUri } = await authorize(op.issuer, client, { sub: 'dave', scope: 'mcp:read deploy:write' });
  const { status, body } = await token(op.issuer, {
    grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: verifier,
    client_id: client.client_id, resource: RESOURCE,
  });
  assert.equal(status, 200, JSON.stringify(body));
  assert.deepEqual(decodeJwt(body.access_token).payload.scope.split(' ').sort(), ['deploy:write', 'mcp:read']);

  const strict = await startProvider({ scopes: SCOPES, enforceClientScope: true });
  stops.push(strict);
  const c2 = await register(strict.issuer, 'http://127.0.0.1:49157/callback', { scope: 'mcp:read' });
  const url = new URL(strict.authorizationEndpoint);
  url.search = new URLSearchParams({
    response_type: 'code', client_id: c2.client_id, redirect_uri: c2.redirect_uris[0], scope: 'mcp:read deploy:write',
    state: 's', resource: RESOURCE, code_challenge: pkce().challenge, code_challenge_method: 'S256',
  });
  const cb = new URL(await playUser(url, { sub: 'dave' }));
  assert.equal(cb.searchParams.get('error'), 'invalid_scope');

  // Scopes the provider does not support cannot even be registered.
  const res = await fetch(strict.registrationEndpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ redirect_uris: ['http://127.0.0.1:1/cb'], application_type: 'native', token_endpoint_auth_method: 'none', scope: 'other:thing' }),
  });
  assert.equal(res.status, 400);
  assert.equal((await res.json()).error, 'invalid_client_metadata');
});
