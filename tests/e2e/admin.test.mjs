// Operating paused calls (issue 33) against `wrangler dev`: 30 calls
// paused across the wires (20 durable 2026-07-28 calls, 10 calls on five
// 2025-11-25 sessions) and 5 tasks, by two users (API_TOKENS); then the
// `durable-mcp admin` CLI lists them (statuses, tools, ages, counts that add
// up), shows one's history with its answers hidden, cancels two (each
// client gets -32800), pauses and resumes a tool (new calls 503, a paused
// call parks and goes on after), exports for the deploy check (answers
// sealed; the native check opens them with STATE_KEYS and every call
// continues); the credential rules (404 without, 404 for a user's token);
// the console in headless Chromium (a screenshot; escaping, headers, a
// cancel through its form, a forged post refused); and the round log lines
// in wrangler's output (one trace per call, no token or answer in them).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import puppeteer from 'puppeteer-core';
import { startServer, VIA } from './server.mjs';
import { callTool } from './webhook.mjs';
import { modernMeta, send } from './modern.mjs';
import { parseSse } from './sse.mjs';
import { everything } from './persisted.mjs';
import { CLI, runCli } from './cli.mjs';

const ROOT = resolve(import.meta.dirname, '../..');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SESSION = '2025-11-25';
const TASKS = { elicitation: { form: {} }, extensions: { 'io.modelcontextprotocol/tasks': {} } };
const ADMIN_TOKEN = 'admin-e2e-7f3c9a1d5b2e8f4a6c0d';
const ALICE = 'alice-e2e-4b8d2f6a0c9e1d3f5a7b';
const BOB = 'bob-e2e-9e1c3a5d7f2b4c6e8a0d';
/** An answer value the admin surfaces must never show (the tool shows none). */
const HIDDEN = 'production';
const TIMEOUT_MS = 20_000;

const STATE_KEYS = readFileSync(join(ROOT, '.dev.vars'), 'utf8').split('\n')
  .find((l) => l.startsWith('STATE_KEYS='))?.slice('STATE_KEYS='.length).trim();

let server;
let browser;

before(async () => {
  assert.ok(existsSync(CLI), `no CLI at ${CLI}: cargo build -p durable-mcp-client`);
  assert.ok(existsSync(CHROMIUM), `no Chromium at ${CHROMIUM}: run scripts/setup.sh`);
  server = await startServer({
    vars: { ADMIN_TOKENS: `ops:${ADMIN_TOKEN}`, API_TOKENS: `alice:${ALICE},bob:${BOB}` },
  });
  browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-quic'],
    protocolTimeout: 60_000,
  });
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

const bearer = (t) => ({ authorization: `Bearer ${t}` });
const origin = () => new URL(server.url).origin;

