// Pages that know their user (issue 32): with sign-in on (API_TOKENS, or
// OAuth with a real oidc-provider), a browser that follows an elicitation
// link carries no Authorization. The first time, the server answers 303
// back to the same URL with a page pass (an HttpOnly cookie for the page's
// path) and marks the link opened in the call's storage; with the pass the
// page is served as for the call's user and its form POST completes the
// elicitation. The same link in another browser, or with another user's
// bearer, opens nothing; after completion neither the link nor the pass
// does. An open server (no sign-in) serves the page directly, as before.
// Every page response and refusal carries the page security headers. No
// pass and no page secret reaches storage or the logs.
//
// The browser is Debian's headless Chromium (puppeteer-core), one fresh
// incognito context per user; the clients are the official TypeScript
// client (2026-07-28) and raw requests (2026-07-28 and the 2025-11-25
// session wire). Runs against `wrangler dev`, and against plain `workerd
// serve` in page-signin.workerd.test.mjs.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import puppeteer from 'puppeteer-core';
import { startProvider } from './oauth/provider.mjs';
import { connectWithOAuth, makeAuthProvider } from './oauth/client.mjs';
import { MODERN, modernMeta, send } from './modern.mjs';
import { parseSse } from './sse.mjs';
import { everything } from './persisted.mjs';
import { startServer, VIA } from './server.mjs';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ALICE = 'tok-alice-0123456789';
const BOB = 'tok-bob-0123456789ab';
const TOKENS = { API_TOKENS: `alice:${ALICE},bob:${BOB}` };
const URL_CAPS = { elicitation: { form: {}, url: {} } };
/** Each browser step (a navigation, a click) ends within this. */
const STEP_MS = 20_000;
const REDIRECT = 'http://127.0.0.1:9/callback';

/** The page refusal for a link that is not (or no longer) valid. */
const NOT_VALID = /This link is not valid, or there is nothing waiting for it any more\./;
/** What the fixture page answers a request that names no elicitation of the caller's. */
const NOTHING_HERE = /Nothing to approve here\./;

let browser;

before(async () => {
  assert.ok(existsSync(CHROMIUM), `no Chromium at ${CHROMIUM}: run scripts/setup.sh (apt-get install chromium) or set CHROMIUM_PATH`);
  browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    // Root in CI: Chromium's own sandbox needs a user namespace it may not get.
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-quic'],
    protocolTimeout: 60_000,
  });
});

after(async () => {
  await browser?.close();
});

/** A header of a fetch `Headers` or of puppeteer's plain (lower-cased) object. */
function header(h, name) {
  return typeof h?.get === 'function' ? h.get(name) : h?.[name];
}

/** The five headers every page response and refusal carries. */
function assertPageHeaders(h, what) {
  const csp = header(h, 'content-security-policy') ?? '';
  assert.match(csp, /frame-ancestors 'none'/, `${what}: content-security-policy ${csp}`);
  assert.equal(header(h, 'x-frame-options'), 'DENY', `${what}: x-frame-options`);
  assert.equal(header(h, 'referrer-policy'), 'no-referrer', `${what}: referrer-policy`);
  assert.equal(header(h, 'x-content-type-options'), 'nosniff', `${what}: x-content-type-options`);
  assert.equal(header(h, 'cache-control'), 'no-store', `${what}: cache-control`);
}

/** The pass cookie as the server sets it on loopback http (no Secure). */
const PASS_COOKIE = /^(dmcp-pass-[A-Za-z0-9_-]{12})=([^;\s]+); Path=\/connect; HttpOnly; SameSite=Lax; Max-Age=900$/;

/** The ids of the call an elicitation id names (its claims' home: `{h: {c: <call id>}}`, a session's, a task's). */
function callIdsOf(elicitationId) {
  const claims = JSON.parse(Buffer.from(elicitationId.split('.')[1], 'base64url'));
  const ids = Object.values(claims.h ?? {}).flat().filter((v) => typeof v === 'string' && v.length >= 8);
  assert.ok(ids.length > 0, JSON.stringify(claims));
  return ids;
}

