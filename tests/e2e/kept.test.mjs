// A kept call's promises (issue 42's first part) against `wrangler dev`
// (and, through the twin, plain `workerd serve`), on the durable
// 2026-07-28 wire:
// - 30 races of an operator's `calls cancel` against the round that runs
//   the side effect (a slow webhook): each ends either completed once with
//   the cancel reported as not applied, or cancelled with the client and
//   its retries getting -32800 — never both, and the effect runs at most
//   once;
// - the same races against a session's call (the official v1 SDK client
//   answering its questions) and against a task's last slice (its effect recorded at
//   the webhook once): cancelled, or completed, never both;
// - an operator pauses one call (a durable call, a task): its next round
//   parks and runs no effect; resumed, it completes, its effect run once;
// - an operator asks a call again from an earlier question, then answers
//   its last question on its client's behalf (a durable call, a task): the
//   client is asked again, the operator's answer stands (shown with who
//   gave it), the effect runs once; no rewind past an effect;
// - purge then the clients' retries of completed and cancelled calls: no
//   effect runs again, no call comes back, nothing is listed (with an
//   empty tool or at all); purge with a status that is not final: 400,
//   nothing purged.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, VIA } from './server.mjs';
import { createHash } from 'node:crypto';
import { callTool, startWebhook } from './webhook.mjs';
import { modernMeta, send } from './modern.mjs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const OPS = 'ops-e2e-kept-5b2e8f4a6c0d7f3c';
const RACES = 30;
const ELICITED = { target: { action: 'accept', content: { target: 'staging' } } };
const SAMPLED = { safety: { role: 'assistant', content: { type: 'text', text: 'yes' }, model: 'e2e-model' } };

let server;
let hook;

before(async () => {
  hook = await startWebhook({ delayMs: 250 });
  server = await startServer({ vars: { ADMIN_TOKENS: `ops:${OPS}`, TICKET_WEBHOOK: hook.url('/kept') } });
});

after(async () => {
  await server?.stop();
  await hook?.stop();
});