/** The CLI's `admin` command against the server, with the admin token from the environment. */
async function admin(args, env = {}) {
  const r = spawnSync(CLI, ['admin', server.url, ...args], {
    encoding: 'utf8', timeout: 60_000,
    env: { ...process.env, DURABLE_MCP_ADMIN_TOKEN: ADMIN_TOKEN, DURABLE_MCP_NO_BROWSER: '1', ...env },
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

async function adminJson(args) {
  const r = await admin([...args, '--json']);
  assert.equal(r.status, 0, `${args.join(' ')}: ${r.stderr}${r.stdout}`);
  return JSON.parse(r.stdout);
}

/** A durable deploy call paused at its target form; `answer` takes it to the safety question. */
async function durableCall(token, service, answer) {
  const r1 = await callTool(server.url, 'deploy', { service }, {}, { headers: bearer(token) });
  assert.equal(r1.json?.result?.resultType, 'input_required', r1.text);
  if (!answer) return { service, token, state: r1.json.result.requestState };
  const r2 = await callTool(server.url, 'deploy', { service },
    { requestState: r1.json.result.requestState, inputResponses: { target: { action: 'accept', content: { target: HIDDEN } } } },
    { headers: bearer(token), id: 2 });
  assert.deepEqual(Object.keys(r2.json?.result?.inputRequests ?? {}), ['safety'], r2.text);
  return { service, token, state: r2.json.result.requestState };
}

async function sessionPost(token, sid, body) {
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...bearer(token) };
  if (sid) Object.assign(headers, { 'mcp-session-id': sid, 'mcp-protocol-version': SESSION });
  const r = await fetch(server.url, { method: 'POST', headers, body: JSON.stringify(body), signal: AbortSignal.timeout(TIMEOUT_MS) });
  const text = await r.text();
  return { status: r.status, text, sid: r.headers.get('mcp-session-id'), events: (r.headers.get('content-type') ?? '').startsWith('text/event-stream') ? parseSse(text) : [] };
}

/** A session with two deploy calls paused at their target forms. */
async function sessionCalls(token, n) {
  const init = await sessionPost(token, null, { jsonrpc: '2.0', id: 0, method: 'initialize',
    params: { protocolVersion: SESSION, capabilities: { elicitation: {}, sampling: {} }, clientInfo: { name: 'admin-e2e', version: '1' } } });
  assert.equal(init.status, 200, init.text);
  const sid = init.sid;
  await sessionPost(token, sid, { jsonrpc: '2.0', method: 'notifications/initialized' });
  for (let i = 0; i < n; i++) {
    const r = await sessionPost(token, sid, { jsonrpc: '2.0', id: 10 + i, method: 'tools/call', params: { name: 'deploy', arguments: { service: `s${i}` } } });
    assert.ok(r.events.some((e) => e.message?.method === 'elicitation/create'), r.text);
  }
  return sid;
}

async function task(token, filename) {
  const created = await send(server.url, 'tools/call', { name: 'confirm_delete', arguments: { filename }, _meta: modernMeta(TASKS) },
    { headers: bearer(token) });
  assert.equal(created.json?.result?.resultType, 'task', created.text);
  const { taskId } = created.json.result;
  const deadline = Date.now() + 30_000;
  for (;;) {
    const r = await send(server.url, 'tasks/get', { taskId, _meta: modernMeta(TASKS) }, { headers: { 'mcp-name': taskId, ...bearer(token) } });
    if (r.json?.result?.status === 'input_required') return taskId;
    assert.ok(Date.now() < deadline, `task stuck: ${r.text}`);
    await new Promise((ok) => setTimeout(ok, 200));
  }
}

const calls = {};

test(`30 paused calls and 5 tasks, listed, shown, cancelled, paused and exported (${VIA})`, { timeout: 10 * 60_000 }, async () => {
  // --- The calls: 20 durable (half answered once), 5 sessions × 2, 5 tasks.
  calls.durable = [];
  for (let i = 0; i < 20; i++) calls.durable.push(await durableCall(i % 2 ? BOB : ALICE, `svc${i}`, i < 5));
  calls.sessions = [];
  for (let i = 0; i < 5; i++) calls.sessions.push(await sessionCalls(i % 2 ? BOB : ALICE, 2));
  calls.tasks = [];
  for (let i = 0; i < 5; i++) calls.tasks.push(await task(ALICE, `f${i}.txt`));

  // --- list
  const l = await adminJson(['calls', 'list']);
  assert.equal(l.counts.total, 35, JSON.stringify(l.counts));
  assert.equal(l.counts.byStatus.waiting, 35, JSON.stringify(l.counts));
  assert.equal(Object.values(l.counts.byStatus).reduce((a, b) => a + b, 0), 35, 'the counts add up');
  assert.deepEqual(l.counts.byTool, { confirm_delete: 5, deploy: 30 });
  assert.equal(l.calls.length, 35);
  const kinds = l.calls.reduce((m, c) => ({ ...m, [c.kind]: (m[c.kind] ?? 0) + 1 }), {});
  assert.deepEqual(kinds, { durable: 20, session: 10, task: 5 });
  for (const c of l.calls) {
    assert.ok(['alice', 'bob'].includes(c.principal), JSON.stringify(c));
    assert.ok(l.nowMs - c.updatedMs >= 0 && l.nowMs - c.updatedMs < 10 * 60_000, JSON.stringify(c));
  }
  const alice = await adminJson(['calls', 'list', '--principal', 'alice']);
  assert.equal(alice.matched, 10 + 6 + 5, 'alice: 10 durable, 3 sessions × 2, 5 tasks');
  // The table a person reads.
  const table = await admin(['calls', 'list']);
  assert.equal(table.status, 0, table.stderr);
  assert.match(table.stdout, /ID\s+KIND\s+TOOL\s+STATUS/);
  assert.match(table.stdout, /35 calls: 35 waiting/);
  // No session or task id (bearer capabilities) anywhere in a listing.
  const listed = JSON.stringify(l);
  for (const id of [...calls.sessions, ...calls.tasks]) assert.ok(!listed.includes(id), `${id} listed`);

  // --- show: the history, the answer hidden.
  const answered = l.calls.find((c) => c.kind === 'durable' && c.round === 2);
  assert.ok(answered, 'a durable call answered once');
  const shown = await admin(['calls', 'show', answered.id]);
  assert.equal(shown.status, 0, shown.stderr);
  assert.match(shown.stdout, /\[hidden\]/);
  assert.ok(!shown.stdout.includes(HIDDEN), shown.stdout);
  const detail = await adminJson(['calls', 'show', answered.id]);
  assert.equal(detail.rounds.length, 2, JSON.stringify(detail));
  assert.deepEqual(detail.pending.map((p) => p.method), ['sampling/createMessage']);
  assert.equal(detail.answers[0].key, 'target');
  assert.equal(detail.answers[0].value, '[hidden]');

  // --- answer a call's question for its client, then ask it again (the CLI).
  const claimsOf = (state) => JSON.parse(Buffer.from(state.split('.')[1], 'base64url').toString('utf8'));
  const helped = `d.${claimsOf(calls.durable[6].state).sid}`;
  const given = await admin(['calls', 'answer', helped, 'target', '{"action":"accept","content":{"target":"staging"}}']);
  assert.equal(given.status, 0, given.stderr + given.stdout);
  assert.match(given.stdout, /answered d\./);
  const helpedShown = await adminJson(['calls', 'show', helped]);
  assert.equal(helpedShown.answers[0].by, 'operator:ops', JSON.stringify(helpedShown));
  const rewound = await admin(['calls', 'rewind', helped, 'target']);
  assert.equal(rewound.status, 0, rewound.stderr + rewound.stdout);
  const told = await admin(['calls', 'show', helped]);
  assert.match(told.stdout, /operators\n.*answered "target" \(operator:ops\)\n.*asked again from "target"/);
  const bad = await admin(['calls', 'answer', helped, 'target']);
  assert.notEqual(bad.status, 0, 'an answer is named');

  // --- cancel two: a durable call and a session's call.
 (state) => JSON.parse(Buffer.from(state.split('.')[1], 'base64url').toString('utf8'));
  const victim = calls.durable.find((c, i) => i >= 5 && c.token === BOB);
  const dId = `d.${claimsOf(victim.state).sid}`;
  assert.ok(l.calls.some((c) => c.id === dId), `${dId} is listed`);
  const sCall = l.calls.find((c) => c.kind === 'session' && c.principal === 'bob');
  const cancel = await admin(['calls', 'cancel', dId, sCall.id]);
  assert.equal(cancel.status, 0, cancel.stderr + cancel.stdout);
  const after = await adminJson(['calls', 'list', '--status', 'cancelled']);
  assert.deepEqual(after.calls.map((c) => c.id).sort(), [dId, sCall.id].sort());
  // The durable call's client: -32800 when it comes back.
  const back = await callTool(server.url, 'deploy', { service: victim.service },
    { requestState: victim.state, inputResponses: { target: { action: 'accept', content: { target: 'staging' } } } },
    { headers: bearer(BOB), id: 3 });
  assert.equal(back.json?.error?.code, -32800, back.text);
  assert.match(back.json.error.message, /operator/);
  // The session's client reads the error on its call's stream.
  let streamed = false;
  for (const sid of calls.sessions) {
    for (const stream of ['c1', 'c2']) {
      const r = await fetch(server.url, { headers: { accept: 'text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': SESSION, 'last-event-id': `${stream}:0`, ...bearer(BOB) }, signal: AbortSignal.timeout(TIMEOUT_MS) });
      if (r.status !== 200) continue;
      const events = parseSse(await r.text());
      if (events.some((e) => e.message?.error?.code === -32800)) streamed = true;
    }
  }
  assert.ok(streamed, 'a session stream carries the -32800 error');

  // --- pause a tool: new calls refused (503, retryable); a paused call parks; resume.
  const paused = await admin(['tools', 'pause', 'deploy']);
  assert.equal(paused.status, 0, paused.stderr);
  const fresh = await callTool(server.url, 'deploy', { service: 'new' }, {}, { headers: bearer(ALICE) });
  assert.equal(fresh.status, 503, fresh.text);
  assert.equal(fresh.json.error.code, -32603);
  assert.match(fresh.json.error.message, /"deploy" is paused/);
  const waiting = calls.durable[19];
  const next = { requestState: waiting.state, inputResponses: { target: { action: 'accept', content: { target: 'staging' } } } };
  const held = await callTool(server.url, 'deploy', { service: waiting.service }, next, { headers: bearer(waiting.token), id: 4 });
  assert.equal(held.status, 503, held.text);
  const parked = await adminJson(['calls', 'list', '--status', 'parked']);
  assert.equal(parked.matched, 1, JSON.stringify(parked));
  assert.deepEqual(parked.pausedTools, ['deploy']);
  assert.equal((await admin(['tools', 'resume', 'deploy'])).status, 0);
  const resumed = await callTool(server.url, 'deploy', { service: waiting.service }, next, { headers: bearer(waiting.token), id: 5 });
  assert.deepEqual(Object.keys(resumed.json?.result?.inputRequests ?? {}), ['safety'], resumed.text);

  // --- export, then the deploy check on the same code.
  const out = join(server.persistTo, 'exported.json');
  const exp = await admin(['calls', 'export', '--out', out]);
  assert.equal(exp.status, 0, exp.stderr);
  const text = readFileSync(out, 'utf8');
  assert.ok(!text.includes(HIDDEN), 'answers are sealed in the export');
  for (const t of [ADMIN_TOKEN, ALICE, BOB, ...calls.sessions, ...calls.tasks]) assert.ok(!text.includes(t));
  const exported = JSON.parse(text);
  assert.equal(exported.length, 33, `35 less the two cancelled: ${exported.map((c) => c.id)}`);
  assert.ok(exported.some((c) => c.sealed_answers), 'sealed answers');
  const check = spawnSync('cargo', ['test', '-p', 'fixtures-worker', '--test', 'server', '--', 'deploy_check', '--nocapture'], {
    cwd: ROOT, encoding: 'utf8', timeout: 10 * 60_000, env: { ...process.env, DEPLOY_CHECK: out, STATE_KEYS },
  });
  const log = `${check.stdout}\n${check.stderr}`;
  assert.equal(check.status, 0, log.slice(-4000));
  assert.equal(log.split('\n').filter((l) => l.startsWith('deploy-check ')).length, 33, log.slice(-4000));

  // --- credentials: none, a user's, a wrong one: not there.
  for (const headers of [{}, bearer(ALICE), bearer('wrong')]) {
    for (const path of ['/admin/api/calls', '/admin', '/admin/api/export']) {
      // After the check's long pause a kept-alive connection may be closed
      // under the client: a request that never reached the server is sent again.
      const once = () => fetch(origin() + path, { headers, signal: AbortSignal.timeout(TIMEOUT_MS) });
      const r = await once().catch(() => once());
      assert.equal(r.status, 404, `${path} ${JSON.stringify(headers)}`);
    }
  }
  const noToken = await admin(['calls', 'list'], { DURABLE_MCP_ADMIN_TOKEN: 'wrong' });
  assert.equal(noToken.status, 2);
  assert.match(noToken.stderr, /no admin API/);
});

test(`the console in Chromium: the same data, escaped, its forms guarded (${VIA})`, { timeout: 5 * 60_000 }, async () => {
  // A call whose argument is markup.
  const evil = '<img src=x onerror="window.__owned=1">';
  const r = await callTool(server.url, 'deploy', { service: evil }, {}, { headers: bearer(ALICE) });
  assert.equal(r.json?.result?.resultType, 'input_required', r.text);
  const link = await fetch(`${origin()}/admin/api/console`, { method: 'POST', headers: bearer(ADMIN_TOKEN) }).then((x) => x.json());
  assert.match(link.link, /^\/admin\/enter\?pass=/);
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  const landed = await page.goto(origin() + link.link, { waitUntil: 'load' });
  assert.equal(new URL(page.url()).pathname, '/admin');
  const h = landed.headers();
  assert.match(h['content-security-policy'], /frame-ancestors 'none'/);
  assert.equal(h['x-frame-options'], 'DENY');
  const body = await page.evaluate(() => document.body.innerText);
  assert.match(body, /deploy/);
  assert.match(body, /confirm_delete/);
  // The same data as the API: the cards' counts.
  const api = await fetch(`${origin()}/admin/api/calls`, { headers: bearer(ADMIN_TOKEN) }).then((x) => x.json());
  const cards = await page.evaluate(() => [...document.querySelectorAll('.card')].map((c) => c.innerText.replace(/\s+/g, ' ').trim()));
  assert.ok(cards.includes(`${api.counts.total} total`), `${cards} vs ${api.counts.total}`);
  for (const [status, n] of Object.entries(api.counts.byStatus)) {
    assert.ok(cards.some((c) => c.startsWith(`${n} `) && c.includes(status)), `${status}: ${n} in ${cards}`);
  }
  // The same credential rules: a browser without the cookie finds nothing.
  const stranger = await browser.createBrowserContext();
  const nobody = await (await stranger.newPage()).goto(`${origin()}/admin`);
  assert.equal(nobody.status(), 404);
  await stranger.close();
  const shot = join(server.persistTo, 'admin-console.png');
  await page.screenshot({ path: shot, fullPage: true });
  assert.ok(statSync(shot).size > 5_000, 'a screenshot');
  // The evil call's page: its argument is text, never markup.
  const list = await fetch(`${origin()}/admin/api/calls?limit=500`, { headers: bearer(ADMIN_TOKEN) }).then((x) => x.json());
  const target = list.calls.find((c) => c.updatedMs === Math.max(...list.calls.filter((x) => x.kind === 'durable' && x.status === 'waiting').map((x) => x.updatedMs)));
  await page.goto(`${origin()}/admin/calls/${encodeURIComponent(target.id)}`, { waitUntil: 'load' });
  const owned = await page.evaluate(() => [window.__owned === undefined, document.querySelectorAll('img').length]);
  assert.deepEqual(owned, [true, 0]);
  assert.ok((await page.evaluate(() => document.body.innerText)).includes(evil));
  await page.screenshot({ path: join(server.persistTo, 'admin-call.png'), fullPage: true });
  // A forged post from another origin, with the browser's cookie: refused.
  const cookies = await context.cookies();
  const cookie = cookies.map((c) => `${c.name}=${c.value}`).join('; ');
  const forged = await fetch(`${origin()}/admin/calls/${encodeURIComponent(target.id)}/cancel`, {
    method: 'POST', redirect: 'manual',
    headers: { cookie, origin: 'https://evil.example', 'content-type': 'application/x-www-form-urlencoded' }, body: 'csrf=x',
  });
  assert.equal(forged.status, 403);
  // The page's own Cancel button.
  await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click('form[action$="/cancel"] button')]);
  const d = await fetch(`${origin()}/admin/api/calls/${encodeURIComponent(target.id)}`, { headers: bearer(ADMIN_TOKEN) }).then((x) => x.json());
  assert.equal(d.status, 'cancelled', JSON.stringify(d));
  await context.close();
});

