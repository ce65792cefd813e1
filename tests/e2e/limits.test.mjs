// Limits per principal and per tool (issue 45) against `wrangler dev` (and,
// through the twin, plain `workerd serve`), with two API-token principals
// (ada, the one pushed to her limits, and bob) under one LIMITS document:
// - each kind trips exactly at its number: a tool's rate (3 new calls per
//   12 h window), a tool's daily quota (2), the calls a principal holds
//   paused (2: a durable call and a 2025-11-25 session call of the
//   official SDK client), the rounds she runs at once (1: while a round
//   runs, a new call and a paused call's next round are refused);
//   each refusal is HTTP 429 with Retry-After, JSON-RPC -32013 and the
//   limit named in error.data; the refused call stored nothing (the
//   operator's listing does not grow) and ran no effect (the ticket
//   webhook);
// - the paused calls of the limited principal still complete, bob is
//   never refused meanwhile (his own counts), a paused call's next round
//   is no new call (the rate's count does not move);
// - an operator reads the counts (GET /admin/api/limits[/<p>]) and raises
//   a principal's limit at run time (POST /admin/api/limits/<p>);
// - a restart with the same --persist-to keeps every count (held, rate,
//   daily still refuse);
// - a task over its rate is not refused: `working`, "Waiting for a limit",
//   and it runs when its window opens (the server restarted meanwhile);
// - once every call has ended, every principal's held and active counts
//   are zero again; each refusal wrote one log line (the limit, the
//   principal as a digest, no token);
// - a call ended without a round frees its place at once: a task cancelled
//   by its client or an operator, a durable call an operator cancels, a
//   session call an operator or its client cancels, a session its client
//   deletes.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { startServer, VIA } from './server.mjs';
import { freshPersistDir } from './wrangler.mjs';
import { modernMeta, send } from './modern.mjs';

const ADA = 'ada-e2e-limits-3c7a9e1f5b2d8a4c';
const BOB = 'bob-e2e-limits-8f2b6d0a4e9c1b7d';
const OPS = 'ops-e2e-limits-5d1e7b3f9a0c6e2a';
const HALF_DAY = 12 * 3600_000;
const DAY = 24 * 3600_000;
const TASK_WINDOW = 5_000;
const LIMITS = {
  all: { held: 2, active: 1 },
  tools: {
    file_change: { rate: '3/12h' },
    release: { daily: 2 },
    slow_compute: { rate: '1/5s' },
  },
};
/** Services whose ticket the webhook holds back: a round that runs a while. */
const SLOW_MS = 2_500;
const TASKS = { elicitation: { form: {} }, extensions: { 'io.modelcontextprotocol/tasks': {} } };
const TARGET = { target: { action: 'accept', content: { target: 'staging' } } };
const SAFE = { safety: { role: 'assistant', content: { type: 'text', text: 'yes' }, model: 'e2e-model' } };

let hook;
let server;
let persistTo;
let vars;
const sdkClients = [];
/** The logs of the servers stopped (each restart's). */
const logs = [];

const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));

/** The ticket webhook (TICKET_WEBHOOK): counts each deploy's effect by service; holds back `slow-*` ones. */
async function startHook() {
  const hits = [];
  const s = createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (c) => { raw += c; });
    req.on('end', () => {
      let body;
      try { body = JSON.parse(raw); } catch { body = {}; }
      hits.push(body.service);
      setTimeout(() => {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ ticket: `T-${hits.length}` }));
      }, String(body.service).startsWith('slow-') ? SLOW_MS : 0);
    });
  });
  await new Promise((ok) => s.listen(0, '127.0.0.1', ok));
  return {
    url: `http://127.0.0.1:${s.address().port}/ticket`,
    count: (service) => hits.filter((h) => h === service).length,
    stop: () => { s.closeAllConnections?.(); return new Promise((ok) => s.close(ok)); },
  };
}

before(async () => {
  hook = await startHook();
  persistTo = freshPersistDir();
  vars = {
    API_TOKENS: `ada:${ADA},bob:${BOB}`,
    ADMIN_TOKENS: `ops:${OPS}`,
    TICKET_WEBHOOK: hook.url,
    LIMITS: JSON.stringify(LIMITS),
  };
  server = await startServer({ persistTo, vars });
});

after(async () => {
  for (const c of sdkClients) await c.close().catch(() => {});
  await server?.stop();
  await hook?.stop();
});

const bearer = (token) => ({ authorization: `Bearer ${token}` });

