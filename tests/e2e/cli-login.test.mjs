// `durable-mcp login` and a signed-in CLI end to end (issue 23): a real
// OpenID provider on loopback (oidc-provider), the fixtures worker checking
// its JWT access tokens, and the CLI doing the whole flow itself: 401 /
// metadata discovery, dynamic registration, PKCE S256 with `resource`, the
// redirect caught on its loopback port, tokens kept owner-only, refreshed
// while a call is paused, `logout`.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { startProvider } from './oauth/provider.mjs';
import { playUser } from './oauth/user.mjs';
import { configDir, keptGrants, runCli } from './cli.mjs';
import { startServer } from './server.mjs';

let op;
let server;
let config;

before(async () => {
  op = await startProvider({ scopes: ['mcp:read', 'release:write'] });
  server = await startServer({
    vars: { OAUTH_ISSUER: op.issuer, OAUTH_SCOPES: 'mcp:read', OAUTH_CLOCK_SKEW_SECONDS: '0' },
  });
  config = configDir();
});

after(async () => {
  await server?.stop();
  await op?.stop();
  if (config) rmSync(config, { recursive: true, force: true });
});

const ada = (url) => playUser(url, { sub: 'ada' });
const tokenRequests = () => op.hits('/token');

describe('the durable-mcp CLI signs in with OAuth', () => {
  test('a user who denies: a clear error, no token kept', { timeout: 60_000 }, async () => {
    const r = await runCli(['tools', server.url], {
      config,
      play: (url) => playUser(url, { sub: 'ada', deny: true }),
    });
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /sign-in: authorization refused: access_denied/);
    assert.equal(r.signIns, 1, 'the CLI sent the user to sign in');
    assert.deepEqual(keptGrants(config), []);
  });

  test('login: discovery, registration, PKCE with resource, the loopback redirect; tokens kept owner-only', { timeout: 60_000 }, async () => {
    let asked;
    const r = await runCli(['login', server.url], {
      config,
      play: (url) => { asked = new URL(url); return ada(url); },
    });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr, new RegExp(`Signed in to ${server.url} by ${op.issuer}`));
    assert.equal(asked.searchParams.get('code_challenge_method'), 'S256');
    assert.equal(asked.searchParams.get('resource'), server.url);
    assert.match(asked.searchParams.get('redirect_uri'), /^http:\/\/127\.0\.0\.1:\d+\/callback$/);
    const kept = keptGrants(config);
    assert.equal(kept.length, 1);
    assert.equal(kept[0].mode, 0o600, 'the token file is the owner\'s only');
    assert.equal(kept[0].dirMode, 0o700);
    const g = kept[0].grant;
    assert.equal(g.issuer, op.issuer);
    assert.equal(g.resource, server.url);
    assert.ok(g.refresh_token, 'a refresh token was issued');
    // No token on the terminal.
    assert.ok(!r.stderr.includes(g.access_token) && !r.stdout.includes(g.access_token));
    assert.ok(!r.stderr.includes(g.refresh_token));

    const who = await runCli(['call', server.url, 'whoami', '--json'], { config });
    assert.equal(who.status, 0, who.stderr);
    assert.equal(who.signIns, 0, 'the kept token was used');
    const body = JSON.parse(JSON.parse(who.stdout).content[0].text);
    assert.equal(body.subject, 'ada');
    assert.equal(body.issuer, op.issuer);
  });

  test('a paused call whose access token expires during the pause is refreshed and finishes', { timeout: 120_000 }, async () => {
    op.setAccessTokenTtl(3);
    try {
      const login = await runCli(['login', server.url], { config, play: ada });
      assert.equal(login.status, 0, login.stderr);
      // Forget when the token expires (as with a server that does not say):
      // the client learns it from the MCP server's 401 mid-pause.
      const [{ file, grant }] = keptGrants(config);
      delete grant.expires_at;
      writeFileSync(file, JSON.stringify(grant));
      const before = grant.access_token;
      const tokensBefore = tokenRequests();
      const r = await runCli(['call', server.url, 'release', '--arg', 'build=b7'], {
        config,
        play: ada,
        // The question shows; the person answers 4.5 s later (the token lives 3).
        answers: [{ when: /\? Release b7\?/, after: 4_500, line: 'y' }],
      });
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, /Released b7 for ada/);
      const after = keptGrants(config)[0].grant;
      assert.notEqual(after.access_token, before, 'a new access token is kept');
      assert.ok(!r.stderr.includes(after.access_token));
      // Each sign-in is one code exchange; the rest were refreshes.
      const refreshes = tokenRequests() - tokensBefore - r.signIns;
      assert.ok(refreshes >= 1, `refreshed during the pause (${refreshes})`);
      assert.equal(after.refresh_token !== grant.refresh_token, true, 'the rotated refresh token is kept');
    } finally {
      op.setAccessTokenTtl(3600);
    }
  });

  test('logout forgets the server: the next call has to sign in again', { timeout: 60_000 }, async () => {
    const out = await runCli(['logout', server.url], { config });
    assert.equal(out.status, 0, out.stderr);
    assert.deepEqual(keptGrants(config), []);
    const r = await runCli(['tools', server.url], { config, play: ada });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.signIns, 1, 'signed in again');
    assert.match(r.stdout, /whoami/);
    // Nothing of the tokens in the files the test did not expect.
    assert.ok(!readFileSync(keptGrants(config)[0].file, 'utf8').includes('client_secret":"'), 'a public client');
  });
});