test(`round logs and spans in wrangler's output; nothing secret kept (${VIA})`, () => {
  const lines = readFileSync(server.logPath, 'utf8').split('\n');
  const rounds = lines.filter((l) => l.includes('"event":"mcp.round"')).map((l) => JSON.parse(l.slice(l.indexOf('{'))));
  assert.ok(rounds.length >= 35, `round lines: ${rounds.length}`);
  const spans = lines.filter((l) => l.includes('"resourceSpans"'));
  assert.ok(spans.length >= 35, `span lines: ${spans.length}`);
  // The answered durable calls: each has two round lines on one trace.
  const byCall = rounds.filter((r) => r.wire === 'mrtr').reduce((m, r) => ({ ...m, [r.callId]: [...(m[r.callId] ?? []), r] }), {});
  const multi = Object.values(byCall).filter((rs) => rs.length >= 2);
  assert.ok(multi.length >= 5, `calls with two rounds: ${multi.length}`);
  for (const rs of multi) assert.equal(new Set(rs.map((r) => r.traceId)).size, 1, JSON.stringify(rs));
  for (const l of [...lines.filter((l) => l.includes('mcp.round') || l.includes('resourceSpans'))]) {
    for (const s of [ADMIN_TOKEN, ALICE, BOB, HIDDEN, '"alice"', '"bob"']) assert.ok(!l.includes(s), `${s} in ${l.slice(0, 200)}`);
  }
  // Storage: no token of any kind (the wrangler log, which echoes the
  // command line's --var values, is not storage).
  const files = everything(server.persistTo).filter(([p]) => !p.endsWith('.log'));
  assert.ok(files.some(([p]) => p.endsWith('.sqlite')), 'objects were stored');
  for (const [p, text] of files) {
    for (const s of [ADMIN_TOKEN, ALICE, BOB]) assert.ok(!text.includes(s), `a token in ${p}`);
  }
  writeFileSync(join(server.persistTo, 'rounds.json'), JSON.stringify(rounds.slice(0, 5), null, 2));
});
