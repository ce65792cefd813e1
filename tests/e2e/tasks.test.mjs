// The tasks extension (SEP-2663) against `wrangler dev`: a task runs in its
// own Durable Object while the client only polls, takes input through
// tasks/update, stops on tasks/cancel, and survives a kill -9 of wrangler
// dev in the middle of its work, its side effect running once.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { freshPersistDir, startWrangler } from './wrangler.mjs';
import { startWebhook } from './webhook.mjs';
import { modernMeta, modernRequest, send } from './modern.mjs';
import { SseReader, TIMEOUT } from './sse.mjs';

const EXT = 'io.modelcontextprotocol/tasks';
const CAPS = { elicitation: { form: {} }, extensions: { [EXT]: {} } };

let server;
const extra = new Set();
before(async () => { server = await startWrangler(); });
after(async () => {
  await server?.stop();
  for (const s of extra) await s.stop();
});

async function callTool(url, name, args) {
  const r = await send(url, 'tools/call', { name, arguments: args, _meta: modernMeta(CAPS) });
  assert.equal(r.status, 200, r.text);
  return r.json.result;
}

async function taskMethod(url, method, taskId, params = {}) {
  const r = await send(url, method, { taskId, ...params, _meta: modernMeta(CAPS) },
    { headers: { 'mcp-name': taskId } });
  assert.equal(r.status, 200, r.text);
  return r.json.result;
}

/** Polls tasks/get every pollIntervalMs until `done(task)`; returns every status seen. */
async function pollUntil(url, taskId, done, timeoutMs = 30_000) {
  const seen = [];
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const t = await taskMethod(url, 'tasks/get', taskId);
    seen.push(t);
    if (done(t)) return { task: t, seen };
    if (Date.now() > deadline) assert.fail(`task ${taskId} stuck: ${JSON.stringify(t)}`);
    await new Promise((r) => setTimeout(r, t.pollIntervalMs ?? 500));
  }
}
const terminal = (t) => ['completed', 'failed', 'cancelled'].includes(t.status);

test('a task that works for seconds reports its status while the client polls, then completes', { timeout: 60_000 }, async () => {
  const created = await callTool(server.url, 'count_slowly', { to: 4, step_ms: 700 });
  assert.equal(created.resultType, 'task', JSON.stringify(created));
  assert.match(created.taskId, /^[0-9a-f]{32}$/);
  assert.ok(Number.isInteger(created.ttlMs) && Number.isInteger(created.pollIntervalMs));
  const { task, seen } = await pollUntil(server.url, created.taskId, terminal);
  assert.equal(task.status, 'completed', JSON.stringify(task));
  assert.match(task.result.content[0].text, /^Counted to 4; recorded /);
  const messages = new Set(seen.filter((t) => t.status === 'working').map((t) => t.statusMessage));
  assert.ok(messages.size >= 2, `status moved on while polling: ${[...messages]}`);
  assert.ok([...messages].every((m) => /^step [1-4] of 4$/.test(m)), [...messages].join());
});

test('a task that needs input mid-way gets it through tasks/update', { timeout: 60_000 }, async () => {
  const created = await callTool(server.url, 'confirm_delete', { filename: 'report.txt' });
  assert.equal(created.resultType, 'task');
  const { task } = await pollUntil(server.url, created.taskId, (t) => t.status !== 'working');
  assert.equal(task.status, 'input_required');
  assert.deepEqual(Object.keys(task.inputRequests), ['confirm']);
  assert.equal(task.inputRequests.confirm.method, 'elicitation/create');
  assert.equal(task.inputRequests.confirm.params.message, 'Delete report.txt?');
  const ack = await taskMethod(server.url, 'tasks/update', created.taskId,
    { inputResponses: { confirm: { action: 'accept', content: { confirm: true } } } });
  assert.deepEqual(ack, { resultType: 'complete' });
  const done = await pollUntil(server.url, created.taskId, terminal);
  assert.equal(done.task.status, 'completed');
  assert.equal(done.task.result.content[0].text, 'Deleted report.txt.');
});

