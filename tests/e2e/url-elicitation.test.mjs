// URL-mode elicitation that completes a paused call (issue 24, SEP-1036),
// against `wrangler dev` serving the fixtures worker: `connect` sends the
// user to this worker's /connect page; the user approves there; the call
// goes on. `wrangler dev` is restarted between the pause and the page's
// POST: the completion is recorded against the call kept in its Durable
// Object, not in anybody's memory. The page is reached as the user who owns
// the call (their bearer token); another user's POST, a replayed one and a
// forged elicitationId are refused (the first two alike: to the page they
// name no elicitation), and a forged id opens no object.
// The third-party token the page records is sealed: it is nowhere in the
// persist directory and never in what the client gets.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { freePort, freshPersistDir, startWrangler } from './wrangler.mjs';
import { MODERN } from './modern.mjs';
import { parseSse } from './sse.mjs';
import { everything } from './persisted.mjs';
import { startWebhook } from './webhook.mjs';

const ALICE = 'tok-alice-0123456789';
const BOB = 'tok-bob-0123456789ab';
const SECRET = 'gho_e2e_secret_4f9a1c';

let server;
let persistTo;
let port;
let hook;
let VARS;

before(async () => {
  // Where `sign_off` sends an approver their link (a chat message, here).
  hook = await startWebhook();
  VARS = { API_TOKENS: `alice:${ALICE},bob:${BOB}`, TICKET_WEBHOOK: hook.url('/tell') };
  persistTo = freshPersistDir();
  port = await freePort();
  server = await startWrangler({ persistTo, port, vars: VARS });
});

after(async () => {
  await server?.stop();
  await hook?.stop();
});

/** Stops `wrangler dev` and starts it again on the same port and storage. */
async function restart() {
  await server.stop();
  server = await startWrangler({ persistTo, port, vars: VARS });
}

/** A page request as a browser sends it, signed in as `token`. */
function page(url, token, form) {
  const headers = { authorization: `Bearer ${token}`, origin: new URL(url).origin };
  if (!form) return fetch(url, { headers });
  return fetch(url, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form),
  });
}

/** The client's fetch, signed in as alice. */
function withAlice(input, init = {}) {
  const h = new Headers(init.headers);
  h.set('authorization', `Bearer ${ALICE}`);
  return fetch(input, { ...init, headers: h });
}

/** How many SQLite files (objects) the persist directory holds. */
function objectCount() {
  return everything(persistTo).filter(([p]) => p.endsWith('.sqlite')).length;
}

/** The approval page's POST for elicitation `id` (on `url`'s page). */
function approve(url, token, id, secret = SECRET) {
  const u = new URL(url);
  return page(`${u.origin}${u.pathname}`, token, { elicitationId: id, decision: 'approve', token: secret });
}