/** `body` names none of the call's ids. */
function namesNoCall(body, elicitationId) {
  return callIdsOf(elicitationId).every((c) => !body.includes(c));
}

/** None of `values` (passes, page secrets) is in any file under `persistTo`. */
function assertNothingKept(persistTo, values) {
  const files = everything(persistTo);
  assert.ok(files.some(([p]) => p.endsWith('.sqlite')), 'objects were stored');
  for (const [file, text] of files) {
    for (const v of values) assert.ok(!text.includes(v), `${v.slice(0, 16)}… is in ${file}`);
  }
}

/**
 * A user's browser: a fresh incognito context whose page has opened `url`.
 * `responses` is every response the page saw (redirects included).
 */
async function openInBrowser(url) {
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  page.setDefaultTimeout(STEP_MS);
  page.setDefaultNavigationTimeout(STEP_MS);
  const responses = [];
  page.on('response', (r) => responses.push({ url: r.url(), status: r.status(), headers: r.headers() }));
  const res = await page.goto(url, { waitUntil: 'domcontentloaded' });
  return { context, page, res, responses };
}

/** Fills the page's `token` field with `secret` and presses Approve: the response to the form's POST. */
async function approveInBrowser(page, secret) {
  await page.type('input[name=token]', secret);
  const [nav] = await Promise.all([
    page.waitForNavigation({ waitUntil: 'domcontentloaded' }),
    page.click('button[name=decision][value=approve]'),
  ]);
  return nav;
}

/**
 * The user's first visit: the link exchanged for a pass (303 back to the
 * same URL, the cookie stored), then the approval form for `url`'s
 * elicitation. Returns the browser and the pass it holds.
 */
async function firstVisit(url) {
  const b = await openInBrowser(url);
  const id = new URL(url).searchParams.get('elicitationId');
  const text = await b.page.content();
  assert.equal(b.res.status(), 200, text);
  assert.equal(b.page.url(), url, 'back on the link itself');
  const chain = b.res.request().redirectChain();
  assert.equal(chain.length, 1, 'one redirect: the pass exchange');
  assert.equal(chain[0].response().status(), 303);
  assert.equal(chain[0].url(), url);
  assertPageHeaders(chain[0].response().headers(), 'the 303 (browser)');
  assertPageHeaders(b.res.headers(), 'the page (browser)');
  // (Chromium also asks for /favicon.ico: only the page's own responses count.)
  assert.deepEqual(b.responses.filter((r) => new URL(r.url).pathname === '/connect').map((r) => r.status), [303, 200]);
  // The pass as the browser keeps it: HttpOnly, Lax, this page's path only.
  const cookies = await b.context.cookies();
  assert.equal(cookies.length, 1, JSON.stringify(cookies));
  const [pass] = cookies;
  assert.match(pass.name, /^dmcp-pass-[A-Za-z0-9_-]{12}$/);
  assert.equal(pass.path, '/connect');
  assert.equal(pass.httpOnly, true);
  assert.equal(pass.sameSite, 'Lax');
  assert.equal(pass.secure, false, 'no Secure on loopback http');
  assert.equal(pass.domain, '127.0.0.1');
  assert.ok(pass.expires > Date.now() / 1000 + 800 && pass.expires <= Date.now() / 1000 + 901, `expires ${pass.expires}`);
  // The form for this elicitation.
  assert.equal(await b.page.$eval('input[name=elicitationId]', (e) => e.value), id);
  assert.ok(await b.page.$('input[name=token]'));
  return { ...b, pass: pass.value };
}