/** A 2026-07-28 tools/call as `token`: status, headers, json, text. */
function call(token, name, args, extra = {}, id = 1) {
  return send(server.url, 'tools/call', { name, arguments: args, ...extra }, { headers: bearer(token), id });
}

async function adminApi(method, path, body) {
  const r = await fetch(new URL(server.url).origin + path, {
    method,
    headers: { ...bearer(OPS), 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  let json;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: r.status, json, text };
}

/** How many calls the server keeps (any status, any principal): a refused call adds none. */
async function kept() {
  const r = await adminApi('GET', '/admin/api/calls?limit=500');
  assert.equal(r.status, 200, r.text);
  return r.json.counts.total;
}

/** `who`'s usage as an operator reads it. */
async function usage(who) {
  const r = await adminApi('GET', `/admin/api/limits/${who}`);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.principals.length, 1, r.text);
  assert.equal(r.json.principals[0].principal, who, r.text);
  return r.json.principals[0];
}

/** Polls `who`'s usage until `want` holds of it (`ms`, 10 s, at most). */
async function usageUntil(who, want, what, ms = 10_000) {
  let u;
  for (const deadline = Date.now() + ms; ;) {
    u = await usage(who);
    if (want(u)) return u;
    assert.ok(Date.now() < deadline, `${what}: ${JSON.stringify(u)}`);
    await sleep(100);
  }
}

/**
 * A refusal: 429, Retry-After equal to error.data.retryAfter, -32013 and
 * what error.data says of the limit; no result.
 */
function assertRefused(r, want) {
  assert.equal(r.status, 429, r.text);
  assert.equal(r.json?.error?.code, -32013, r.text);
  assert.equal(r.json.result, undefined, r.text);
  const d = r.json.error.data;
  for (const [k, v] of Object.entries(want)) assert.deepEqual(d?.[k], v, `data.${k}: ${r.text}`);
  const after = r.headers.get('retry-after');
  assert.match(after ?? '', /^[1-9][0-9]*$/, `Retry-After ${after}: ${r.text}`);
  assert.equal(Number(after), d.retryAfter, r.text);
  // retryAt is when retryAfter counts to (rounded up to a second).
  const left = d.retryAt - Date.now();
  assert.ok(left > (d.retryAfter - 2) * 1000 && left <= d.retryAfter * 1000 + 100, `retryAt ${d.retryAt} vs retryAfter ${d.retryAfter}: ${r.text}`);
  assert.match(r.json.error.message, new RegExp(`\\(the ${want.limit} limit\\)`), r.text);
  return d;
}

/** Waits, if need be, until `needMs` are left in the current fixed window of `periodMs`. */
async function clearOfWindowEnd(periodMs, needMs) {
  const left = periodMs - (Date.now() % periodMs);
  if (left < needMs) await sleep(left + 100);
}
const windowEnd = (periodMs, at = Date.now()) => at - (at % periodMs) + periodMs;

/** A deploy call by `token` paused at its last question (the safety sample). */
async function deployAtLastQuestion(token, service) {
  const r1 = await call(token, 'deploy', { service });
  assert.equal(r1.json?.result?.resultType, 'input_required', r1.text);
  const r2 = await call(token, 'deploy', { service }, { requestState: r1.json.result.requestState, inputResponses: TARGET }, 2);
  assert.deepEqual(Object.keys(r2.json?.result?.inputRequests ?? {}), ['safety'], r2.text);
  return { token, service, state: r2.json.result.requestState };
}
const lastRound = (c) => call(c.token, 'deploy', { service: c.service }, { requestState: c.state, inputResponses: SAFE }, 3);
/** A durable call's first question, declined: it ends without an effect. */
const decline = (token, name, args, state, key) =>
  call(token, name, args, { requestState: state, inputResponses: { [key]: { action: 'decline' } } }, 2);

/** The official v1 SDK client on a 2025-11-25 session, as `token`. */
async function sdkClient(token, onElicit) {
  const client = new Client({ name: 'limits-e2e', version: '1' }, { capabilities: { elicitation: {}, sampling: {} } });
  client.setRequestHandler(ElicitRequestSchema, onElicit ?? (async () => ({ action: 'accept', content: { target: 'staging' } })));
  client.setRequestHandler(CreateMessageRequestSchema, async () => (
    { role: 'assistant', model: 'e2e-model', content: { type: 'text', text: 'yes' }, stopReason: 'endTurn' }));
  const transport = new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: bearer(token) } });
  await client.connect(transport);
  sdkClients.push(client);
  return client;
}