describe('URL-mode elicitation completes a paused call from this worker\'s page', () => {
  test('2026-07-28 (the official client): paused, wrangler restarted, approved on the page, completed', { timeout: 120_000 }, async () => {
    const asked = [];
    const client = new Client(
      { name: 'durable-mcp-e2e', version: '0.0.1' },
      {
        capabilities: { elicitation: { form: {}, url: {} } },
        versionNegotiation: { mode: { pin: MODERN } },
      },
    );
    const checks = {};
    client.setRequestHandler('elicitation/create', async (req) => {
      const p = req.params;
      asked.push(p);
      if (asked.length > 1) return { action: 'accept' };
      assert.equal(p.mode, 'url');
      // 2026-07-28 has no elicitationId field: the id is in the URL.
      const id = new URL(p.url).searchParams.get('elicitationId');
      assert.ok(id);
      assert.equal(p.url, `${new URL(server.url).origin}/connect?elicitationId=${id}`);
      // The user opens the page: its form names this elicitation.
      const form = await page(p.url, ALICE);
      assert.equal(form.status, 200);
      assert.ok((await form.text()).includes(id));
      await restart();
      // Bob, a forged id and (below) a replay: the same answer, and a forged
      // id opens no object.
      const bob = await approve(p.url, BOB, id);
      checks.bob = [bob.status, await bob.text()];
      const before = objectCount();
      const forged = await approve(p.url, ALICE, `${id.slice(0, -4)}AAAA`);
      checks.forged = [forged.status, await forged.text()];
      checks.objects = [before, objectCount()];
      const done = await approve(p.url, ALICE, id);
      checks.done = [done.status, await done.text()];
      const again = await approve(p.url, ALICE, id);
      checks.again = [again.status, await again.text()];
      // The user's consent, given in the client.
      return { action: 'accept' };
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url), { fetch: withAlice }));
    try {
      const r = await client.callTool({ name: 'connect', arguments: { service: 'github' } }, { timeout: 100_000 });
      assert.equal(r.content[0].text, `Connected github (approved by alice; a token of ${SECRET.length} characters kept)`);
      assert.equal(asked.length, 1, 'asked once: the page completed it before the client came back');
      assert.equal(checks.done[0], 200, checks.done[1]);
      assert.match(checks.done[1], /Approved/);
      assert.equal(checks.bob[0], 404);
      assert.deepEqual(checks.forged, checks.bob, 'a forged id gets what another user gets');
      // A replay is the owner's own link, used up: refused too.
      assert.equal(checks.again[0], 404, checks.again[1]);
      assert.equal(checks.objects[1], checks.objects[0], 'a forged id opened no object');
      assert.ok(!JSON.stringify(r).includes(SECRET));
    } finally {
      await client.close();
    }
    for (const [file, text] of everything(persistTo)) {
      assert.ok(!text.includes(SECRET), `the page's secret is not in ${file}`);
    }
  });

  test('2025-11-25 session: paused on its stream, wrangler restarted, approved on the page; the result follows on the stream', { timeout: 120_000 }, async () => {
    const headers = (sid) => ({
      authorization: `Bearer ${ALICE}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(sid ? { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' } : {}),
    });
    const post = (sid, body) => fetch(server.url, { method: 'POST', headers: headers(sid), body: JSON.stringify(body) });
    const init = await post(null, { jsonrpc: '2.0', id: 0, method: 'initialize', params: {
      protocolVersion: '2025-11-25', capabilities: { elicitation: { form: {}, url: {} } },
      clientInfo: { name: 'e2e', version: '1' } } });
    assert.equal(init.status, 200);
    const sid = init.headers.get('mcp-session-id');
    await post(sid, { jsonrpc: '2.0', method: 'notifications/initialized' });
    const call = await post(sid, { jsonrpc: '2.0', id: 9, method: 'tools/call',
      params: { name: 'connect', arguments: { service: 'gitlab' } } });
    const events = parseSse(await call.text());
    const ask = events.find((e) => e.message?.method === 'elicitation/create');
    assert.ok(ask, JSON.stringify(events));
    const p = ask.message.params;
    assert.equal(p.mode, 'url');
    const lastId = events.filter((e) => e.id).at(-1).id;
    // Consent in the client: the call keeps waiting.
    const consent = await post(sid, { jsonrpc: '2.0', id: ask.message.id, result: { action: 'accept' } });
    assert.equal(consent.status, 202);

    await restart();
    const done = await approve(p.url, ALICE, p.elicitationId, 'glpat-e2e-0001');
    assert.equal(done.status, 200, await done.text());
    // The rest of the call's stream, from where the client left it.
    const rest = await fetch(server.url, { headers: { ...headers(sid), 'last-event-id': lastId } });
    const tail = parseSse(await rest.text()).filter((e) => e.message);
    assert.deepEqual(tail.map((e) => e.message.method ?? e.message.id), ['notifications/elicitation/complete', 9]);
    assert.equal(tail[0].message.params.elicitationId, p.elicitationId);
    assert.equal(tail[1].message.result.content[0].text, 'Connected gitlab (approved by alice; a token of 14 characters kept)');
    assert.equal((await approve(p.url, ALICE, p.elicitationId)).status, 404, 'replayed');
    for (const [file, text] of everything(persistTo)) {
      assert.ok(!text.includes('glpat-e2e-0001'), `the page's secret is not in ${file}`);
    }
  });

  test('an approver other than the caller (2026-07-28, the official client): only bob completes it, alice withdraws nothing, the tool learns who', { timeout: 120_000 }, async () => {
    const asked = [];
    const checks = {};
    const client = new Client(
      { name: 'durable-mcp-e2e', version: '0.0.1' },
      {
        capabilities: { elicitation: { form: {}, url: {} } },
        versionNegotiation: { mode: { pin: MODERN } },
      },
    );
    client.setRequestHandler('elicitation/create', async (req) => {
      const p = req.params;
      asked.push(p);
      if (asked.length > 1) return { action: 'accept' };
      // Alice's own link opens nothing, and bob's (sent to him) is not
      // hers to use.
      const bobs = hook.hits.find((h) => h.path === '/tell')?.body;
      checks.sent = bobs?.to;
      checks.distinct = bobs?.link !== p.url && !JSON.stringify(p).includes(new URL(bobs.link).searchParams.get('elicitationId'));
      const own = new URL(p.url).searchParams.get('elicitationId');
      const bobId = new URL(bobs.link).searchParams.get('elicitationId');
      const aliceOwn = await approve(p.url, ALICE, own);
      const aliceBobs = await approve(p.url, ALICE, bobId);
      checks.alice = [aliceOwn.status, aliceBobs.status];
      const form = await page(bobs.link, BOB);
      checks.form = form.status;
      await restart();
      const done = await approve(bobs.link, BOB, bobId, 'gho_bob_secret');
      checks.done = [done.status, await done.text()];
      return { action: 'accept' };
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url), { fetch: withAlice }));
    try {
      const r = await client.callTool({ name: 'sign_off', arguments: { change: 'CHG-7', approver: 'bob' } }, { timeout: 100_000 });
      // (The request's `_meta` names bob too; the official client does not
      // pass a URL elicitation's `_meta` to its handler.)
      assert.equal(asked[0].message, 'bob must sign off CHG-7', JSON.stringify({ r, asked, checks }));
      assert.equal(checks.sent, 'bob', 'the link went to bob');
      assert.ok(checks.distinct, 'alice was not given bob\'s link');
      assert.deepEqual(checks.alice, [404, 404], 'alice completes neither link');
      assert.equal(checks.form, 200, 'bob sees the question');
      assert.equal(checks.done[0], 200, checks.done[1]);
      assert.equal(r.content[0].text, 'CHG-7 signed off (approver:bob)');
      assert.equal(hook.count('/tell'), 1, 'bob was told once');
    } finally {
      await client.close();
    }
  });
});
