// Checking a deploy before making it, on the calls a local `wrangler dev`
// keeps: the fixtures worker pauses a durable call (2026-07-28), a session
// call (2025-11-25) and a task, and finishes another durable call; wrangler
// dev stops; scripts/export-paused.mjs reads its Durable Objects' SQLite
// files into the JSON `durable_mcp::replay::PausedCall` reads (the paused
// calls only, the answers so far in their journals, no session or task id);
// then the native check (tests/fixtures-worker/tests/server/deploy_check.rs,
// DEPLOY_CHECK naming the file) replays each on the same code: each
// continues, asking what it was asking.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { freshPersistDir, startWrangler } from './wrangler.mjs';
import { callTool } from './webhook.mjs';
import { modernMeta, send } from './modern.mjs';
import { parseSse } from './sse.mjs';

const ROOT = resolve(import.meta.dirname, '../..');
const EXPORT = join(ROOT, 'scripts/export-paused.mjs');
const SESSION = '2025-11-25';
const TASKS = { elicitation: { form: {} }, extensions: { 'io.modelcontextprotocol/tasks': {} } };
const REQUEST_TIMEOUT_MS = 20_000;

const running = new Set();
const dirs = [];
after(async () => {
  for (const s of [...running]) await s.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** The claims inside a sealed state (the payload is base64url JSON). */
const claimsOf = (state) => JSON.parse(Buffer.from(state.split('.')[1], 'base64url').toString('utf8'));

/** How the export names a session or task id (never the id itself). */
const hidden = (id) => `~${createHash('sha256').update(id).digest('hex').slice(0, 16)}`;

const ELICITED = (target) => ({ target: { action: 'accept', content: { target } } });
const SAMPLED = { safety: { role: 'assistant', content: { type: 'text', text: 'yes' }, model: 'e2e-model' } };

/** A 2026-07-28 deploy call paused at the safety question; returns its durable call id. */
async function durableAtSafety(url, service) {
  const r1 = await callTool(url, 'deploy', { service }, {}, { id: 1 });
  assert.equal(r1.json?.result?.resultType, 'input_required', r1.text);
  const r2 = await callTool(url, 'deploy', { service },
    { requestState: r1.json.result.requestState, inputResponses: ELICITED('staging') }, { id: 2 });
  assert.equal(r2.status, 200, r2.text);
  assert.deepEqual(Object.keys(r2.json.result.inputRequests), ['safety'], r2.text);
  const claims = claimsOf(r2.json.result.requestState);
  assert.equal(claims.durable, true, JSON.stringify(claims));
  return { sid: claims.sid, state: r2.json.result.requestState };
}

/** A 2025-11-25 POST, an SSE answer read to its end. */
async function post(url, sid, body) {
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  if (sid) Object.assign(headers, { 'mcp-session-id': sid, 'mcp-protocol-version': SESSION });
  const r = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body), signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  const text = await r.text();
  const contentType = r.headers.get('content-type') ?? '';
  const out = { status: r.status, text, sessionId: r.headers.get('mcp-session-id') };
  if (contentType.startsWith('text/event-stream')) out.events = parseSse(text);
  else if (text) out.json = JSON.parse(text);
  return out;
}

/** A session whose deploy call got its target and waits for the safety answer; returns the session id. */
async function sessionAtSafety(url, service) {
  const init = await post(url, null, {
    jsonrpc: '2.0', id: 0, method: 'initialize',
    params: { protocolVersion: SESSION, capabilities: { elicitation: {}, sampling: {} }, clientInfo: { name: 'deploy-check-e2e', version: '0.0.1' } },
  });
  assert.equal(init.status, 200, init.text);
  const sid = init.sessionId;
  assert.equal((await post(url, sid, { jsonrpc: '2.0', method: 'notifications/initialized' })).status, 202);
  const call = await post(url, sid, { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'deploy', arguments: { service } } });
  assert.equal(call.status, 200, call.text);
  const asked = call.events.map((e) => e.message).find((m) => m?.method === 'elicitation/create');
  assert.equal(asked?.id, 'c1/1/target', call.text);
  const answered = await post(url, sid, { jsonrpc: '2.0', id: asked.id, result: { action: 'accept', content: { target: 'production' } } });
  assert.equal(answered.status, 202, answered.text);
  // Back with the elicitation's event id: the safety question, asked.
  const r = await fetch(url, {
    headers: { accept: 'text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': SESSION, 'last-event-id': 'c1:1' },
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  assert.equal(r.status, 200);
  const events = parseSse(await r.text());
  assert.ok(events.some((e) => e.message?.method === 'sampling/createMessage'), JSON.stringify(events));
  return sid;
}

/** A confirm_delete task waiting for its confirmation; returns the task id. */
async function taskAtConfirm(url, filename) {
  const created = await send(url, 'tools/call', { name: 'confirm_delete', arguments: { filename }, _meta: modernMeta(TASKS) });
  assert.equal(created.json?.result?.resultType, 'task', created.text);
  const { taskId } = created.json.result;
  const deadline = Date.now() + 30_000;
  for (;;) {
    const r = await send(url, 'tasks/get', { taskId, _meta: modernMeta(TASKS) }, { headers: { 'mcp-name': taskId } });
    assert.equal(r.status, 200, r.text);
    if (r.json.result.status === 'input_required') break;
    assert.equal(r.json.result.status, 'working', r.text);
    assert.ok(Date.now() < deadline, `task stuck: ${r.text}`);
    await new Promise((ok) => setTimeout(ok, 200));
  }
  return taskId;
}

function exportPaused(persistTo, out) {
  const r = spawnSync(process.execPath, [EXPORT, persistTo, '--out', out], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
  assert.doesNotMatch(r.stderr, /ExperimentalWarning/);
  return r.stderr;
}

test('paused calls exported from wrangler dev storage continue on the same code', { timeout: 15 * 60_000 }, async () => {
  const persistTo = freshPersistDir();
  dirs.push(persistTo);
  const server = await startWrangler({ persistTo });
  running.add(server);
  let durable;
  let done;
  let session;
  let task;
  try {
    durable = await durableAtSafety(server.url, 'api');
    // Another durable call that completes: it is not paused any more.
    done = await durableAtSafety(server.url, 'web');
    const finished = await callTool(server.url, 'deploy', { service: 'web' },
      { requestState: done.state, inputResponses: SAMPLED }, { id: 3 });
    assert.equal(finished.json?.result?.resultType, 'complete', finished.text);
    session = await sessionAtSafety(server.url, 'search');
    task = await taskAtConfirm(server.url, 'report.txt');
  } finally {
    // Stopped, so what it wrote is all in the files.
    running.delete(server);
    await server.stop();
  }

  const out = join(persistTo, 'paused.json');
  const summary = exportPaused(persistTo, out);
  assert.match(summary, /3 paused call\(s\) \(1 durable, 1 session, 1 task\)/, summary);
  const text = readFileSync(out, 'utf8');
  for (const secret of [session, task]) assert.ok(!text.includes(secret), 'no session or task id in the file');
  const calls = JSON.parse(text);
  const byId = Object.fromEntries(calls.map((c) => [c.id, c]));
  assert.deepEqual(calls.map((c) => Object.keys(c).sort()), calls.map(() => ['arguments', 'id', 'journal', 'tool']));

  // The durable call: its tool and arguments from its journal's invocation,
  // the target answered, the safety question pending.
  const d = byId[`durable:${durable.sid}`];
  assert.ok(d, `durable:${durable.sid} in ${calls.map((c) => c.id)}`);
  assert.equal(byId[`durable:${done.sid}`], undefined, 'the completed call is left out');
  assert.equal(d.tool, 'deploy');
  assert.deepEqual(d.arguments, { service: 'api' });
  assert.deepEqual(d.journal.answers.target.outcome, { Ok: { action: 'accept', content: { target: 'staging' } } });
  assert.deepEqual(Object.keys(d.journal.pending), ['safety']);
  assert.deepEqual(d.journal.invocation, { tool: 'deploy', arguments: { service: 'api' } });

  // The session call, named by a digest of its session's id.
  const s = calls.find((c) => c.id.startsWith(`session:${hidden(session)}/`));
  assert.ok(s, `session:${hidden(session)}/… in ${calls.map((c) => c.id)}`);
  assert.equal(s.tool, 'deploy');
  assert.deepEqual(s.arguments, { service: 'search' });
  assert.deepEqual(s.journal.answers.target.outcome, { Ok: { action: 'accept', content: { target: 'production' } } });
  assert.deepEqual(Object.keys(s.journal.pending), ['safety']);

  // The task, waiting for its confirmation.
  const t = byId[`task:${hidden(task)}`];
  assert.ok(t, `task:${hidden(task)} in ${calls.map((c) => c.id)}`);
  assert.equal(t.tool, 'confirm_delete');
  assert.deepEqual(t.arguments, { filename: 'report.txt' });
  assert.deepEqual(Object.keys(t.journal.pending), ['confirm']);
  assert.equal(t.journal.answers, undefined);

  // The same code, natively: every call continues, asking what it asked.
  const r = spawnSync('cargo', ['test', '-p', 'fixtures-worker', '--test', 'server', '--', 'deploy_check', '--nocapture'], {
    cwd: ROOT, encoding: 'utf8', timeout: 10 * 60_000, env: { ...process.env, DEPLOY_CHECK: out },
  });
  const log = `${r.stdout}\n${r.stderr}`;
  assert.equal(r.status, 0, log.slice(-6000));
  assert.match(log, /test deploy_check::exported_paused_calls_continue_on_the_same_code \.\.\. ok/, log.slice(-6000));
  const verdicts = Object.fromEntries(log.split('\n').filter((l) => l.startsWith('deploy-check '))
    .map((l) => { const [, id, tool, ...v] = l.split(' '); return [id, { tool, verdict: JSON.parse(v.join(' ')) }]; }));
  assert.deepEqual(verdicts, {
    [d.id]: { tool: 'deploy', verdict: { verdict: 'continues', next: 'asks ["safety"]' } },
    [s.id]: { tool: 'deploy', verdict: { verdict: 'continues', next: 'asks ["safety"]' } },
    [t.id]: { tool: 'confirm_delete', verdict: { verdict: 'continues', next: 'asks ["confirm"]' } },
  });
});

test('export-paused reads nothing from a directory without objects, and says how to run it', () => {
  const empty = freshPersistDir();
  dirs.push(empty);
  const out = join(empty, 'paused.json');
  assert.match(exportPaused(empty, out), /0 paused call\(s\)/);
  assert.deepEqual(JSON.parse(readFileSync(out, 'utf8')), []);
  const usage = spawnSync(process.execPath, [EXPORT], { encoding: 'utf8' });
  assert.equal(usage.status, 64);
  assert.match(usage.stderr, /usage: node scripts\/export-paused\.mjs <persist-dir> \[--out file\.json\]/);
});