// Calls the later tests finish.
const paused = { bob: null };
const rateWindow = { end: 0 };
const dayWindow = { end: 0 };

test(`a tool's rate trips at its number for one principal; a paused call's next round is no new call (${VIA})`, { timeout: 6 * 60_000 }, async () => {
  // The restart test reads these counts again: both windows must last till then.
  await clearOfWindowEnd(HALF_DAY, 4 * 60_000);
  rateWindow.end = windowEnd(HALF_DAY);
  dayWindow.end = windowEnd(DAY);
  // Each of ada's calls pauses (stored), then goes on to its end (declined:
  // nothing filed); their next rounds are no new calls.
  const start = await kept();
  for (let i = 0; i < 3; i++) {
    const r = await call(ADA, 'file_change', { system: `ada-${i}` });
    assert.equal(r.json?.result?.resultType, 'input_required', `call ${i + 1} of 3: ${r.text}`);
    const done = await decline(ADA, 'file_change', { system: `ada-${i}` }, r.json.result.requestState, 'reason');
    assert.equal(done.json?.result?.content?.[0]?.text, 'No change filed.', done.text);
  }
  const before = await kept();
  assert.equal(before, start + 3, 'each call taken is listed');
  const r = await call(ADA, 'file_change', { system: 'ada-3' });
  const d = assertRefused(r, { limit: 'rate', scope: 'tool', tool: 'file_change', max: 3, period: `${HALF_DAY / 1000}s` });
  assert.equal(d.retryAt, rateWindow.end, `the window ends at ${rateWindow.end}: ${r.text}`);
  assert.equal(await kept(), before, 'the refused call stored nothing');
  // bob has his own count.
  const bob = await call(BOB, 'file_change', { system: 'bob-0' });
  assert.equal(bob.json?.result?.resultType, 'input_required', bob.text);
  const doneBob = await decline(BOB, 'file_change', { system: 'bob-0' }, bob.json.result.requestState, 'reason');
  assert.equal(doneBob.json?.result?.content?.[0]?.text, 'No change filed.', doneBob.text);
  const u = await usage('ada');
  assert.equal(u.tools.file_change.rate, 3, JSON.stringify(u));
  assert.equal(u.tools.file_change.limits.rate, `3/${HALF_DAY / 1000}s`, JSON.stringify(u));
  assertRefused(await call(ADA, 'file_change', { system: 'ada-4' }), { limit: 'rate', scope: 'tool', max: 3 });
  assert.equal((await usage('bob')).tools.file_change.rate, 1);
});

test(`a tool's daily quota trips at its number; the other principal is not refused (${VIA})`, { timeout: 60_000 }, async () => {
  const start = await kept();
  for (let i = 0; i < 2; i++) {
    const r = await call(ADA, 'release', { build: `ada-${i}` });
    assert.equal(r.json?.result?.resultType, 'input_required', `call ${i + 1} of 2: ${r.text}`);
    const done = await decline(ADA, 'release', { build: `ada-${i}` }, r.json.result.requestState, 'confirm');
    assert.equal(done.json?.result?.content?.[0]?.text, `ada-${i} not released.`, done.text);
  }
  const before = await kept();
  assert.equal(before, start + 2, 'each call taken is listed');
  const r = await call(ADA, 'release', { build: 'ada-2' });
  const d = assertRefused(r, { limit: 'daily', scope: 'tool', tool: 'release', max: 2, period: null });
  assert.equal(d.retryAt, dayWindow.end, `the UTC day ends at ${dayWindow.end}: ${r.text}`);
  assert.equal(await kept(), before, 'the refused call stored nothing');
  const bob = await call(BOB, 'release', { build: 'bob-0' });
  assert.equal(bob.json?.result?.resultType, 'input_required', bob.text);
  const doneBob = await decline(BOB, 'release', { build: 'bob-0' }, bob.json.result.requestState, 'confirm');
  assert.equal(doneBob.json?.result?.content?.[0]?.text, 'bob-0 not released.', doneBob.text);
  const u = await usage('ada');
  assert.equal(u.tools.release.daily, 2, JSON.stringify(u));
  assert.equal(u.all.held, 0, `every call ada held has ended: ${JSON.stringify(u)}`);
  assertRefused(await call(ADA, 'release', { build: 'ada-3' }), { limit: 'daily', scope: 'tool', max: 2 });
});

const ada = {};

