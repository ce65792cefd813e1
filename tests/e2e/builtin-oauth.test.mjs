// The built-in authorization server end to end: the fixtures worker behind
// Cloudflare's @cloudflare/workers-oauth-provider (examples/oauth, served by
// `wrangler dev` with tests/e2e/builtin-oauth/wrangler.toml). The official
// v2 client finds it from the 401, registers (RFC 7591), signs a user in on
// our own page, and calls tools as that user; the Rust Worker knows the
// caller only from ctx.props (OAUTH_WRAPPER = "workers-oauth-provider").
// Access tokens live 60 s here (ACCESS_TOKEN_TTL_SECONDS, the library's
// minimum), so one test lets a token expire during a paused call.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { connectWithOAuth, makeAuthProvider, recorder } from './oauth/client.mjs';
import { playBuiltinUser } from './builtin-oauth/user.mjs';
import { MODERN, send } from './modern.mjs';
import { startWrangler } from './wrangler.mjs';
import { configDir, keptGrants, runCli } from './cli.mjs';

const ROOT = join(import.meta.dirname, '../..');
const REDIRECT = 'http://127.0.0.1:9/callback';
const TTL_SECONDS = 60;
const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));

/** STATE_KEYS and the loopback ALLOWED_HOSTS / ALLOWED_ORIGINS, from the repository's .dev.vars. */
function devVars() {
  const out = {};
  for (const line of readFileSync(join(ROOT, '.dev.vars'), 'utf8').split('\n')) {
    const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line.trim());
    if (m) out[m[1]] = m[2].replace(/^"(.*)"$/, '$1');
  }
  return out;
}

let server;
let origin;

before(async () => {
  // wrangler dev in the config's directory (no --config needed; no build step).
  server = await startWrangler({
    cwd: join(ROOT, 'tests/e2e/builtin-oauth'),
    vars: { ...devVars(), ACCESS_TOKEN_TTL_SECONDS: String(TTL_SECONDS) },
  });
  origin = new URL(server.url).origin;
});

after(async () => {
  await server?.stop();
});

/** Signs `sub` in on the built-in page with the official v2 client, 2026-07-28 pinned. */
async function signIn(sub, { onElicit, onSample, deny = false } = {}) {
  const pages = [];
  const ap = makeAuthProvider({
    redirectUrl: REDIRECT, sub, deny,
    play: (url, opts) => playBuiltinUser(url, { ...opts, onStep: (s) => pages.push(s) }),
  });
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
  return { ap, client, transport, wire, pages };
}

const textOf = (r) => r.content?.[0]?.text ?? '';
const yes = { role: 'assistant', model: 'e2e', content: { type: 'text', text: 'yes' }, stopReason: 'endTurn' };
const whoami = async (client) => {
  const r = await client.callTool({ name: 'whoami', arguments: {} });
  assert.notEqual(r.isError, true, textOf(r));
  return JSON.parse(textOf(r));
};

