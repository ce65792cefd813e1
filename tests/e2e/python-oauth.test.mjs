// Sign-in with the official Python SDK (PyPI `mcp` 2.3.0, in .venv-e2e, see
// scripts/setup.sh): its own OAuth client (`OAuthClientProvider`) against a
// real authorization server on loopback (oidc-provider: dynamic client
// registration, PKCE S256, resource indicators, JWT access tokens), the
// fixtures worker under `wrangler dev` checking the tokens, with
// OAUTH_SCOPES unset and set, on the 2025-11-25 session wire, on 2026-07-28
// and as the SDK picks by default (`auto`: server/discover). Each run is a
// fresh process (tests/e2e/python/oauth_client.py) that signs in from nothing
// and completes a call that pauses for a form (`test_elicitation`), answered
// by the script.
//
// With OAUTH_SCOPES unset the protected resource metadata used to say
// `"scopes_supported": []`; the Python SDK requested that (nothing, or
// " offline_access") and the authorization server refused the registration.
// The field is now left out, so the SDK falls back to the authorization
// server's scopes_supported.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { startProvider } from './oauth/provider.mjs';
import { startWrangler } from './wrangler.mjs';

const ROOT = resolve(import.meta.dirname, '../..');
const PYTHON = join(ROOT, '.venv-e2e/bin/python');
const SCRIPT = join(ROOT, 'tests/e2e/python/oauth_client.py');
const PY_MCP_VERSION = '2.3.0';
const REDIRECT = 'http://127.0.0.1:9/callback';
/**
 * The wires: the SDK's `mode` and the protocol version it must end up on.
 * `auto` is the SDK's default (`Client(url)`): it probes server/discover.
 */
const WIRES = [
  { mode: 'legacy', version: '2025-11-25', name: '2025-11-25 session' },
  { mode: '2026-07-28', version: '2026-07-28', name: '2026-07-28' },
  { mode: 'auto', version: '2026-07-28', name: 'auto (server/discover)' },
];