/** Another browser (no cookie) opens `url`: refused, revealing nothing of the call. */
async function strangerOpens(url, service) {
  const b = await openInBrowser(url);
  try {
    const id = new URL(url).searchParams.get('elicitationId');
    const body = await b.page.content();
    assert.equal(b.res.status(), 404, body);
    assert.equal(b.res.request().redirectChain().length, 0, 'no pass for a second browser');
    assert.match(body, NOT_VALID);
    assert.ok(!body.includes(service), 'the service is not named');
    assert.ok(namesNoCall(body, id), 'the call id is not named');
    assert.ok(!body.includes(id), 'the elicitation id is not named');
    assertPageHeaders(b.res.headers(), 'the 404 to another browser');
    assert.deepEqual(await b.context.cookies(), [], 'no pass given');
  } finally {
    await b.context.close();
  }
}

/** `url` opened with `bearer` (another user): the page's own 404, naming no elicitation. */
async function otherUserOpens(url, bearer) {
  const r = await fetch(url, { headers: { authorization: `Bearer ${bearer}` }, redirect: 'manual' });
  const body = await r.text();
  assert.equal(r.status, 404, body);
  assert.match(body, NOTHING_HERE);
  assert.ok(!body.includes(new URL(url).searchParams.get('elicitationId')));
  assert.equal(r.headers.get('set-cookie'), null);
  assertPageHeaders(r.headers, "the 404 to another user's bearer");
}

/** The link as a browser opens it, by hand: no credentials, redirects not followed. */
function openRaw(url, cookie) {
  return fetch(url, { redirect: 'manual', headers: cookie ? { cookie } : {} });
}

/** The approval form's POST, by hand (same-origin, as the browser sends it). */
function postRaw(url, form, cookie) {
  const u = new URL(url);
  return fetch(`${u.origin}/connect`, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      origin: u.origin, 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}),
    },
    body: new URLSearchParams(form),
  });
}

/** A 2026-07-28 `connect` call (or its retry) by hand, as `bearer` (or nobody). */
function connectRaw(serverUrl, service, bearer, extra = {}) {
  return send(serverUrl, 'tools/call', { name: 'connect', arguments: { service }, _meta: modernMeta(URL_CAPS), ...extra },
    { headers: bearer ? { authorization: `Bearer ${bearer}` } : {} });
}

/** The URL a paused 2026-07-28 `connect` reply sends the user to, and its state. */
function pausedAt(reply) {
  assert.equal(reply.status, 200, reply.text);
  assert.equal(reply.json?.result?.resultType, 'input_required', reply.text);
  const params = reply.json.result.inputRequests.approve.params;
  assert.equal(params.mode, 'url');
  return { url: params.url, state: reply.json.result.requestState };
}

