// CORS as a browser lives it: a page served from another loopback origin
// calls the fixtures worker (`wrangler dev`) with the official TypeScript
// clients — v1 (@modelcontextprotocol/sdk) and v2
// (@modelcontextprotocol/client), each bundled for the browser by esbuild —
// in Debian's headless Chromium driven by puppeteer-core (nothing
// downloads a browser). From the origin ALLOWED_ORIGINS names, each client
// connects, lists the tools, runs a call that pauses for a form its
// handler answers, and reads the session id on the 2025-11-25 wire (v2 also
// pinned to 2026-07-28, with a tool's Mcp-Param-* header); the same page
// from an origin not allowed is refused by the browser at the preflight.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join, resolve } from 'node:path';
import puppeteer from 'puppeteer-core';
import { startWrangler } from './wrangler.mjs';
import { bundle, serveStatic } from './browser/serve.mjs';

const ROOT = resolve(import.meta.dirname, '../..');
// Debian's package (scripts/setup.sh installs it); puppeteer-core brings none.
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SESSION = '2025-11-25';
const MODERN = '2026-07-28';
/** Each step a page takes (connect, list, the paused call …) ends within this. */
const STEP_MS = 20_000;
/** The form the fixture asks (tests/fixtures-worker/src/fixtures.rs, test_elicitation). */
const FORM_TOOL = 'test_elicitation';
/** What a browser may send to /mcp: the fixed headers and the fixtures' one Mcp-Param-*. */
const REQUEST_HEADERS = ['content-type', 'accept', 'authorization', 'mcp-protocol-version', 'mcp-session-id',
  'mcp-method', 'mcp-name', 'last-event-id', 'mcp-dependent-requests', 'mcp-param-region'];
const EXPOSED = ['mcp-session-id', 'mcp-protocol-version', 'www-authenticate'];

let server;
let browser;
/** The page server on the origin ALLOWED_ORIGINS names. */
let allowed;
/** The same pages on another port: an origin not allowed. */
let refused;
/** Each page's own browser context (its own preflight cache), closed in after(). */
const contexts = [];

before(async () => {
  assert.ok(existsSync(CHROMIUM), `no Chromium at ${CHROMIUM}: run scripts/setup.sh (apt-get install chromium) or set CHROMIUM_PATH`);
  assert.ok(existsSync(join(ROOT, 'tests/fixtures-worker/build/worker/shim.mjs')),
    'the fixtures worker is not built: run scripts/build.sh fixtures');
  const bundles = await bundle(['v1', 'v2']);
  [allowed, refused] = await Promise.all([serveStatic(bundles), serveStatic(bundles)]);
  [server, browser] = await Promise.all([
    startWrangler({
      vars: {
        STATE_KEYS: 'dev:browser-e2e-key-0123456789abcdef',
        ALLOWED_HOSTS: 'localhost,127.0.0.1',
        ALLOWED_ORIGINS: allowed.origin,
      },
    }),
    puppeteer.launch({
      executablePath: CHROMIUM,
      headless: true,
      protocolTimeout: 60_000,
      // Root in CI: Chromium's own sandbox needs a user namespace it may not get.
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-quic'],
    }),
  ]);
});

after(async () => {
  for (const c of contexts) {
    try { await c.close(); } catch { /* gone with the browser */ }
  }
  await browser?.close();
  await server?.stop();
  await allowed?.close();
  await refused?.close();
});