/** Runs `args` with the venv's python; resolves {status, stdout, stderr}, killed after `timeoutMs`. */
function python(args, { timeoutMs = 120_000 } = {}) {
  return new Promise((ok, fail) => {
    const child = spawn(PYTHON, args, {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      // Loopback only: no proxy may get in between.
      env: { ...process.env, NO_PROXY: '127.0.0.1,localhost', no_proxy: '127.0.0.1,localhost', PYTHONUNBUFFERED: '1' },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (e) => { clearTimeout(timer); fail(e); });
    child.on('close', (status, signal) => { clearTimeout(timer); ok({ status, signal, stdout, stderr }); });
  });
}

/** Runs the client script against `url` on `mode`; its JSON report. */
async function signInWithPython(url, { mode, sub, answer }) {
  const r = await python([SCRIPT, url, '--mode', mode, '--sub', sub, '--answer', answer, '--redirect', REDIRECT, '--timeout', '90']);
  const line = r.stdout.trim().split('\n').at(-1) ?? '';
  let report;
  try {
    report = JSON.parse(line);
  } catch {
    assert.fail(`the Python client printed no report (exit ${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr.slice(-4000)}`);
  }
  return { ...r, report };
}

/** What a failed report says, for assertion messages. */
function explain(report) {
  return JSON.stringify({
    error: report.error, challenges: report.challenges, registrations: report.registrations,
    authorizations: report.authorizations, sdk: report.sdk,
    http: report.http?.map((h) => `${h.method} ${h.url} ${h.status ?? ''}${h.rpc ? ` ${h.rpc}` : ''}`),
    traceback: report.traceback,
  }, null, 2);
}

before(async () => {
  // The SDK must be there: no skipping.
  const check = existsSync(PYTHON)
    ? await python(['-c', 'import importlib.metadata as m; print(m.version("mcp"))'], { timeoutMs: 30_000 })
    : { status: 127, stdout: '', stderr: `${PYTHON} does not exist` };
  if (check.status !== 0 || check.stdout.trim() !== PY_MCP_VERSION) {
    throw new Error(`the Python MCP SDK ${PY_MCP_VERSION} is not installed in .venv-e2e `
      + `(found ${JSON.stringify(check.stdout.trim())}; ${check.stderr.trim().slice(-300)}): run scripts/setup.sh`);
  }
});

const CONFIGS = [
  { label: 'OAUTH_SCOPES unset', vars: {}, scopes: undefined, wires: WIRES },
  { label: 'OAUTH_SCOPES=mcp:tools', vars: { OAUTH_SCOPES: 'mcp:tools' }, scopes: ['mcp:tools'], wires: WIRES },
  // The case the Python SDK first failed on: an authorization server that
  // offers offline_access, which the SDK appends to whatever it asks for
  // (SEP-2207). From `"scopes_supported": []` that made " offline_access".
  {
    label: 'OAUTH_SCOPES unset, the authorization server offers offline_access',
    vars: {},
    scopes: undefined,
    offlineAccess: true,
    wires: WIRES.filter((w) => w.mode === 'auto'),
  },
];

for (const { label, vars, scopes, offlineAccess, wires } of CONFIGS) {
  describe(`the Python SDK signs in with OAuth (${label})`, () => {
    let op;
    let server;
    /** Clients the provider registered, with their metadata. */
    const registered = [];

    before(async () => {
      op = await startProvider({
        scopes: ['mcp:tools'],
        ...(offlineAccess ? { config: { scopes: ['openid', 'offline_access', 'mcp:tools'] } } : {}),
      });
      op.provider.on('registration_create.success', (_ctx, client) => registered.push(client.metadata()));
      server = await startWrangler({ vars: { OAUTH_ISSUER: op.issuer, ...vars } });
    }, { timeout: 180_000 });

    after(async () => {
      await server?.stop();
      await op?.stop();
    });

    test('the 401 challenge and the protected resource metadata', { timeout: 30_000 }, async () => {
      const bare = await fetch(server.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
      });
      await bare.arrayBuffer();
      assert.equal(bare.status, 401);
      const origin = new URL(server.url).origin;
      const challenge = bare.headers.get('www-authenticate');
      assert.equal(challenge, `Bearer resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp"`
        + (scopes ? `, scope="${scopes.join(' ')}"` : ''));
      const prm = await (await fetch(`${origin}/.well-known/oauth-protected-resource/mcp`)).json();
      assert.equal(prm.resource, server.url);
      assert.deepEqual(prm.authorization_servers, [op.issuer]);
      if (scopes) assert.deepEqual(prm.scopes_supported, scopes);
      else assert.equal('scopes_supported' in prm, false, `no scopes_supported key when no scope is configured: ${JSON.stringify(prm)}`);
    });

    for (const { mode, version, name } of wires) {
      test(`${name}: dynamic registration, PKCE S256 with resource, then a paused call completes`, { timeout: 150_000 }, async (t) => {
        const sub = `py-${mode}`;
        const answer = `ada-${mode}`;
        const regsBefore = op.hits('/reg');
        const tokensBefore = op.hits('/token');
        const registeredBefore = registered.length;
        const { report, stderr, status } = await signInWithPython(server.url, { mode, sub, answer });
        t.diagnostic(`scopes: challenge=${JSON.stringify(report.challenges)} registration=${JSON.stringify(report.registrations?.map((r) => r.request?.scope))} `
          + `authorization=${JSON.stringify(report.authorizations?.map((a) => a.scope))} tokens=${JSON.stringify(report.token_scopes)}`);
        assert.equal(report.ok, true, `the Python client failed (exit ${status}):\n${explain(report)}\n${stderr.slice(-2000)}`);

        // Dynamic registration: once, at the provider's registration endpoint, accepted.
        assert.equal(report.registrations.length, 1, explain(report));
        const [reg] = report.registrations;
        assert.equal(reg.url, `${op.issuer}/reg`);
        assert.equal(reg.status, 201, explain(report));
        assert.equal(op.hits('/reg') - regsBefore, 1, 'one registration request reached the provider');
        assert.equal(registered.length - registeredBefore, 1, 'the provider created one client');
        assert.equal(report.sdk.client_id, reg.response.client_id);
        // The scope it registered with and asked for: the challenge's, else the
        // resource's scopes_supported, else the authorization server's; never empty,
        // and offline_access only when the authorization server offers it.
        const asked = report.authorizations[0].scope ?? '';
        for (const s of [reg.request.scope ?? '', asked]) {
          assert.ok(s.trim().length > 0, `a non-empty scope: ${JSON.stringify(s)}`);
          assert.equal(s, s.trim(), `no stray spaces in ${JSON.stringify(s)}`);
          assert.equal(s.split(' ').includes('offline_access'), Boolean(offlineAccess), s);
          assert.ok(s.split(' ').includes('mcp:tools'), s);
        }
        if (!scopes) assert.equal(report.sdk.protected_resource_metadata.scopes_supported, undefined);

        // The authorization request: PKCE S256, the resource is this server.
        assert.equal(report.authorizations.length, 1, 'signed in once');
        const [authz] = report.authorizations;
        assert.equal(authz.endpoint, `${op.issuer}/auth`);
        assert.equal(authz.code_challenge_method, 'S256');
        assert.equal(authz.has_code_challenge, true);
        assert.equal(authz.resource, server.url);
        assert.equal(authz.redirect_uri, REDIRECT);
        assert.deepEqual(report.browser_steps.filter((s) => !s.startsWith('redirect')), ['login', 'consent']);
        // The code exchange carried the verifier and the resource.
        const exchange = report.http.find((h) => h.grant_type === 'authorization_code');
        assert.ok(exchange, explain(report));
        assert.equal(exchange.status, 200);
        assert.equal(exchange.has_code_verifier, true);
        assert.equal(exchange.resource, server.url);
        assert.ok(op.hits('/token') - tokensBefore >= 1);

        // It went through the server's 401 and its metadata, then on with a token.
        const first = report.http.find((h) => h.url === server.url);
        assert.equal(first.status, 401);
        assert.ok(report.http.some((h) => h.url === `${new URL(server.url).origin}/.well-known/oauth-protected-resource/mcp` && h.status === 200));
        assert.ok(report.http.filter((h) => h.url === server.url && h.bearer).every((h) => h.status === 200 || h.status === 202 || h.status === 204 || h.method !== 'POST'),
          explain(report));

        // The wire, the paused call and the caller.
        assert.equal(report.protocol_version, version);
        assert.ok(report.tools.includes('test_elicitation'), JSON.stringify(report.tools));
        assert.equal(report.elicitations.length, 1, 'the call paused once for the form');
        assert.deepEqual(report.elicitations[0].fields, ['email', 'username']);
        assert.equal(report.result.is_error, false, JSON.stringify(report.result));
        assert.match(report.result.text[0], /^User response: action=accept, content=/);
        const content = JSON.parse(report.result.text[0].replace(/^User response: action=accept, content=/, ''));
        assert.deepEqual(content, { username: answer, email: `${answer}@example.com` });
        assert.equal(report.whoami.subject, sub);
        assert.equal(report.whoami.issuer, op.issuer);
        assert.equal(report.whoami.clientId, reg.response.client_id);
        assert.ok(report.whoami.scopes.includes('mcp:tools'), JSON.stringify(report.whoami));
      });
    }
  });
}