async function adminApi(method, path, body) {
  const r = await fetch(new URL(server.url).origin + path, {
    method,
    headers: { authorization: `Bearer ${OPS}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: r.status, json: await r.json() };
}

const claimsOf = (state) => JSON.parse(Buffer.from(state.split('.')[1], 'base64url').toString('utf8'));
const ticketsFor = (service) => hook.hits.filter((h) => h.body?.service === service).length;

/** A deploy call at its last question (the safety sample): its args and state. */
async function atLastQuestion(service) {
  const args = { service };
  const r1 = await callTool(server.url, 'deploy', args);
  assert.equal(r1.json?.result?.resultType, 'input_required', r1.text);
  const r2 = await callTool(server.url, 'deploy', args, { requestState: r1.json.result.requestState, inputResponses: ELICITED }, { id: 2 });
  assert.deepEqual(Object.keys(r2.json?.result?.inputRequests ?? {}), ['safety'], r2.text);
  const state = r2.json.result.requestState;
  return { args, state, id: `d.${claimsOf(state).sid}` };
}

const last = (call) => callTool(server.url, 'deploy', call.args, { requestState: call.state, inputResponses: SAMPLED }, { id: 3 });

const calls = [];

test(`an operator's cancel races the round that runs the effect: one outcome, told truly (${VIA})`, { timeout: 5 * 60_000 }, async (t) => {
  let cancelledN = 0;
  for (let i = 0; i < RACES; i++) {
    const call = await atLastQuestion(`race-${i}`);
    calls.push(call);
    // The round starts; the cancel comes while its webhook is held back
    // (or, for some, just before or after the round).
    const delay = [0, 50, 120, 200, 320, 450][i % 6];
    const round = last(call);
    await new Promise((ok) => setTimeout(ok, delay));
    const cancel = await adminApi('POST', '/admin/api/calls/cancel', { ids: [call.id] });
    const reply = await round;
    assert.equal(cancel.status, 200, JSON.stringify(cancel.json));
    const accepted = cancel.json.done.includes(call.id);
    const what = `race ${i} (+${delay} ms): cancel ${JSON.stringify(cancel.json)}, client ${reply.text}`;
    if (accepted) {
      cancelledN++;
      call.outcome = 'cancelled';
      assert.equal(reply.json?.error?.code, -32800, what);
      // Its retries: -32800 too.
      const again = await last(call);
      assert.equal(again.json?.error?.code, -32800, `${what}; retry ${again.text}`);
    } else {
      call.outcome = 'completed';
      assert.equal(cancel.json.skipped[call.id], 'already finished', what);
      assert.equal(reply.json?.result?.resultType, 'complete', what);
      call.result = reply.json.result;
      const again = await last(call);
      assert.deepEqual(again.json?.result, call.result, `${what}; retry ${again.text}`);
    }
    assert.ok(ticketsFor(call.args.service) <= 1, `${what}: the effect ran ${ticketsFor(call.args.service)} times`);
    if (call.outcome === 'completed') assert.equal(ticketsFor(call.args.service), 1, what);
    // The listing says the same.
    const shown = await adminApi('GET', `/admin/api/calls/${encodeURIComponent(call.id)}`);
    assert.equal(shown.json.status, call.outcome, `${what}: shown ${JSON.stringify(shown.json.status)}`);
  }
  t.diagnostic(`${cancelledN} of ${RACES} cancelled, ${RACES - cancelledN} completed`);
  assert.ok(cancelledN > 0, 'some cancels landed while the round ran');
});

test(`purge: only finished calls; afterwards no retry runs an effect or brings a call back (${VIA})`, { timeout: 5 * 60_000 }, async () => {
  assert.ok(calls.length >= RACES, 'the races ran first');
  // One more call, paused: purge must not take it.
  const paused = await atLastQuestion('paused-one');
  for (const status of [['waiting'], ['completed', 'parked'], ['working']]) {
    const r = await adminApi('POST', '/admin/api/purge', { status });
    assert.equal(r.status, 400, JSON.stringify(r.json));
    assert.match(r.json.error.message, /only finished/);
  }
  const before = await adminApi('GET', '/admin/api/calls?limit=500');
  assert.equal(before.json.counts.total, RACES + 1, JSON.stringify(before.json.counts));
  const hitsBefore = hook.count();

  const purged = await adminApi('POST', '/admin/api/purge', {});
  assert.equal(purged.status, 200);
  assert.equal(purged.json.done.length, RACES, JSON.stringify(purged.json));
  // Again: nothing more.
  assert.deepEqual((await adminApi('POST', '/admin/api/purge', {})).json.done, []);

  // Every client comes back with its last token: its call's end, never a replay.
  for (const call of calls) {
    const r = await last(call);
    if (call.outcome === 'cancelled') assert.equal(r.json?.error?.code, -32800, r.text);
    else assert.deepEqual(r.json?.result, call.result, r.text);
  }
  assert.equal(hook.count(), hitsBefore, 'no effect ran again');
  const listed = await adminApi('GET', '/admin/api/calls?limit=500');
  assert.equal(listed.json.counts.total, 1, JSON.stringify(listed.json.calls.map((c) => [c.id, c.tool, c.status])));
  assert.equal(listed.json.calls[0].id, paused.id);
  assert.ok(listed.json.calls.every((c) => c.tool === 'deploy'), 'no call listed with an empty tool');
  // The paused call still completes.
  const done = await last(paused);
  assert.equal(done.json?.result?.resultType, 'complete', done.text);
});

const TASK_CAPS = { elicitation: { form: {} }, extensions: { 'io.modelcontextprotocol/tasks': {} } };
const taskGet = (taskId) => send(server.url, 'tasks/get', { taskId, _meta: modernMeta(TASK_CAPS) }, { headers: { 'mcp-name': taskId } });
const taskAdminId = (taskId) => `t.${createHash('sha256').update(taskId).digest('hex').slice(0, 16)}`;
/** Polls task `taskId` until `want` holds of it (30 s at most). */
async function taskUntil(taskId, want) {
  for (const deadline = Date.now() + 30_000; ;) {
    const t = (await taskGet(taskId)).json?.result;
    if (want(t)) return t;
    assert.ok(Date.now() < deadline, JSON.stringify(t));
    await new Promise((ok) => setTimeout(ok, 100));
  }
}

test(`an operator's cancel races a task's last slice: cancelled or completed, never both (${VIA})`, { timeout: 5 * 60_000 }, async (t) => {
  const tally = { cancelled: 0, completed: 0 };
  for (let i = 0; i < 12; i++) {
    const before = hook.count();
    const created = await send(server.url, 'tools/call', { name: 'count_slowly', arguments: { to: 1, step_ms: 100 }, _meta: modernMeta(TASK_CAPS) });
    const { taskId } = created.json?.result ?? {};
    assert.ok(taskId, created.text);
    await new Promise((ok) => setTimeout(ok, [50, 150, 250, 350, 500, 700][i % 6]));
    const cancel = await adminApi('POST', '/admin/api/calls/cancel', { ids: [taskAdminId(taskId)] });
    assert.equal(cancel.status, 200, JSON.stringify(cancel.json));
    const accepted = cancel.json.done.includes(taskAdminId(taskId));
    // Settled: what tasks/get says from now on.
    let task;
    for (const deadline = Date.now() + 20_000; ;) {
      task = (await taskGet(taskId)).json?.result;
      if (['completed', 'failed', 'cancelled'].includes(task?.status)) break;
      assert.ok(Date.now() < deadline, JSON.stringify(task));
      await new Promise((ok) => setTimeout(ok, 100));
    }
    await new Promise((ok) => setTimeout(ok, 400));
    const settled = (await taskGet(taskId)).json?.result;
    const what = `task race ${i}: cancel ${JSON.stringify(cancel.json)}, task ${JSON.stringify(settled)}`;
    assert.equal(settled.status, task.status, `${what}: it moved after settling`);
    assert.equal(settled.status, accepted ? 'cancelled' : 'completed', what);
    assert.ok(hook.count() - before <= 1, `${what}: the effect ran ${hook.count() - before} times`);
    if (!accepted) assert.equal(hook.count() - before, 1, what);
    tally[settled.status]++;
  }
  t.diagnostic(JSON.stringify(tally));
});

test(`an operator's cancel races a session call's last round: cancelled or completed, never both (${VIA})`, { timeout: 5 * 60_000 }, async (t) => {
  const tally = { cancelled: 0, completed: 0 };
  for (let i = 0; i < 10; i++) {
    const service = `session-race-${i}`;
    const delay = [0, 60, 120, 200, 300][i % 5];
    let adminId;
    let cancelled;
    const client = new Client({ name: 'kept-e2e', version: '1' }, { capabilities: { elicitation: {}, sampling: {} } });
    client.setRequestHandler(ElicitRequestSchema, async () => {
      // Paused at its first question: the operator finds it.
      const l = await adminApi('GET', '/admin/api/calls?kind=session&status=waiting');
      adminId = l.json.calls.find((c) => c.tool === 'deploy')?.id;
      return { action: 'accept', content: { target: 'staging' } };
    });
    client.setRequestHandler(CreateMessageRequestSchema, async () => {
      // The round that runs the effect starts when this answer arrives;
      // the operator's cancel comes a little after.
      cancelled = new Promise((ok) => setTimeout(() => ok(adminApi('POST', '/admin/api/calls/cancel', { ids: [adminId] })), delay));
      return { role: 'assistant', model: 'e2e-model', content: { type: 'text', text: 'yes' }, stopReason: 'endTurn' };
    });
    const transport = new StreamableHTTPClientTransport(new URL(server.url), {
      reconnectionOptions: { initialReconnectionDelay: 100, maxReconnectionDelay: 500, reconnectionDelayGrowFactor: 1.5, maxRetries: 3 },
    });
    await client.connect(transport);
    let outcome;
    try {
      outcome = { result: await client.callTool({ name: 'deploy', arguments: { service } }, undefined, { timeout: 20_000 }) };
    } catch (e) {
      outcome = { error: e };
    }
    const cancel = await cancelled;
    await client.close();
    assert.ok(adminId, `race ${i}: the call was listed`);
    const accepted = cancel.json.done.includes(adminId);
    const what = `session race ${i} (+${delay} ms): cancel ${JSON.stringify(cancel.json)}, client ${outcome.error ? outcome.error.message : JSON.stringify(outcome.result)}`;
    if (accepted) {
      assert.equal(outcome.error?.code, -32800, what);
      tally.cancelled++;
    } else {
      assert.equal(cancel.json.skipped[adminId], 'already finished', what);
      assert.match(outcome.result?.content?.[0]?.text ?? '', /^Deployed /, what);
      tally.completed++;
    }
    assert.ok(ticketsFor(service) <= 1, `${what}: the effect ran ${ticketsFor(service)} times`);
    const shown = await adminApi('GET', `/admin/api/calls/${encodeURIComponent(adminId)}`);
    assert.equal(shown.json.status, accepted ? 'cancelled' : 'completed', `${what}: shown ${shown.json.status}`);
  }
  t.diagnostic(JSON.stringify(tally));
});

test(`an operator pauses one call: its next round parks, no effect runs; resumed, it completes once (${VIA})`, { timeout: 2 * 60_000 }, async () => {
  const call = await atLastQuestion('held-1');
  const paused = await adminApi('POST', '/admin/api/calls/pause', { ids: [call.id] });
  assert.deepEqual(paused.json.done, [call.id], JSON.stringify(paused.json));
  const shown = await adminApi('GET', `/admin/api/calls/${encodeURIComponent(call.id)}`);
  assert.equal(shown.json.status, 'parked', JSON.stringify(shown.json));
  assert.match(shown.json.note ?? '', /^paused by an operator \(ops\)/);
  const r = await last(call);
  assert.equal(r.status, 503, r.text);
  assert.equal(r.json?.error?.data?.kept, true, r.text);
  assert.equal(ticketsFor('held-1'), 0, 'paused: its effect did not run');
  const resumed = await adminApi('POST', '/admin/api/calls/resume', { ids: [call.id] });
  assert.deepEqual(resumed.json.done, [call.id], JSON.stringify(resumed.json));
  const again = await last(call);
  assert.match(again.json?.result?.content?.[0]?.text ?? '', /^Deployed /, again.text);
  assert.equal(ticketsFor('held-1'), 1, 'its effect ran once');
  const late = await adminApi('POST', '/admin/api/calls/pause', { ids: [call.id] });
  assert.equal(late.json.skipped[call.id], 'finished', JSON.stringify(late.json));
});

test(`an operator pauses a task: its alarm parks it; resumed, it completes once (${VIA})`, { timeout: 2 * 60_000 }, async () => {
  const tag = 'held-task';
  const meta = modernMeta(TASK_CAPS);
  const created = await send(server.url, 'tools/call', { name: 'hoard_task', arguments: { tag, count: 1, bytes: 10 }, _meta: meta });
  const { taskId } = created.json?.result ?? {};
  assert.ok(taskId, created.text);
  const until = (want) => taskUntil(taskId, want);
  await until((t) => t?.inputRequests?.start);
  const id = taskAdminId(taskId);
  const paused = await adminApi('POST', '/admin/api/calls/pause', { ids: [id] });
  assert.deepEqual(paused.json.done, [id], JSON.stringify(paused.json));
  const update = (key) => send(server.url, 'tasks/update', { taskId, inputResponses: { [key]: { action: 'accept', content: { go: true } } }, _meta: meta }, { headers: { 'mcp-name': taskId } });
  await update('start');
  await new Promise((ok) => setTimeout(ok, 1_500));
  assert.equal(ticketsFor(tag), 0, 'paused: its effect did not run');
  const resumed = await adminApi('POST', '/admin/api/calls/resume', { ids: [id] });
  assert.deepEqual(resumed.json.done, [id], JSON.stringify(resumed.json));
  await until((t) => t?.inputRequests?.finish);
  await update('finish');
  const done = await until((t) => t?.status === 'completed');
  assert.equal(done.result?.content?.[0]?.text, '10 bytes of outputs', JSON.stringify(done));
  assert.equal(ticketsFor(tag), 1, 'its effect ran once');
});

test(`an operator asks a durable call again from a question, then answers it for its client (${VIA})`, { timeout: 2 * 60_000 }, async () => {
  const call = await atLastQuestion('ops-answer');
  const rewound = await adminApi('POST', '/admin/api/calls/rewind', { id: call.id, key: 'target' });
  assert.deepEqual(rewound.json.done, [call.id], JSON.stringify(rewound.json));
  // The client answers the question it holds: it is asked `target` again.
  const r1 = await last(call);
  assert.deepEqual(Object.keys(r1.json?.result?.inputRequests ?? {}), ['target'], r1.text);
  const r2 = await callTool(server.url, 'deploy', call.args, { requestState: r1.json.result.requestState, inputResponses: ELICITED }, { id: 4 });
  assert.deepEqual(Object.keys(r2.json?.result?.inputRequests ?? {}), ['safety'], r2.text);
  // The operator answers `safety` for it (a sampling result).
  const answered = await adminApi('POST', '/admin/api/calls/answer', { id: call.id, key: 'safety', answer: SAMPLED.safety });
  assert.deepEqual(answered.json.done, [call.id], JSON.stringify(answered.json));
  const again = await adminApi('POST', '/admin/api/calls/answer', { id: call.id, key: 'safety', answer: SAMPLED.safety });
  assert.equal(again.json.skipped[call.id], 'not waiting for this question', JSON.stringify(again.json));
  const shown = await adminApi('GET', `/admin/api/calls/${encodeURIComponent(call.id)}`);
  assert.equal(shown.json.answers.find((a) => a.key === 'safety')?.by, 'operator:ops', JSON.stringify(shown.json));
  assert.deepEqual(shown.json.notes.map((n) => n.what), ['asked again from "target"', 'answered "safety" (operator:ops)']);
  // The client's next round goes on with it and completes, the effect once.
  const done = await callTool(server.url, 'deploy', call.args, { requestState: r2.json.result.requestState, inputResponses: {} }, { id: 5 });
  assert.match(done.json?.result?.content?.[0]?.text ?? '', /^Deployed /, done.text);
  assert.equal(ticketsFor('ops-answer'), 1, 'its effect ran once');
  const late = await adminApi('POST', '/admin/api/calls/rewind', { id: call.id, key: 'target' });
  assert.equal(late.json.skipped[call.id], 'finished', JSON.stringify(late.json));
});

test(`an operator answers a task for its client; no rewind past its effect (${VIA})`, { timeout: 2 * 60_000 }, async () => {
  const tag = 'ops-task';
  const meta = modernMeta(TASK_CAPS);
  const created = await send(server.url, 'tools/call', { name: 'hoard_task', arguments: { tag, count: 1, bytes: 10 }, _meta: meta });
  const { taskId } = created.json?.result ?? {};
  assert.ok(taskId, created.text);
  const until = (want) => taskUntil(taskId, want);
  await until((t) => t?.inputRequests?.start);
  const id = taskAdminId(taskId);
  const go = { action: 'accept', content: { go: true } };
  const answered = await adminApi('POST', '/admin/api/calls/answer', { id, key: 'start', answer: go });
  assert.deepEqual(answered.json.done, [id], JSON.stringify(answered.json));
  // Its alarm runs it on: the effect, then the next question.
  await until((t) => t?.inputRequests?.finish);
  assert.equal(ticketsFor(tag), 1);
  const refused = await adminApi('POST', '/admin/api/calls/rewind', { id, key: 'start' });
  assert.equal(refused.json.skipped[id], 'an effect ran on that answer', JSON.stringify(refused.json));
  await adminApi('POST', '/admin/api/calls/answer', { id, key: 'finish', answer: go });
  const done = await until((t) => t?.status === 'completed');
  assert.equal(done.result?.content?.[0]?.text, '10 bytes of outputs', JSON.stringify(done));
  assert.equal(ticketsFor(tag), 1, 'its effect ran once');
});