test(`calls held paused: the principal's third new call is refused, on every wire; her paused calls complete (${VIA})`, { timeout: 90_000 }, async () => {
  // One durable call at its last question, one session call (the official
  // SDK client) paused on its question until the test answers.
  ada.a = await deployAtLastQuestion(ADA, 'slow-ada-a');
  let answer;
  const gate = new Promise((ok) => { answer = ok; });
  let asked;
  const wasAsked = new Promise((ok) => { asked = ok; });
  const sdk = await sdkClient(ADA, async () => { asked(); await gate; return { action: 'accept', content: { target: 'staging' } }; });
  const session = sdk.callTool({ name: 'deploy', arguments: { service: 'ada-session' } }, undefined, { timeout: 60_000 });
  await wasAsked;
  let u = await usageUntil('ada', (x) => x.all.held === 2, 'two calls held');
  assert.equal(u.all.limits.held, 2, JSON.stringify(u));
  assert.equal(u.tools.deploy.held, 2, JSON.stringify(u));

  const before = await kept();
  const refused = await call(ADA, 'deploy', { service: 'ada-refused' });
  const d = assertRefused(refused, { limit: 'held', scope: 'principal', tool: 'deploy', max: 2, period: null });
  assert.equal(d.retryAfter, 10, refused.text);
  // Any new call of hers: a plain tool's too.
  assertRefused(await call(ADA, 'add', { a: 1, b: 2 }), { limit: 'held', scope: 'principal', tool: 'add', max: 2 });
  // And through the SDK on its session: the transport's error carries the 429 and the body.
  await assert.rejects(sdk.callTool({ name: 'deploy', arguments: { service: 'ada-refused' } }), (e) => {
    assert.equal(e.code, 429, e.message);
    assert.match(e.message, /-32013/);
    assert.match(e.message, /"limit":"held"/);
    return true;
  });
  assert.equal(await kept(), before, 'the refused calls stored nothing');
  assert.equal(hook.count('ada-refused'), 0);

  // bob is not refused: a paused call of his own, and an SDK call start to end.
  const bobCall = await call(BOB, 'deploy', { service: 'bob-held' });
  assert.equal(bobCall.json?.result?.resultType, 'input_required', bobCall.text);
  paused.bob = { state: bobCall.json.result.requestState };
  const bobSdk = await sdkClient(BOB);
  const bobDone = await bobSdk.callTool({ name: 'deploy', arguments: { service: 'bob-session' } }, undefined, { timeout: 30_000 });
  assert.match(bobDone.content?.[0]?.text ?? '', /^Deployed bob-session to staging/, JSON.stringify(bobDone));
  assert.equal(hook.count('bob-session'), 1);
  const added = await call(BOB, 'add', { a: 2, b: 3 });
  assert.equal(added.json?.result?.structuredContent?.sum, 5, added.text);
  assert.equal((await usage('bob')).all.held, 1);

  // An operator raises ada's limit at run time: a third call is held, a fourth refused.
  const raised = await adminApi('POST', '/admin/api/limits/ada', { all: { held: 3 } });
  assert.equal(raised.status, 200, raised.text);
  assert.equal(raised.json.principals[0].all.limits.held, 3, raised.text);
  assert.deepEqual(raised.json.principals[0].raised, { all: { held: 3 } }, raised.text);
  const beforeB = await kept();
  ada.b = await deployAtLastQuestion(ADA, 'ada-b');
  assert.equal(await kept(), beforeB + 1, 'a call taken is listed');
  assertRefused(await call(ADA, 'add', { a: 1, b: 2 }), { limit: 'held', scope: 'principal', max: 3 });
  assert.equal((await usage('bob')).all.limits.held, 2, 'raised for ada only');

  // Her session call goes on: answered, it completes, its effect once.
  answer();
  const done = await session;
  assert.match(done.content?.[0]?.text ?? '', /^Deployed ada-session to staging/, JSON.stringify(done));
  assert.equal(hook.count('ada-session'), 1);
  u = await usageUntil('ada', (x) => x.all.held === 2, 'the session call no longer held');
});