describe('the built-in authorization server (workers-oauth-provider) in front of the Rust Worker', () => {
  test('without a token /mcp is 401 with resource_metadata; the metadata names this server as resource and issuer', async () => {
    const bare = await send(server.url, 'tools/list', {}, { id: 1 });
    assert.equal(bare.status, 401, bare.text);
    const challenge = bare.headers.get('www-authenticate') ?? '';
    assert.match(challenge, /^Bearer /);
    assert.ok(challenge.includes(`resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp"`), challenge);
    assert.match(challenge, /scope="mcp:read"/);

    const prm = await (await fetch(`${origin}/.well-known/oauth-protected-resource/mcp`)).json();
    assert.equal(prm.resource, server.url);
    assert.deepEqual(prm.authorization_servers, [origin]);
    assert.deepEqual(prm.scopes_supported, ['mcp:read']);

    const as = await (await fetch(`${origin}/.well-known/oauth-authorization-server`)).json();
    assert.equal(as.issuer, origin);
    assert.equal(as.authorization_endpoint, `${origin}/authorize`);
    assert.equal(as.token_endpoint, `${origin}/token`);
    assert.equal(as.registration_endpoint, `${origin}/register`);
    assert.ok(as.grant_types_supported.includes('refresh_token'), JSON.stringify(as));
    assert.deepEqual(as.code_challenge_methods_supported, ['S256']);

    // A token the provider never issued is refused before the Rust Worker.
    const forged = await send(server.url, 'tools/call', { name: 'whoami', arguments: {} },
      { id: 2, headers: { authorization: 'Bearer ada:grant:not-a-token' } });
    assert.equal(forged.status, 401, forged.text);
    assert.match(forged.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
  });

  test('the official client registers, the user signs in on the login page, and whoami is that user and client', { timeout: 60_000 }, async () => {
    const s = await signIn('ada');
    try {
      assert.equal(s.ap.registrations.length, 1, 'registered dynamically');
      const authz = s.ap.authorizationUrls[0];
      assert.equal(`${authz.origin}${authz.pathname}`, `${origin}/authorize`);
      assert.equal(authz.searchParams.get('code_challenge_method'), 'S256');
      assert.equal(authz.searchParams.get('resource'), server.url);
      assert.match(authz.searchParams.get('scope') ?? '', /mcp:read/);
      // Our page: it names the client and where the tokens go, and sets the consent cookie.
      const page = s.pages.find((p) => p.kind === 'page');
      assert.ok(page, 'the login page was shown');
      assert.match(page.html, /durable-mcp-e2e/);
      assert.match(page.html, /127\.0\.0\.1/);
      assert.ok(page.headers.getSetCookie().some((c) => c.startsWith('__Host-oauth-consent-')), 'consent bound to the browser');
      assert.equal(s.ap.callbackUrls[0].searchParams.get('iss'), origin);

      const tokens = s.ap.tokens();
      assert.ok(tokens.refresh_token, 'a refresh token was issued');
      assert.equal(tokens.expires_in, TTL_SECONDS, 'ACCESS_TOKEN_TTL_SECONDS set the lifetime');

      const who = await whoami(s.client);
      assert.equal(who.subject, 'ada');
      assert.equal(who.clientId, s.ap.registrations[0].client_id);
      assert.deepEqual(who.scopes, ['mcp:read']);
      assert.equal(typeof who.issuer, 'string');
      assert.ok(who.issuer.length > 0, JSON.stringify(who));
    } finally {
      await s.client.close();
    }
    // Another user on another registration is another caller.
    const g = await signIn('grace');
    try {
      const who = await whoami(g.client);
      assert.equal(who.subject, 'grace');
      assert.equal(who.clientId, g.ap.registrations[0].client_id);
      assert.notEqual(who.clientId, s.ap.registrations[0].client_id);
    } finally {
      await g.client.close();
    }
  });

  test('Deny on the login page sends the client access_denied and no token', { timeout: 60_000 }, async () => {
    await assert.rejects(signIn('mallory', { deny: true }), /access_denied/);
  });

  test('deploy pauses for the elicitation form and the sampling request, and completes', { timeout: 60_000 }, async () => {
    const asked = { elicit: [], sample: [] };
    const s = await signIn('ada', {
      onElicit: async (req) => { asked.elicit.push(req); return { action: 'accept', content: { target: 'staging' } }; },
      onSample: async (req) => { asked.sample.push(req); return yes; },
    });
    try {
      const r = await s.client.callTool({ name: 'deploy', arguments: { service: 'api' } });
      assert.match(textOf(r), /^Deployed api to staging \(ticket CHG-[A-Z0-9]+\)\.$/, JSON.stringify(r));
      assert.equal(asked.elicit.length, 1, 'asked the form once');
      assert.match(JSON.stringify(asked.elicit[0]), /"target"/);
      assert.equal(asked.sample.length, 1, 'asked for a sample once');
      // The rounds were retries of one paused call, all with the same token.
      const calls = s.wire.filter((w) => w.body?.method === 'tools/call');
      assert.ok(calls.length >= 3, `three rounds: ${calls.length}`);
      assert.ok(calls.every((w) => w.status === 200), calls.map((w) => w.status).join());
      assert.ok(calls.slice(1).every((w) => w.body.params.requestState), 'the later rounds carry requestState');
    } finally {
      await s.client.close();
    }
  });

  test('a deploy paused past its access token expiry is refreshed by the client and completes', { timeout: 180_000 }, async () => {
    let s;
    s = await signIn('ada', {
      onElicit: async () => {
        // The user takes their time: the access token expires meanwhile.
        const t = s.ap.tokenHistory.at(-1);
        await sleep(Math.max(0, t.savedAt + t.expires_in * 1000 + 2000 - Date.now()));
        return { action: 'accept', content: { target: 'staging' } };
      },
      onSample: async () => yes,
    });
    try {
      const first = s.ap.tokens();
      const r = await s.client.callTool({ name: 'deploy', arguments: { service: 'api' } }, { timeout: 170_000 });
      assert.match(textOf(r), /^Deployed api to staging \(ticket CHG-/, JSON.stringify(r));
      assert.ok(s.ap.tokenHistory.length >= 2, `refreshed at least once (${s.ap.tokenHistory.length} token sets)`);
      assert.notEqual(s.ap.tokens().access_token, first.access_token);
      // The retry with the expired token was refused, the refreshed one went on.
      const calls = s.wire.filter((w) => w.body?.method === 'tools/call');
      const refused = calls.findIndex((w) => w.status === 401);
      assert.ok(refused > 0, `a round was refused for the expired token: ${calls.map((w) => w.status)}`);
      assert.match(calls[refused].challenge, /error="invalid_token"/);
      assert.equal(calls[refused].auth, `Bearer ${first.access_token}`);
      assert.ok(calls[refused].body.params.requestState, 'the refused request was a retry of the paused call');
      const retried = calls.slice(refused + 1).find((w) => w.body.params.requestState === calls[refused].body.params.requestState);
      assert.ok(retried && retried.status === 200, 'the same retry went through with the refreshed token');
      assert.notEqual(retried.auth, calls[refused].auth);
      // The expired token stays refused; the refreshed one is still the same caller.
      const stale = await send(server.url, 'tools/call', { name: 'whoami', arguments: {} },
        { id: 3, headers: { authorization: `Bearer ${first.access_token}` } });
      assert.equal(stale.status, 401, stale.text);
      const who = await whoami(s.client);
      assert.equal(who.subject, 'ada');
    } finally {
      await s?.client.close();
    }
  });
  test('the durable-mcp CLI logs in on our page, and a deploy paused until its token is nearly expired is refreshed and completes', { timeout: 120_000 }, async () => {
    const config = configDir();
    try {
      const login = await runCli(['login', server.url], {
        config,
        play: (url) => playBuiltinUser(url, { sub: 'ada' }),
      });
      assert.equal(login.status, 0, login.stderr);
      assert.equal(login.signIns, 1);
      const [{ grant, mode }] = keptGrants(config);
      assert.equal(mode, 0o600);
      assert.ok(grant.refresh_token, 'a refresh token was issued');
      assert.ok(grant.expires_at, 'the token endpoint said when the token expires');
      // The person answers once the token is within the CLI's 30 s refresh
      // margin (it lives 60 s here): the next round is sent with a refreshed one.
      const wait = Math.max(0, grant.expires_at * 1000 - 29_000 - Date.now());
      const r = await runCli(['call', server.url, 'deploy', '--arg', 'service=api'], {
        config,
        answers: [
          { when: /\? Where should api be deployed\?/, after: wait, line: 'staging' },
          { when: /\? The server asks the model:/, line: 'yes' },
        ],
      });
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.signIns, 0, 'no new sign-in: refreshed');
      assert.match(r.stdout, /^Deployed api to staging \(ticket CHG-/m);
      const after = keptGrants(config)[0].grant;
      assert.notEqual(after.access_token, grant.access_token, 'refreshed during the pause');
      assert.equal(after.client.client_id, grant.client.client_id);
      for (const t of [grant.access_token, grant.refresh_token, after.access_token]) {
        assert.ok(!r.stderr.includes(t) && !r.stdout.includes(t) && !login.stderr.includes(t), 'no token on the terminal');
      }
      const who = await runCli(['call', server.url, 'whoami', '--json'], { config });
      assert.equal(JSON.parse(JSON.parse(who.stdout).content[0].text).subject, 'ada');
    } finally {
      rmSync(config, { recursive: true, force: true });
    }
  });
});