/** A raw request with the headers exactly as given (Origin included). */
function raw(url, { method = 'POST', headers = {}, body } = {}) {
  return new Promise((ok, fail) => {
    const req = httpRequest(url, { method, headers, timeout: 10_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { text += c; });
      res.on('end', () => ok({ status: res.statusCode, headers: res.headers, text }));
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${url}: no answer in 10 s`)));
    req.on('error', fail);
    req.end(body);
  });
}

/** A response as one line, for assertion messages. */
function shown(r) {
  return `${r.status} ${JSON.stringify(r.headers)} ${r.text.slice(0, 300)}`;
}

/** The comma-separated values of a header, lower-cased. */
function list(value) {
  return (value ?? '').split(',').map((s) => s.trim().toLowerCase()).filter(Boolean);
}

const corsHeaders = (headers) => Object.keys(headers).filter((h) => h.startsWith('access-control-'));

/**
 * Opens `<origin>/<client>.html` in a fresh browser context (so no
 * preflight an earlier page made is cached: each run is preflighted) and
 * runs the client with `opts`. Returns its report, what the page logged,
 * and the preflights the browser made (from the DevTools protocol: status
 * and headers of each).
 */
async function runPage(origin, client, opts) {
  const context = await browser.createBrowserContext();
  contexts.push(context);
  const page = await context.newPage();
  const consoleLog = [];
  page.on('console', (m) => consoleLog.push(`${m.type()}: ${m.text()}`));
  page.on('pageerror', (e) => consoleLog.push(`pageerror: ${e.message}`));
  const preflights = [];
  const cdp = await page.createCDPSession();
  await cdp.send('Network.enable');
  cdp.on('Network.responseReceived', (e) => {
    if (e.type === 'Preflight') {
      preflights.push({ url: e.response.url, status: e.response.status, headers: lowerKeys(e.response.headers) });
    }
  });
  await page.goto(`${origin}/${client}.html`, { waitUntil: 'load', timeout: 15_000 });
  await page.waitForFunction(() => window.mcpE2E !== undefined, { timeout: 10_000 });
  const report = await page.evaluate((o) => window.mcpE2E.run(o), { url: server.url, stepMs: STEP_MS, ...opts });
  await context.close();
  return { report, consoleLog, preflights };
}

function lowerKeys(headers) {
  return Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
}

/** A run's report, log and preflights, for assertion messages. */
function explain(run) {
  return JSON.stringify(run, null, 1).slice(0, 8000);
}

/** A unique form answer, and the fixture's arguments. */
function form(who) {
  const answer = { username: `ada-${who}-${Math.random().toString(36).slice(2, 8)}`, email: `${who}@example.com` };
  return { tool: FORM_TOOL, arguments: { message: `Who is calling from the ${who} page?` }, answer };
}

/** What every successful run shows: the form asked and answered, the answer in the result. */
function assertFormAnswered(run, { answer, arguments: args }) {
  const { report } = run;
  assert.equal(report.failed, null, explain(run));
  assert.ok(report.tools.includes(FORM_TOOL), `tools: ${report.tools}`);
  assert.ok(report.tools.includes('deploy'), `tools: ${report.tools}`);
  assert.equal(report.elicited.length, 1, explain(run));
  assert.equal(report.elicited[0].message, args.message);
  assert.deepEqual(report.elicited[0].requestedSchema.required, ['username', 'email']);
  assert.equal(report.result.isError, undefined, explain(report.result));
  const text = report.result.content.map((c) => c.text).join('\n');
  assert.match(text, /action=accept/, text);
  assert.ok(text.includes(JSON.stringify(answer.username)) && text.includes(JSON.stringify(answer.email)),
    `the answered form is in the result: ${text}`);
}

/** Every request reached the page (nothing refused by the browser), and no CORS complaint was logged. */
function assertNothingRefused(run) {
  const { report, consoleLog, preflights } = run;
  const failed = report.wire.filter((w) => w.error !== undefined || w.status === undefined);
  assert.deepEqual(failed, [], explain(run));
  assert.deepEqual(consoleLog.filter((l) => /CORS|Access-Control/i.test(l)), [], explain(run));
  assert.deepEqual(report.errors.filter((e) => /fetch|CORS|network/i.test(e)), [], explain(run));
  for (const p of preflights) {
    assert.equal(p.status, 204, `preflight ${explain(p)}`);
    assert.equal(p.headers['access-control-allow-origin'], allowed.origin, explain(p));
  }
  assert.ok(preflights.length > 0, 'the browser preflighted the cross-origin requests');
}

/** The 2025-11-25 session as the page saw it: the id read from the exposed header, used, then ended. */
function assertSession(run) {
  const { report } = run;
  assert.equal(typeof report.sessionId, 'string', explain(run));
  assert.notEqual(report.sessionId, '');
  assert.equal(report.protocolVersion, SESSION);
  const init = report.wire.find((w) => w.rpc === 'initialize');
  assert.equal(init.status, 200, explain(init));
  assert.equal(init.sessionId, report.sessionId, 'the page read Mcp-Session-Id from the initialize answer');
  // Every later request carries it (the server read it back cross-origin).
  const later = report.wire.slice(report.wire.indexOf(init) + 1);
  assert.ok(later.length > 0);
  for (const w of later) assert.ok(w.sent.includes('mcp-session-id'), explain(w));
  // The call paused for the form and came back on the session's GET with
  // Last-Event-ID (SSE polling): a cross-origin GET the browser preflights.
  const resumed = report.wire.filter((w) => w.method === 'GET' && w.lastEventId);
  assert.ok(resumed.length >= 1, `a GET resumed the paused call: ${explain(report.wire)}`);
  for (const w of resumed) assert.equal(w.status, 200, explain(w));
  // Ended with DELETE.
  assert.deepEqual(report.wire.filter((w) => w.method === 'DELETE').map((w) => w.status), [204]);
  assert.equal(report.sessionIdAfter, null);
}

/** A page from an origin not allowed: its very first request never reaches the client. */
function assertRefused(run) {
  const { report, consoleLog, preflights } = run;
  assert.equal(report.failed?.step, 'connect', explain(run));
  // v1 and v2 surface the browser's TypeError; v2 pinned reports its probe
  // failing as a negotiation failure (the wire below shows the TypeError).
  assert.match(report.failed.error, /Failed to fetch|TypeError|Version negotiation failed/, explain(run));
  assert.equal(report.result, undefined);
  assert.equal(report.sessionId, undefined);
  assert.deepEqual(report.elicited, []);
  assert.ok(report.wire.length >= 1, explain(run));
  for (const w of report.wire) {
    assert.equal(w.status, undefined, `the page read no answer: ${explain(w)}`);
    assert.match(w.error ?? '', /TypeError/, explain(w));
  }
  // The browser says why: CORS, at the preflight.
  assert.ok(consoleLog.some((l) => l.includes('blocked by CORS policy') && l.includes(refused.origin)),
    `a CORS refusal was logged: ${explain(consoleLog)}`);
  assert.ok(preflights.length >= 1, explain(run));
  for (const p of preflights) {
    assert.equal(p.status, 403, `preflight ${explain(p)}`);
    assert.deepEqual(corsHeaders(p.headers), [], explain(p));
  }
}

describe('CORS on the wire', () => {
  test('a preflight from the allowed origin is answered with what a browser client needs', async () => {
    const r = await raw(server.url, {
      method: 'OPTIONS',
      headers: {
        origin: allowed.origin,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type,mcp-protocol-version,mcp-session-id',
      },
    });
    assert.equal(r.status, 204, shown(r));
    assert.equal(r.headers['access-control-allow-origin'], allowed.origin, shown(r));
    const methods = list(r.headers['access-control-allow-methods']);
    for (const m of ['get', 'post', 'delete', 'options']) assert.ok(methods.includes(m), `${m}: ${shown(r)}`);
    const headers = list(r.headers['access-control-allow-headers']);
    for (const h of REQUEST_HEADERS) assert.ok(headers.includes(h), `${h}: ${shown(r)}`);
    assert.match(r.headers['access-control-max-age'] ?? '', /^[1-9][0-9]*$/, shown(r));
    assert.ok(list(r.headers.vary).includes('origin'), shown(r));
    assert.equal(r.headers['access-control-allow-credentials'], undefined, shown(r));
  });

  test('every other answer to the allowed origin carries the origin and exposes the MCP headers', async () => {
    // An error (a parse error) and a success (initialize: the session id).
    const bad = await raw(server.url, { headers: { origin: allowed.origin, 'content-type': 'application/json' }, body: '{' });
    const init = await raw(server.url, {
      headers: { origin: allowed.origin, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize',
        params: { protocolVersion: SESSION, capabilities: {}, clientInfo: { name: 'browser-e2e-raw', version: '0' } } }),
    });
    assert.equal(bad.status, 400, shown(bad));
    assert.equal(init.status, 200, shown(init));
    assert.ok(init.headers['mcp-session-id'], shown(init));
    for (const r of [bad, init]) {
      assert.equal(r.headers['access-control-allow-origin'], allowed.origin, shown(r));
      const exposed = list(r.headers['access-control-expose-headers']);
      for (const h of EXPOSED) assert.ok(exposed.includes(h), `${h}: ${shown(r)}`);
      assert.ok(list(r.headers.vary).includes('origin'), shown(r));
    }
  });

  test('an origin not allowed gets 403 and no CORS headers, preflight or not', async () => {
    const pre = await raw(server.url, {
      method: 'OPTIONS',
      headers: { origin: refused.origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
    });
    assert.equal(pre.status, 403, shown(pre));
    assert.deepEqual(corsHeaders(pre.headers), [], shown(pre));
    const post = await raw(server.url, {
      headers: { origin: refused.origin, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    assert.equal(post.status, 403, shown(post));
    assert.deepEqual(corsHeaders(post.headers), [], shown(post));
  });
});

describe('the allowed origin, in a browser', () => {
  test('v1 SDK: connects on the 2025-11-25 session wire, lists tools, answers the paused call\'s form, reads the session id', { timeout: 90_000 }, async () => {
    const f = form('v1');
    const run = await runPage(allowed.origin, 'v1', f);
    assertFormAnswered(run, f);
    assertSession(run);
    assertNothingRefused(run);
    assert.equal(run.report.serverName, 'durable-mcp');
    assert.deepEqual(run.report.errors, [], explain(run));
  });

  test('v2 client as it comes (its default, the 2025-11-25 session wire): the same', { timeout: 90_000 }, async () => {
    const f = form('v2');
    const run = await runPage(allowed.origin, 'v2', f);
    assertFormAnswered(run, f);
    assert.equal(run.report.era, 'legacy');
    assert.equal(run.report.negotiated, SESSION);
    assertSession(run);
    assertNothingRefused(run);
    assert.equal(run.report.serverName, 'durable-mcp');
    assert.deepEqual(run.report.errors, [], explain(run));
  });

  test(`v2 client pinned to ${MODERN}: discovers, answers the form through the retried call, and sends a tool's Mcp-Param-* header`, { timeout: 90_000 }, async () => {
    const f = form('v2-modern');
    const region = 'eu-west-1';
    const custom = { name: 'test_custom_header', arguments: { region } };
    const run = await runPage(allowed.origin, 'v2', {
      ...f,
      pin: MODERN,
      // v2 2.4.0 mirrors x-mcp-header arguments into Mcp-Param-* only outside
      // browsers (its callTool: mirroringActive is false when window and
      // document exist), and the server must refuse a call whose mirrored
      // header is missing (SEP-2243): so first as the SDK sends it, then
      // with the header set by the page, as a browser app has to.
      extraCalls: [custom, { ...custom, headers: { 'Mcp-Param-Region': region } }],
    });
    assertFormAnswered(run, f);
    const { report } = run;
    assert.equal(report.era, 'modern');
    assert.equal(report.negotiated, MODERN);
    assert.equal(report.sessionId, null, 'no session on the modern wire');
    assert.equal(report.wire[0].rpc, 'server/discover', explain(report.wire));
    for (const w of report.wire.filter((x) => x.method === 'POST')) {
      for (const h of ['mcp-method', 'mcp-protocol-version']) assert.ok(w.sent.includes(h), `${h}: ${explain(w)}`);
    }
    // The paused call: answered by retrying tools/call with the form's answer.
    const calls = report.wire.filter((w) => w.rpc === 'tools/call');
    assert.equal(calls.length, 4, `two rounds of the form call, then the header calls: ${explain(report.wire)}`);
    for (const w of calls) assert.ok(w.sent.includes('mcp-name'), explain(w));
    // Without the header: the server's refusal reached the page (a 400 it could read).
    const [bare, mirrored] = report.extra;
    assert.equal(calls[2].status, 400, explain(calls[2]));
    assert.ok(!calls[2].sent.includes('mcp-param-region'), explain(calls[2]));
    assert.equal(bare.code, -32020, explain(bare));
    assert.match(bare.error, /Mcp-Param-Region/, explain(bare));
    // With it: the header went cross-origin (preflighted), and the tool ran.
    assert.ok(calls[3].sent.includes('mcp-param-region'), explain(calls[3]));
    assert.equal(calls[3].status, 200, explain(calls[3]));
    assert.deepEqual(mirrored.result?.content, [{ type: 'text', text: `Region: ${region}` }], explain(mirrored));
    assertNothingRefused(run);
    assert.ok(run.preflights.some((p) => list(p.headers['access-control-allow-headers']).includes('mcp-param-region')),
      explain(run.preflights));
    assert.deepEqual(report.errors, [], explain(run));
  });
});

describe('an origin not allowed, in a browser', () => {
  for (const [client, opts] of [['v1', {}], ['v2', {}], ['v2', { pin: MODERN }]]) {
    const name = `${client}${opts.pin ? ` pinned to ${opts.pin}` : ''}`;
    test(`${name}: the browser refuses the connection at the preflight; no tool runs`, { timeout: 60_000 }, async () => {
      const f = form(`refused-${client}`);
      const run = await runPage(refused.origin, client, { ...f, ...opts });
      assertRefused(run);
      assert.deepEqual(run.report.steps, []);
    });
  }
});