test(`rounds running at once: while one runs, a new call and a paused call's next round are refused, nothing runs (${VIA})`, { timeout: 60_000 }, async () => {
  assert.ok(ada.a && ada.b, 'the held test left two calls paused');
  // ada.a's last round runs its effect: the ticket webhook holds it back SLOW_MS.
  const running = lastRound(ada.a);
  await usageUntil('ada', (x) => x.all.active === 1, 'a round running');
  const before = await kept();
  // A new call of hers (held 2 < 3 raised): refused for the round running.
  const r = await call(ADA, 'add', { a: 1, b: 2 });
  const d = assertRefused(r, { limit: 'active', scope: 'principal', tool: 'add', max: 1, period: null });
  assert.equal(d.retryAfter, 1, r.text);
  // A paused call's next round, too: its effect does not run.
  const b = await lastRound(ada.b);
  assertRefused(b, { limit: 'active', scope: 'principal', tool: 'deploy', max: 1 });
  assert.equal(hook.count('ada-b'), 0, 'the refused round ran no effect');
  assert.equal(await kept(), before);
  // bob's rounds run meanwhile.
  const bobAdd = await call(BOB, 'add', { a: 2, b: 3 });
  assert.equal(bobAdd.status, 200, bobAdd.text);
  const done = await running;
  assert.match(done.json?.result?.content?.[0]?.text ?? '', /^Deployed slow-ada-a to staging/, done.text);
  assert.equal(hook.count('slow-ada-a'), 1);
  await usageUntil('ada', (x) => x.all.active === 0 && x.all.held === 1, 'the round ended, its call with it');
  // The refused round is tried again and completes, its effect once.
  const again = await lastRound(ada.b);
  assert.match(again.json?.result?.content?.[0]?.text ?? '', /^Deployed ada-b to staging/, again.text);
  assert.equal(hook.count('ada-b'), 1);
  // The operator drops the raise.
  const dropped = await adminApi('POST', '/admin/api/limits/ada', {});
  assert.equal(dropped.status, 200, dropped.text);
  assert.equal(dropped.json.principals[0].all.limits.held, 2, dropped.text);
});

test(`a restart with the same persist directory keeps every count: held, rate and daily still refuse (${VIA})`, { timeout: 90_000 }, async () => {
  const held = [];
  for (const service of ['ada-d', 'ada-e']) {
    const r = await call(ADA, 'deploy', { service });
    assert.equal(r.json?.result?.resultType, 'input_required', r.text);
    held.push({ token: ADA, service, first: r.json.result.requestState });
  }
  await usageUntil('ada', (x) => x.all.held === 2, 'two calls held before the restart');
  await server.stop();
  logs.push(server.logPath);
  server = await startServer({ persistTo, vars });

  const u = await usage('ada');
  assert.equal(u.all.held, 2, `held kept: ${JSON.stringify(u)}`);
  assert.equal(u.all.active, 0, JSON.stringify(u));
  assert.equal(u.tools.file_change.rate, 3, `rate kept: ${JSON.stringify(u)}`);
  assert.equal(u.tools.release.daily, 2, `daily kept: ${JSON.stringify(u)}`);
  assert.deepEqual(u.raised, {}, JSON.stringify(u));
  const before = await kept();
  assertRefused(await call(ADA, 'deploy', { service: 'ada-f' }), { limit: 'held', scope: 'principal', tool: 'deploy', max: 2 });
  assert.equal(await kept(), before, 'the refused call stored nothing');
  // bob is still not refused.
  const bobAdd = await call(BOB, 'add', { a: 2, b: 3 });
  assert.equal(bobAdd.json?.result?.structuredContent?.sum, 5, bobAdd.text);

  // Her paused calls complete after the restart, each effect once.
  for (const c of held) {
    const r2 = await call(ADA, 'deploy', { service: c.service }, { requestState: c.first, inputResponses: TARGET }, 2);
    assert.deepEqual(Object.keys(r2.json?.result?.inputRequests ?? {}), ['safety'], r2.text);
    const done = await lastRound({ ...c, state: r2.json.result.requestState });
    assert.match(done.json?.result?.content?.[0]?.text ?? '', new RegExp(`^Deployed ${c.service} to staging`), done.text);
    assert.equal(hook.count(c.service), 1);
  }
  await usageUntil('ada', (x) => x.all.held === 0, 'no call held');
  // No longer behind held: the rate and the daily quota counted before the
  // restart still refuse, with the same windows.
  const rate = assertRefused(await call(ADA, 'file_change', { system: 'ada-5' }), { limit: 'rate', scope: 'tool', max: 3 });
  assert.equal(rate.retryAt, rateWindow.end);
  const daily = assertRefused(await call(ADA, 'release', { build: 'ada-5' }), { limit: 'daily', scope: 'tool', max: 2 });
  assert.equal(daily.retryAt, dayWindow.end);
  assert.equal(await kept(), before, 'the refused calls stored nothing');
  // A new call is taken again.
  const f = await call(ADA, 'deploy', { service: 'ada-f' });
  assert.equal(f.json?.result?.resultType, 'input_required', f.text);
  const cancelled = await decline(ADA, 'deploy', { service: 'ada-f' }, f.json.result.requestState, 'target');
  assert.equal(cancelled.json?.result?.content?.[0]?.text, 'Deployment of ada-f cancelled by the user.', cancelled.text);
});