test('a cancelled task ends cancelled and never runs on', { timeout: 60_000 }, async () => {
  const created = await callTool(server.url, 'slow_compute', { seconds: 2, label: 'c' });
  const ack = await taskMethod(server.url, 'tasks/cancel', created.taskId);
  assert.deepEqual(ack, { resultType: 'complete' });
  await new Promise((r) => setTimeout(r, 2500));
  const t = await taskMethod(server.url, 'tasks/get', created.taskId);
  assert.equal(t.status, 'cancelled');
  assert.equal(t.result, undefined);
});

test('a subscriptions/listen stream that names a task hears notifications/tasks until it completes', { timeout: 60_000 }, async () => {
  const created = await callTool(server.url, 'count_slowly', { to: 2, step_ms: 500 });
  const { headers, body } = modernRequest('subscriptions/listen',
    { notifications: { taskIds: [created.taskId] }, _meta: modernMeta(CAPS) }, { id: 'listen-1' });
  const controller = new AbortController();
  const r = await fetch(server.url, { method: 'POST', headers, body: JSON.stringify(body), signal: controller.signal });
  assert.equal(r.status, 200);
  const stream = new SseReader(r, controller);
  try {
    const ack = await stream.next({ timeoutMs: 10_000 });
    assert.notEqual(ack, TIMEOUT);
    assert.equal(ack.message.method, 'notifications/subscriptions/acknowledged');
    assert.deepEqual(ack.message.params.notifications.taskIds, [created.taskId]);
    const statuses = [];
    for (;;) {
      const ev = await stream.next({ timeoutMs: 15_000 });
      assert.notEqual(ev, TIMEOUT, `no notifications/tasks after ${JSON.stringify(statuses)}`);
      assert.ok(ev, 'the listen stream stays open');
      if (ev.message?.method !== 'notifications/tasks') continue;
      assert.equal(ev.message.params.taskId, created.taskId);
      assert.equal(ev.message.params._meta['io.modelcontextprotocol/subscriptionId'], 'listen-1');
      statuses.push(ev.message.params.status);
      if (ev.message.params.status === 'completed') {
        assert.match(ev.message.params.result.content[0].text, /^Counted to 2; /);
        break;
      }
    }
    assert.ok(statuses.includes('working'), statuses.join());
  } finally {
    await stream.close();
  }
});

test('another client cannot see a task without its id, and a made-up id is unknown', async () => {
  const r = await send(server.url, 'tasks/get', { taskId: 'f'.repeat(32), _meta: modernMeta(CAPS) },
    { headers: { 'mcp-name': 'f'.repeat(32) } });
  assert.equal(r.status, 400, r.text);
  assert.equal(r.json.error.code, -32602);
});

test('a task survives kill -9 of wrangler dev mid-work and finishes with its side effect run once', { timeout: 180_000 }, async () => {
  const hook = await startWebhook();
  const P = freshPersistDir();
  const vars = { TICKET_WEBHOOK: hook.url('/count') };
  try {
    const first = await startWrangler({ persistTo: P, vars });
    extra.add(first);
    const created = await callTool(first.url, 'count_slowly', { to: 5, step_ms: 1000 });
    assert.equal(created.resultType, 'task');
    // Mid-work: some steps done, not all.
    await pollUntil(first.url, created.taskId, (t) => /^step [2-4] of 5$/.test(t.statusMessage ?? ''));
    first.kill();
    extra.delete(first);
    assert.equal(hook.count('/count'), 0, 'no side effect before the work is done');

    const second = await startWrangler({ persistTo: P, vars });
    extra.add(second);
    const { task } = await pollUntil(second.url, created.taskId, terminal, 60_000);
    assert.equal(task.status, 'completed', JSON.stringify(task));
    assert.match(task.result.content[0].text, /^Counted to 5; recorded /);
    // Polls after the end change nothing: one side effect, with the task's key.
    await taskMethod(second.url, 'tasks/get', created.taskId);
    assert.equal(hook.count('/count'), 1);
    assert.equal(hook.hits[0].idempotencyKey, `${created.taskId}:record`);
    assert.deepEqual(hook.hits[0].body, { count: 5, idempotencyKey: `${created.taskId}:record` });
  } finally {
    await hook.stop();
  }
});