/** The same paused call retried after the user's consent: its final text. */
async function finish(serverUrl, service, bearer, state) {
  const r = await connectRaw(serverUrl, service, bearer,
    { requestState: state, inputResponses: { approve: { action: 'accept' } } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json?.result?.resultType, 'complete', r.text);
  return r.json.result.content[0].text;
}

/** What the fixture's tool answers once a page approved with a pass (the page's caller is nobody by name). */
const connected = (service, secret) => `Connected ${service} (approved by ; a token of ${secret.length} characters kept)`;

/**
 * The whole browser side of one paused call: alice's browser opens the link
 * (303, pass, form), another browser and bob are refused, alice approves
 * with `secret`, and after that her pass opens nothing. Returns the pass.
 */
async function userApproves(url, { service, secret, otherBearer }) {
  const alice = await firstVisit(url);
  try {
    await strangerOpens(url, service);
    await otherUserOpens(url, otherBearer);
    const done = await approveInBrowser(alice.page, secret);
    const text = await alice.page.content();
    assert.equal(done.status(), 200, text);
    assert.match(text, /Approved/);
    assertPageHeaders(done.headers(), 'the approved page (browser)');
    // The same browser, its pass still held: the link opens nothing now.
    const again = await alice.page.goto(url, { waitUntil: 'domcontentloaded' });
    const body = await alice.page.content();
    assert.equal(again.status(), 404, `opened again after approving: ${body}`);
    assertPageHeaders(again.headers(), 'the 404 after completion (browser)');
    return alice.pass;
  } finally {
    await alice.context.close();
  }
}

describe(`a signed-in user approves on the page in a browser: API_TOKENS (${VIA})`, () => {
  let server;
  const kept = [];

  before(async () => {
    server = await startServer({ vars: TOKENS });
  });

  after(async () => {
    await server?.stop();
  });

  test('2026-07-28 (the official client): the link opens in a browser once, as alice; she approves; the retry completes', { timeout: 120_000 }, async () => {
    const secret = 'gho_page_signin_7b3e1';
    kept.push(secret);
    const asked = [];
    let pass;
    const client = new Client(
      { name: 'durable-mcp-e2e', version: '0.0.1' },
      { capabilities: URL_CAPS, versionNegotiation: { mode: { pin: MODERN } } },
    );
    client.setRequestHandler('elicitation/create', async (req) => {
      asked.push(req.params);
      if (asked.length > 1) return { action: 'accept' };
      assert.equal(req.params.mode, 'url');
      assert.ok(req.params.url.startsWith(`${new URL(server.url).origin}/connect?elicitationId=`), req.params.url);
      pass = await userApproves(req.params.url, { service: 'github', secret, otherBearer: BOB });
      return { action: 'accept' };
    });
    const withAlice = (input, init = {}) => {
      const h = new Headers(init.headers);
      h.set('authorization', `Bearer ${ALICE}`);
      return fetch(input, { ...init, headers: h });
    };
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url), { fetch: withAlice }));
    try {
      const r = await client.callTool({ name: 'connect', arguments: { service: 'github' } }, { timeout: 100_000 });
      assert.equal(r.content[0].text, connected('github', secret));
      assert.equal(asked.length, 1, 'asked once: the page completed it before the client came back');
      assert.ok(!JSON.stringify(r).includes(secret));
      kept.push(pass);
    } finally {
      await client.close();
    }
  });

  test('by hand: the 303 and its Set-Cookie, the refusals (another browser, bob, a bad bearer, PUT) all with the page headers; approved with the pass; then nothing opens', { timeout: 60_000 }, async () => {
    const secret = 'gho_page_signin_raw_41';
    kept.push(secret);
    const { url, state } = pausedAt(await connectRaw(server.url, 'gitlab', ALICE));
    const id = new URL(url).searchParams.get('elicitationId');

    const first = await openRaw(url);
    assert.equal(first.status, 303, await first.text());
    assert.equal(first.headers.get('location'), `${new URL(url).pathname}${new URL(url).search}`);
    const set = first.headers.getSetCookie();
    assert.equal(set.length, 1, JSON.stringify(set));
    const m = PASS_COOKIE.exec(set[0]);
    assert.ok(m, `the pass cookie: ${set[0]}`);
    assertPageHeaders(first.headers, 'the 303');
    const cookie = `${m[1]}=${m[2]}`;
    kept.push(m[2]);

    // Opened once: a second exchange (another browser) gets what a forged link gets.
    const second = await openRaw(url);
    const secondBody = await second.text();
    assert.equal(second.status, 404, secondBody);
    assert.match(secondBody, NOT_VALID);
    assert.equal(second.headers.get('set-cookie'), null);
    assert.ok(!secondBody.includes('gitlab') && namesNoCall(secondBody, id));
    assertPageHeaders(second.headers, 'the 404 to a second browser');
    // A forged link gets what a used one gets: nothing tells them apart.
    const forged = await openRaw(url.replace(/.{4}$/, 'AAAA'));
    const forgedBody = await forged.text();
    assert.equal(forged.status, 404, forgedBody);
    assert.equal(forgedBody, secondBody, 'a forged link and a used one are told the same');
    assert.ok(!forgedBody.includes('gitlab') && namesNoCall(forgedBody, id));
    assertPageHeaders(forged.headers, 'the 404 to a forged link');

    // A pass opens its own link only: alice's pass for this link, sent as
    // the pass of another call's link (opened already), opens nothing.
    const other = pausedAt(await connectRaw(server.url, 'bitbucket', ALICE));
    const otherFirst = await openRaw(other.url);
    assert.equal(otherFirst.status, 303);
    const otherName = PASS_COOKIE.exec(otherFirst.headers.getSetCookie()[0] ?? '')?.[1];
    assert.ok(otherName && otherName !== m[1], 'each link has its own pass cookie');
    kept.push(PASS_COOKIE.exec(otherFirst.headers.getSetCookie()[0])[2]);
    const crossed = await openRaw(other.url, `${otherName}=${m[2]}`);
    assert.equal(crossed.status, 404, await crossed.text());

    const page = await openRaw(url, cookie);
    const pageBody = await page.text();
    assert.equal(page.status, 200, pageBody);
    assert.ok(pageBody.includes(id));
    assertPageHeaders(page.headers, 'the page with its pass');

    await otherUserOpens(url, BOB);
    const bad = await fetch(url, { headers: { authorization: 'Bearer not-a-token' }, redirect: 'manual' });
    const badBody = await bad.json();
    assert.equal(bad.status, 401, JSON.stringify(badBody));
    assert.match(bad.headers.get('content-type'), /^application\/json/);
    assert.equal(badBody.error.code, -32600);
    assertPageHeaders(bad.headers, 'the 401 to a bad bearer');
    const put = await fetch(url, { method: 'PUT', headers: { cookie } });
    assert.equal(put.status, 405, await put.text());
    assertPageHeaders(put.headers, 'the 405 to PUT');
    // A POST without the pass (a browser that never exchanged the link).
    const unsigned = await postRaw(url, { elicitationId: id, decision: 'approve', token: 'x' });
    assert.notEqual(unsigned.status, 200, await unsigned.text());
    assertPageHeaders(unsigned.headers, 'the refusal of a POST without a pass');

    const done = await postRaw(url, { elicitationId: id, decision: 'approve', token: secret }, cookie);
    const doneBody = await done.text();
    assert.equal(done.status, 200, doneBody);
    assert.match(doneBody, /Approved/);
    assertPageHeaders(done.headers, 'the approved page');

    // Completed: the pass and the link open nothing, before and after the retry.
    for (const when of ['before the retry', 'after the retry']) {
      if (when === 'after the retry') assert.equal(await finish(server.url, 'gitlab', ALICE, state), connected('gitlab', secret));
      const again = await openRaw(url, cookie);
      assert.equal(again.status, 404, `${when}: ${await again.text()}`);
      assertPageHeaders(again.headers, `the 404 ${when}`);
      assert.equal((await openRaw(url)).status, 404, `${when}, without the pass`);
      const replay = await postRaw(url, { elicitationId: id, decision: 'approve', token: 'y' }, cookie);
      assert.equal(replay.status, 404, `${when}, replayed: ${await replay.text()}`);
    }
  });

  test('2025-11-25 session: paused on its stream, approved in a browser with a pass; the result follows on the stream', { timeout: 90_000 }, async () => {
    const secret = 'glpat-page-signin-9c';
    kept.push(secret);
    const headers = (sid) => ({
      authorization: `Bearer ${ALICE}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(sid ? { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' } : {}),
    });
    const post = (sid, body) => fetch(server.url, { method: 'POST', headers: headers(sid), body: JSON.stringify(body) });
    const init = await post(null, { jsonrpc: '2.0', id: 0, method: 'initialize', params: {
      protocolVersion: '2025-11-25', capabilities: URL_CAPS, clientInfo: { name: 'e2e', version: '1' } } });
    assert.equal(init.status, 200);
    const sid = init.headers.get('mcp-session-id');
    await post(sid, { jsonrpc: '2.0', method: 'notifications/initialized' });
    const call = await post(sid, { jsonrpc: '2.0', id: 9, method: 'tools/call',
      params: { name: 'connect', arguments: { service: 'gitea' } } });
    const events = parseSse(await call.text());
    const ask = events.find((e) => e.message?.method === 'elicitation/create');
    assert.ok(ask, JSON.stringify(events));
    const p = ask.message.params;
    assert.equal(p.mode, 'url');
    assert.equal(new URL(p.url).searchParams.get('elicitationId'), p.elicitationId);
    const lastId = events.filter((e) => e.id).at(-1).id;
    const consent = await post(sid, { jsonrpc: '2.0', id: ask.message.id, result: { action: 'accept' } });
    assert.equal(consent.status, 202);

    kept.push(await userApproves(p.url, { service: 'gitea', secret, otherBearer: BOB }));
    const rest = await fetch(server.url, { headers: { ...headers(sid), 'last-event-id': lastId } });
    const tail = parseSse(await rest.text()).filter((e) => e.message);
    assert.deepEqual(tail.map((e) => e.message.method ?? e.message.id), ['notifications/elicitation/complete', 9]);
    assert.equal(tail[0].message.params.elicitationId, p.elicitationId);
    assert.equal(tail[1].message.result?.content?.[0]?.text, connected('gitea', secret), JSON.stringify(tail[1].message));
  });

  test('no pass and no page secret is in the persist directory (storage and logs)', () => {
    assert.ok(kept.length >= 6, `values collected: ${kept.length}`);
    assertNothingKept(server.persistTo, kept);
  });
});

describe(`a signed-in user approves on the page in a browser: OAuth (${VIA})`, () => {
  let op;
  let server;
  const kept = [];

  before(async () => {
    op = await startProvider({ scopes: ['mcp:read'] });
    server = await startServer({ vars: { OAUTH_ISSUER: op.issuer, OAUTH_SCOPES: 'mcp:read' } });
  });

  after(async () => {
    await server?.stop();
    await op?.stop();
  });

  /** A token the provider would issue to `sub` for this server. */
  const tokenFor = (sub) => {
    const now = Math.floor(Date.now() / 1000);
    return op.signJwt({ iss: op.issuer, sub, aud: server.url, iat: now, exp: now + 600, client_id: 'c1', scope: 'mcp:read' });
  };

  test('2026-07-28: alice signs in (the official client\'s OAuth flow); the link opens in a browser once; she approves; the retry completes', { timeout: 120_000 }, async () => {
    const secret = 'gho_oauth_page_signin_5';
    kept.push(secret);
    const asked = [];
    let pass;
    const ap = makeAuthProvider({ redirectUrl: REDIRECT, sub: 'alice' });
    const { client } = await connectWithOAuth(server.url, ap, {
      clientOptions: { capabilities: URL_CAPS, versionNegotiation: { mode: { pin: MODERN } } },
      setup(c) {
        c.setRequestHandler('elicitation/create', async (req) => {
          asked.push(req.params);
          if (asked.length > 1) return { action: 'accept' };
          pass = await userApproves(req.params.url, { service: 'github', secret, otherBearer: tokenFor('bob') });
          return { action: 'accept' };
        });
      },
    });
    try {
      const r = await client.callTool({ name: 'connect', arguments: { service: 'github' } }, { timeout: 100_000 });
      assert.equal(r.content[0].text, connected('github', secret));
      assert.equal(asked.length, 1);
      kept.push(pass);
    } finally {
      await client.close();
    }
  });

  test('by hand: the 303 and its Set-Cookie, a bad bearer\'s 401 and the refusals carry the page headers; approved with the pass; then nothing opens', { timeout: 60_000 }, async () => {
    const secret = 'gho_oauth_raw_2d';
    kept.push(secret);
    const alice = tokenFor('alice');
    const { url, state } = pausedAt(await connectRaw(server.url, 'gitlab', alice));
    const id = new URL(url).searchParams.get('elicitationId');
    const first = await openRaw(url);
    assert.equal(first.status, 303, await first.text());
    const m = PASS_COOKIE.exec(first.headers.getSetCookie()[0] ?? '');
    assert.ok(m, `the pass cookie: ${first.headers.getSetCookie()}`);
    assertPageHeaders(first.headers, 'the 303');
    const cookie = `${m[1]}=${m[2]}`;
    kept.push(m[2]);
    const second = await openRaw(url);
    assert.equal(second.status, 404);
    assertPageHeaders(second.headers, 'the 404 to a second browser');
    await otherUserOpens(url, tokenFor('bob'));

    const bad = await fetch(url, { headers: { authorization: 'Bearer not.a.token' }, redirect: 'manual' });
    const badText = await bad.text();
    assert.equal(bad.status, 401, badText);
    assert.match(bad.headers.get('content-type') ?? '', /^application\/json/, badText);
    assert.match(bad.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
    assertPageHeaders(bad.headers, 'the 401 to a bad bearer (OAuth)');
    const put = await fetch(url, { method: 'PUT', headers: { cookie } });
    assert.equal(put.status, 405, await put.text());
    assertPageHeaders(put.headers, 'the 405 to PUT (OAuth)');

    const done = await postRaw(url, { elicitationId: id, decision: 'approve', token: secret }, cookie);
    assert.equal(done.status, 200, await done.text());
    assertPageHeaders(done.headers, 'the approved page');
    assert.equal(await finish(server.url, 'gitlab', tokenFor('alice'), state), connected('gitlab', secret));
    const again = await openRaw(url, cookie);
    assert.equal(again.status, 404, await again.text());
    assertPageHeaders(again.headers, 'the 404 after completion');
  });

  test('no pass and no page secret is in the persist directory (storage and logs)', () => {
    assert.ok(kept.length >= 4, `values collected: ${kept.length}`);
    assertNothingKept(server.persistTo, kept);
  });
});

describe(`an open server (no sign-in) serves the page as before (${VIA})`, () => {
  let server;
  const kept = [];

  before(async () => {
    server = await startServer();
  });

  after(async () => {
    await server?.stop();
  });

  test('the link opens the form directly (no redirect, no pass); its POST completes the call', { timeout: 60_000 }, async () => {
    const secret = 'gho_open_server_88';
    kept.push(secret);
    const { url, state } = pausedAt(await connectRaw(server.url, 'github'));
    const id = new URL(url).searchParams.get('elicitationId');
    const page = await openRaw(url);
    const body = await page.text();
    assert.equal(page.status, 200, body);
    assert.equal(page.headers.get('set-cookie'), null, 'no pass on an open server');
    assert.ok(body.includes(id));
    assertPageHeaders(page.headers, 'the page (open server)');
    const put = await fetch(url, { method: 'PUT' });
    assert.equal(put.status, 405);
    assertPageHeaders(put.headers, 'the 405 (open server)');
    const done = await postRaw(url, { elicitationId: id, decision: 'approve', token: secret });
    const doneBody = await done.text();
    assert.equal(done.status, 200, doneBody);
    assert.match(doneBody, /Approved/);
    assertPageHeaders(done.headers, 'the approved page (open server)');
    assert.equal(await finish(server.url, 'github', null, state), connected('github', secret));
    const replay = await postRaw(url, { elicitationId: id, decision: 'approve', token: 'z' });
    assert.equal(replay.status, 404);
    assertPageHeaders(replay.headers, 'the 404 to a replay (open server)');
  });

  test('in a browser: the form at once, approved, the call completes', { timeout: 60_000 }, async () => {
    const secret = 'gho_open_browser_31';
    kept.push(secret);
    const { url, state } = pausedAt(await connectRaw(server.url, 'gitlab'));
    const b = await openInBrowser(url);
    try {
      assert.equal(b.res.status(), 200, await b.page.content());
      assert.equal(b.res.request().redirectChain().length, 0, 'no redirect');
      assertPageHeaders(b.res.headers(), 'the page (open server, browser)');
      assert.deepEqual(await b.context.cookies(), []);
      const done = await approveInBrowser(b.page, secret);
      assert.equal(done.status(), 200, await b.page.content());
      assert.match(await b.page.content(), /Approved/);
    } finally {
      await b.context.close();
    }
    assert.equal(await finish(server.url, 'gitlab', null, state), connected('gitlab', secret));
  });

  test('no page secret is in the persist directory', () => {
    assertNothingKept(server.persistTo, kept);
  });
});