/** tasks/get of `taskId` as `token`. */
async function taskGet(token, taskId) {
  const r = await send(server.url, 'tasks/get', { taskId, _meta: modernMeta(TASKS) }, { headers: { 'mcp-name': taskId, ...bearer(token) } });
  assert.equal(r.status, 200, r.text);
  return r.json.result;
}
const WAITING = /^Waiting for a limit/;

test(`a task over its rate is not refused: working, "Waiting for a limit", and it runs when its window opens, across a restart (${VIA})`, { timeout: 60_000 }, async () => {
  const task = (token, label) => call(token, 'slow_compute', { seconds: 1, label }, { _meta: modernMeta(TASKS) });
  await clearOfWindowEnd(TASK_WINDOW, 3_500);
  const first = await task(ADA, 'first');
  const opens = windowEnd(TASK_WINDOW);
  assert.equal(first.json?.result?.resultType, 'task', first.text);
  assert.doesNotMatch(first.json.result.statusMessage ?? '', WAITING, first.text);
  const before = await kept();
  const second = await task(ADA, 'second');
  assert.equal(second.status, 200, `a task is not refused: ${second.text}`);
  assert.equal(second.json?.result?.resultType, 'task', second.text);
  assert.equal(second.json.result.status, 'working', second.text);
  assert.match(second.json.result.statusMessage ?? '', WAITING, second.text);
  assert.match(second.json.result.statusMessage, /the rate limit/, second.text);
  assert.equal(await kept(), before + 1, 'the waiting task is kept');
  // bob's task, in the same window, runs at once.
  const bob = await task(BOB, 'bob');
  assert.equal(bob.json?.result?.resultType, 'task', bob.text);
  assert.doesNotMatch(bob.json.result.statusMessage ?? '', WAITING, bob.text);

  const id = second.json.result.taskId;
  // The server restarts while it waits (and the others sleep): each still runs.
  await server.stop();
  logs.push(server.logPath);
  server = await startServer({ persistTo, vars });
  let ranAt = 0;
  let t;
  for (const deadline = Date.now() + 30_000; ;) {
    t = await taskGet(ADA, id);
    if (!ranAt && !(t.status === 'working' && WAITING.test(t.statusMessage ?? ''))) {
      ranAt = Date.now();
      // Admitted in the next window (5 s long: still open), as a new call.
      const u = await usage('ada');
      assert.equal(u.tools.slow_compute.rate, 1, `the waiting task counted in the window it ran in: ${JSON.stringify(u)}`);
    }
    if (['completed', 'failed', 'cancelled'].includes(t.status)) break;
    assert.ok(Date.now() < deadline, `the waiting task never ran: ${JSON.stringify(t)}`);
    await sleep(200);
  }
  assert.equal(t.status, 'completed', JSON.stringify(t));
  assert.equal(t.result?.content?.[0]?.text, 'Computed second after 1 second(s).', JSON.stringify(t));
  assert.ok(ranAt >= opens - 250, `it ran ${opens - ranAt} ms before its window opened`);
  for (const [token, other] of [[ADA, first], [BOB, bob]]) {
    let o;
    for (const deadline = Date.now() + 20_000; ;) {
      o = await taskGet(token, other.json.result.taskId);
      if (o.status !== 'working') break;
      assert.ok(Date.now() < deadline, JSON.stringify(o));
      await sleep(200);
    }
    assert.equal(o.status, 'completed', JSON.stringify(o));
  }
});

test(`once every call has ended, every principal's held and active counts are zero (${VIA})`, { timeout: 60_000 }, async () => {
  assert.ok(paused.bob, 'the held test left bob a paused call');
  const done = await decline(BOB, 'deploy', { service: 'bob-held' }, paused.bob.state, 'target');
  assert.equal(done.json?.result?.content?.[0]?.text, 'Deployment of bob-held cancelled by the user.', done.text);
  const listed = await adminApi('GET', '/admin/api/calls?limit=500');
  const open = listed.json.calls.filter((c) => !['completed', 'failed', 'cancelled'].includes(c.status));
  assert.deepEqual(open.map((c) => [c.id, c.tool, c.status]), [], 'no call is left open');
  let all;
  for (const deadline = Date.now() + 10_000; ;) {
    const r = await adminApi('GET', '/admin/api/limits');
    assert.equal(r.status, 200, r.text);
    all = r.json.principals;
    const counts = all.flatMap((p) => [p.all, ...Object.values(p.tools)]).flatMap((s) => [s.held, s.active]);
    if (counts.every((n) => n === 0)) break;
    assert.ok(Date.now() < deadline, `counts left: ${JSON.stringify(all)}`);
    await sleep(200);
  }
  assert.deepEqual(all.map((p) => p.principal).sort(), ['ada', 'bob']);
  for (const who of ['ada', 'bob']) {
    const u = await usage(who);
    assert.deepEqual([u.all.held, u.all.active], [0, 0], JSON.stringify(u));
    assert.deepEqual(u.raised, {}, JSON.stringify(u));
  }
  // The windows' counts stay what they are until their windows end.
  const ada = all.find((p) => p.principal === 'ada');
  assert.equal(ada.tools.file_change.rate, 3, JSON.stringify(ada));
  assert.equal(ada.tools.release.daily, 2, JSON.stringify(ada));
});

