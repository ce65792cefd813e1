// Long calls (issue 42: storage that grows with the work) against
// `wrangler dev` (and, through the twin, plain `workerd serve`), each
// effect's runs counted at a webhook:
// - a durable call of 1,000 rounds with 20 KB answers (an agent loop
//   asking the client's model) completes on the 2026-07-28 wire, and its
//   late rounds take about what its early ones did;
// - `once` outputs of 5 × 500 KB, and one of 5 MB, on the durable wire,
//   as a task and in a 2025-11-25 session (the official v1 SDK client):
//   each effect runs exactly once, an exact retry runs nothing again, and
//   the call completes (each was past the 2 MB a SQLite row holds).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, VIA } from './server.mjs';
import { callTool, startWebhook } from './webhook.mjs';
import { modernMeta, send } from './modern.mjs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const ROUNDS = Number(process.env.LONG_ROUNDS ?? 1000);
const GO = (key) => ({ [key]: { action: 'accept', content: { go: true } } });
const TASK_CAPS = { elicitation: { form: {} }, extensions: { 'io.modelcontextprotocol/tasks': {} } };

let server;
let hook;

before(async () => {
  hook = await startWebhook();
  server = await startServer({ vars: { TICKET_WEBHOOK: hook.url('/long') } });
});

after(async () => {
  await server?.stop();
  await hook?.stop();
});

const runsOf = (tag) => hook.hits.filter((h) => h.body?.service === tag).length;

test(`a durable call of ${ROUNDS} rounds with 20 KB answers completes (${VIA})`, { timeout: 15 * 60_000 }, async (t) => {
  const args = { rounds: ROUNDS };
  const text = 'z'.repeat(20_000);
  let r = await callTool(server.url, 'long_talk', args);
  const times = [];
  for (let i = 0; i < ROUNDS; i++) {
    assert.equal(r.json?.result?.resultType, 'input_required', `round ${i}: ${r.text.slice(0, 300)}`);
    const answer = { [`s${i}`]: { role: 'assistant', model: 'e2e-model', content: { type: 'text', text } } };
    const started = performance.now();
    r = await callTool(server.url, 'long_talk', args, { requestState: r.json.result.requestState, inputResponses: answer }, { id: i + 2 });
    times.push(performance.now() - started);
  }
  assert.equal(r.json?.result?.content?.[0]?.text, `${ROUNDS} rounds, ${ROUNDS * 20_000} bytes`, r.text.slice(0, 300));
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const early = median(times.slice(10, 60));
  const late = median(times.slice(-50));
  t.diagnostic(`round time (median): rounds 10-59 ${early.toFixed(1)} ms, last 50 ${late.toFixed(1)} ms`);
});

/** `hoard` on the durable wire: start, effects, finish. */
async function hoardDurable(tag, count, bytes) {
  const args = { tag, count, bytes };
  const r1 = await callTool(server.url, 'hoard', args);
  assert.equal(r1.json?.result?.resultType, 'input_required', r1.text.slice(0, 300));
  const effects = { requestState: r1.json.result.requestState, inputResponses: GO('start') };
  const r2 = await callTool(server.url, 'hoard', args, effects, { id: 2 });
  assert.deepEqual(Object.keys(r2.json?.result?.inputRequests ?? {}), ['finish'], r2.text.slice(0, 300));
  // The reply was lost: the exact retry gets it again, nothing runs again.
  const again = await callTool(server.url, 'hoard', args, effects, { id: 2 });
  assert.equal(again.json?.result?.requestState, r2.json.result.requestState, again.text.slice(0, 300));
  const r3 = await callTool(server.url, 'hoard', args, { requestState: r2.json.result.requestState, inputResponses: GO('finish') }, { id: 3 });
  assert.equal(r3.json?.result?.content?.[0]?.text, `${count * bytes} bytes of outputs`, r3.text.slice(0, 300));
  assert.equal(runsOf(tag), count, `${tag}: each effect ran once`);
}

test(`once outputs of 5 × 500 KB and of 5 MB on the durable wire: each effect once, the call completes (${VIA})`, { timeout: 5 * 60_000 }, async () => {
  await hoardDurable('durable-5x500k', 5, 500_000);
  await hoardDurable('durable-5m', 1, 5_000_000);
});

test(`once outputs of 5 × 500 KB as a task: each effect once, the task completes (${VIA})`, { timeout: 5 * 60_000 }, async () => {
  const tag = 'task-5x500k';
  const meta = modernMeta(TASK_CAPS);
  const created = await send(server.url, 'tools/call', { name: 'hoard_task', arguments: { tag, count: 5, bytes: 500_000 }, _meta: meta });
  const { taskId } = created.json?.result ?? {};
  assert.ok(taskId, created.text.slice(0, 300));
  const get = () => send(server.url, 'tasks/get', { taskId, _meta: meta }, { headers: { 'mcp-name': taskId } });
  const until = async (want) => {
    for (const deadline = Date.now() + 60_000; ;) {
      const t = (await get()).json?.result;
      if (want(t)) return t;
      assert.ok(Date.now() < deadline && !['failed', 'cancelled'].includes(t?.status), JSON.stringify(t).slice(0, 300));
      await new Promise((ok) => setTimeout(ok, 200));
    }
  };
  const update = (key) => send(server.url, 'tasks/update', { taskId, inputResponses: GO(key), _meta: meta }, { headers: { 'mcp-name': taskId } });
  await until((t) => t?.status === 'input_required' && t.inputRequests?.start);
  await update('start');
  await until((t) => t?.status === 'input_required' && t.inputRequests?.finish);
  await update('finish');
  const done = await until((t) => t?.status === 'completed');
  assert.equal(done.result?.content?.[0]?.text, '2500000 bytes of outputs', JSON.stringify(done).slice(0, 300));
  // Polled on, the task stays done and nothing runs again.
  for (let i = 0; i < 5; i++) await get();
  assert.equal(runsOf(tag), 5, 'each effect ran once');
});

test(`once outputs of 5 × 500 KB in a session (the official v1 client): each effect once, the call completes (${VIA})`, { timeout: 5 * 60_000 }, async () => {
  const tag = 'session-5x500k';
  const client = new Client({ name: 'long-e2e', version: '1' }, { capabilities: { elicitation: {} } });
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { go: true } }));
  const transport = new StreamableHTTPClientTransport(new URL(server.url), {
    reconnectionOptions: { initialReconnectionDelay: 100, maxReconnectionDelay: 500, reconnectionDelayGrowFactor: 1.5, maxRetries: 5 },
  });
  await client.connect(transport);
  try {
    const r = await client.callTool({ name: 'hoard', arguments: { tag, count: 5, bytes: 500_000 } }, undefined, { timeout: 120_000 });
    assert.equal(r.content?.[0]?.text, '2500000 bytes of outputs', JSON.stringify(r).slice(0, 300));
  } finally {
    await client.close();
  }
  assert.equal(runsOf(tag), 5, 'each effect ran once');
});