test(`refusals write log lines naming the limit and whose (a digest), never a token (${VIA})`, { timeout: 30_000 }, async () => {
  assert.equal(logs.length, 2, 'the restart test and the task test ran');
  // A held or active refusal is one line each. A window's (rate, daily)
  // is one line for its first in an isolate; the rest it refuses from
  // there are counted (`refused`) on one line once the window is over, so
  // within these long windows (and across a restart, which loses the
  // count) a window's lines say at most how many it refused, at least one.
  const exact = { 'held deploy': 3, 'held add': 2, 'active add': 1, 'active deploy': 1 };
  const windows = { 'rate file_change': 3, 'daily release': 3 };
  let lines;
  let got;
  let refused;
  for (const deadline = Date.now() + 10_000; ;) {
    const text = [...logs, server.logPath].map((f) => readFileSync(f, 'utf8')).join('\n');
    assert.ok(!text.includes(ADA) && !text.includes(BOB) && !text.includes(OPS), 'no token in the logs');
    lines = text.split('\n').filter((l) => l.includes('"event":"limited"')).map((l) => JSON.parse(l.slice(l.indexOf('{'))));
    got = {};
    refused = {};
    for (const l of lines) {
      const k = `${l.limit} ${l.tool}`;
      got[k] = (got[k] ?? 0) + 1;
      refused[k] = (refused[k] ?? 0) + l.refused;
    }
    const windowsOk = Object.entries(windows).every(([k, n]) => got[k] >= 1 && refused[k] <= n);
    if (Object.entries(exact).every(([k, n]) => got[k] === n && refused[k] === n) && windowsOk && got['rate slow_compute'] >= 1) break;
    assert.ok(Date.now() < deadline, `refusals logged: ${JSON.stringify(got)} (refused ${JSON.stringify(refused)}), wanted ${JSON.stringify(exact)}, at most ${JSON.stringify(windows)}, and rate slow_compute`);
    await sleep(250);
  }
  // All of them ada's (bob was never refused), named by a digest only.
  const whose = [...new Set(lines.map((l) => l.principal))];
  assert.equal(whose.length, 1, JSON.stringify(whose));
  assert.match(whose[0], /^p:[0-9a-f]{16}$/);
  assert.ok(lines.every((l) => Number.isInteger(l.retryAfter) && l.retryAfter >= 1 && l.max >= 1), JSON.stringify(lines));
});

// What ends a paused call must free its place: with `held` set, a place
// that is not freed locks its principal out until the call's idle TTL
// (an hour for a durable call, a day for a session's).

/** A paused session call (2025-11-25, raw HTTP) by ada: its session id. */
async function sessionPost(sid, body, method = 'POST') {
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...bearer(ADA) };
  if (sid) Object.assign(headers, { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' });
  const r = await fetch(server.url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(20_000) });
  return { status: r.status, sid: r.headers.get('mcp-session-id'), text: await r.text() };
}
async function pausedSessionCall(service, id = 10) {
  const init = await sessionPost(null, { jsonrpc: '2.0', id: 0, method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: { elicitation: {}, sampling: {} }, clientInfo: { name: 'limits-e2e', version: '1' } } });
  assert.equal(init.status, 200, init.text);
  await sessionPost(init.sid, { jsonrpc: '2.0', method: 'notifications/initialized' });
  const r = await sessionPost(init.sid, { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'deploy', arguments: { service } } });
  assert.match(r.text, /elicitation\/create/, r.text);
  return init.sid;
}
/** The admin id of ada's one open call of `kind`. */
async function openCall(kind) {
  const r = await adminApi('GET', `/admin/api/calls?limit=500&kind=${kind}`);
  const open = r.json.calls.filter((c) => c.principal === 'ada' && !['completed', 'failed', 'cancelled'].includes(c.status));
  assert.equal(open.length, 1, JSON.stringify(open));
  return open[0].id;
}
async function status(id) {
  return (await adminApi('GET', `/admin/api/calls/${encodeURIComponent(id)}`)).json?.status;
}

/**
 * `pause()` makes one paused call of ada's; `end(it)` ends it; her held
 * count must go up by one, then back.
 */
async function freesItsPlace(pause, end) {
  // Room for every case: each checks its own place comes and goes.
  const raised = await adminApi('POST', '/admin/api/limits/ada', { all: { held: 100 } });
  assert.equal(raised.status, 200, raised.text);
  const base = (await usage('ada')).all.held;
  const it = await pause();
  await usageUntil('ada', (x) => x.all.held === base + 1, 'the call is held');
  await end(it);
  await usageUntil('ada', (x) => x.all.held === base, 'the ended call still holds its place', 3_000);
}

test(`a task cancelled by its client or by an operator frees its place at once (${VIA})`, { timeout: 60_000 }, async () => {
  const inputRequired = async () => {
    const r = await call(ADA, 'confirm_delete', { filename: 'x' }, { _meta: modernMeta(TASKS) });
    assert.equal(r.json?.result?.resultType, 'task', r.text);
    const id = r.json.result.taskId;
    for (const deadline = Date.now() + 20_000; (await taskGet(ADA, id)).status !== 'input_required';) {
      assert.ok(Date.now() < deadline, 'the task asks');
      await sleep(200);
    }
    return id;
  };
  await freesItsPlace(inputRequired, async (id) => {
    const r = await send(server.url, 'tasks/cancel', { taskId: id, _meta: modernMeta(TASKS) }, { headers: { 'mcp-name': id, ...bearer(ADA) } });
    assert.equal(r.status, 200, r.text);
    assert.equal((await taskGet(ADA, id)).status, 'cancelled');
  });
  await freesItsPlace(inputRequired, async () => {
    const id = await openCall('task');
    const r = await adminApi('POST', '/admin/api/calls/cancel', { ids: [id] });
    assert.deepEqual(r.json?.done, [id], r.text);
    assert.equal(await status(id), 'cancelled');
  });
});

test(`a durable call an operator cancels frees its place (${VIA})`, { timeout: 60_000 }, async () => {
  await freesItsPlace(async () => {
    const r = await call(ADA, 'deploy', { service: 'bug-durable' });
    assert.equal(r.json?.result?.resultType, 'input_required', r.text);
    return r.json.result.requestState;
  }, async (state) => {
    const id = await openCall('durable');
    const r = await adminApi('POST', '/admin/api/calls/cancel', { ids: [id] });
    assert.deepEqual(r.json?.done, [id], r.text);
    assert.equal(await status(id), 'cancelled');
    // Its client's retry is told so; still held.
    const again = await call(ADA, 'deploy', { service: 'bug-durable' }, { requestState: state, inputResponses: TARGET }, 2);
    assert.equal(again.json?.error?.code, -32800, again.text);
  });
});

test(`a session call an operator cancels frees its place (${VIA})`, { timeout: 60_000 }, async () => {
  await freesItsPlace(() => pausedSessionCall('bug-session-ops'), async () => {
    const id = await openCall('session');
    const r = await adminApi('POST', '/admin/api/calls/cancel', { ids: [id] });
    assert.deepEqual(r.json?.done, [id], r.text);
    assert.equal(await status(id), 'cancelled');
  });
});

test(`a session call its client cancels (notifications/cancelled) frees its place (${VIA})`, { timeout: 60_000 }, async () => {
  await freesItsPlace(() => pausedSessionCall('bug-session-client', 11), async (sid) => {
    const id = await openCall('session');
    const r = await sessionPost(sid, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 11 } });
    assert.equal(r.status, 202, r.text);
    for (const deadline = Date.now() + 5_000; (await status(id)) !== 'cancelled';) {
      assert.ok(Date.now() < deadline, 'the call is cancelled');
      await sleep(100);
    }
  });
});

test(`a session deleted by its client (DELETE) frees its paused call's place (${VIA})`, { timeout: 60_000 }, async () => {
  await freesItsPlace(() => pausedSessionCall('bug-session-delete'), async (sid) => {
    const r = await sessionPost(sid, undefined, 'DELETE');
    assert.equal(r.status, 204, r.text);
  });
});
