// A kept call past its size cap (issue 42) against `wrangler dev` (and,
// through the twin, plain `workerd serve`), each effect's runs counted at a
// webhook. The server's cap is lowered to 4 MB (`MAX_CALL_BYTES`; 64 MiB by
// default) so that a call passes it with six 1 MB `once` outputs:
// - on the durable wire, as a task, and in a 2025-11-25 session (the
//   official v1 SDK client), the round that passes the cap fails the call
//   once, with a clear error naming the cap and an error line in the
//   server's log;
// - then, for CAP_POLL_MS (60 s here; the 10 minutes by hand:
//   CAP_POLL_MS=600000), the durable call's client keeps retrying, the task
//   is polled and updated, the session's stream is read again: the answer
//   stays the same failure and no effect runs again.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { startServer, VIA } from './server.mjs';
import { callTool, startWebhook } from './webhook.mjs';
import { modernMeta, send } from './modern.mjs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const CAP = 4_000_000;
const POLL_MS = Number(process.env.CAP_POLL_MS ?? 60_000);
const COUNT = 6;
const BYTES = 1_000_000;
const GO = (key) => ({ [key]: { action: 'accept', content: { go: true } } });
const TASK_CAPS = { elicitation: { form: {} }, extensions: { 'io.modelcontextprotocol/tasks': {} } };
const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));

let server;
let hook;

before(async () => {
  hook = await startWebhook();
  server = await startServer({ vars: { TICKET_WEBHOOK: hook.url('/cap'), MAX_CALL_BYTES: String(CAP) } });
});

after(async () => {
  await server?.stop();
  await hook?.stop();
});

const runsOf = (tag) => hook.hits.filter((h) => h.body?.service === tag).length;
const args = (tag) => ({ tag, count: COUNT, bytes: BYTES });
const pastCap = (message) => assert.match(message ?? '', new RegExp(`grown past the ${CAP} bytes a kept call may hold`), message);

/** The durable call: fails at the round that passes the cap; then its client retries for POLL_MS. */
async function durable(tag) {
  const r1 = await callTool(server.url, 'hoard', args(tag));
  assert.equal(r1.json?.result?.resultType, 'input_required', r1.text.slice(0, 300));
  const retry = { requestState: r1.json.result.requestState, inputResponses: GO('start') };
  const failed = await callTool(server.url, 'hoard', args(tag), retry, { id: 2 });
  assert.equal(failed.json?.error?.code, -32603, failed.text.slice(0, 300));
  pastCap(failed.json.error.message);
  assert.equal(runsOf(tag), COUNT, 'each effect ran once before the call failed');
  let tries = 0;
  for (const until = Date.now() + POLL_MS; Date.now() < until; tries++) {
    const again = await callTool(server.url, 'hoard', args(tag), retry, { id: 3 + tries });
    assert.equal(again.json?.error?.code, -32603, again.text.slice(0, 300));
    pastCap(again.json.error.message);
    await sleep(500);
  }
  return tries;
}

/** The task: fails in its alarm's slice; then it is polled and updated for POLL_MS. */
async function task(tag) {
  const meta = modernMeta(TASK_CAPS);
  const created = await send(server.url, 'tools/call', { name: 'hoard_task', arguments: args(tag), _meta: meta });
  const { taskId } = created.json?.result ?? {};
  assert.ok(taskId, created.text.slice(0, 300));
  const get = async () => (await send(server.url, 'tasks/get', { taskId, _meta: meta }, { headers: { 'mcp-name': taskId } })).json?.result;
  const update = () => send(server.url, 'tasks/update', { taskId, inputResponses: GO('start'), _meta: meta }, { headers: { 'mcp-name': taskId } });
  for (const deadline = Date.now() + 60_000; !(await get())?.inputRequests?.start;) {
    assert.ok(Date.now() < deadline, 'the task asks to start');
    await sleep(200);
  }
  await update();
  let t;
  for (const deadline = Date.now() + 60_000; (t = await get())?.status !== 'failed';) {
    assert.ok(Date.now() < deadline && t?.status !== 'completed', JSON.stringify(t).slice(0, 300));
    await sleep(200);
  }
  pastCap(t.statusMessage ?? t.error?.message);
  assert.equal(runsOf(tag), COUNT, 'each effect ran once before the task failed');
  let polls = 0;
  for (const until = Date.now() + POLL_MS; Date.now() < until; polls++) {
    assert.equal((await get())?.status, 'failed');
    if (polls % 10 === 0) await update();
    await sleep(500);
  }
  return polls;
}

/** The session's call (the official v1 client): its call fails; then its stream is read again for POLL_MS. */
async function session(tag) {
  const client = new Client({ name: 'cap-e2e', version: '1' }, { capabilities: { elicitation: {} } });
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { go: true } }));
  const transport = new StreamableHTTPClientTransport(new URL(server.url), {
    reconnectionOptions: { initialReconnectionDelay: 100, maxReconnectionDelay: 500, reconnectionDelayGrowFactor: 1.5, maxRetries: 5 },
  });
  await client.connect(transport);
  try {
    await assert.rejects(
      client.callTool({ name: 'hoard', arguments: args(tag) }, undefined, { timeout: 120_000 }),
      (e) => { pastCap(e.message); return true; },
    );
    assert.equal(runsOf(tag), COUNT, 'each effect ran once before the call failed');
    let reads = 0;
    for (const until = Date.now() + POLL_MS; Date.now() < until; reads++) {
      // The call's stream, from its start: the same failure, nothing run.
      const r = await fetch(server.url, {
        headers: { accept: 'text/event-stream', 'mcp-session-id': transport.sessionId, 'mcp-protocol-version': '2025-11-25', 'last-event-id': 'c1:0' },
        signal: AbortSignal.timeout(5_000),
      }).catch(() => null);
      if (r) await r.text().catch(() => '');
      await sleep(1_000);
    }
    return reads;
  } finally {
    await client.close();
  }
}

test(`past its size cap a kept call fails once, and no effect runs again over ${POLL_MS / 1000} s of retries (${VIA})`, { timeout: POLL_MS + 5 * 60_000 }, async (t) => {
  const [tries, polls, reads] = await Promise.all([durable('cap-durable'), task('cap-task'), session('cap-session')]);
  t.diagnostic(`${tries} durable retries, ${polls} task polls, ${reads} session stream reads over ${POLL_MS / 1000} s`);
  for (const tag of ['cap-durable', 'cap-task', 'cap-session']) {
    assert.equal(runsOf(tag), COUNT, `${tag}: each effect ran once, and never again`);
  }
  // Each failure wrote an error line: its round, failed, with the error's code.
  const log = readFileSync(server.logPath, 'utf8');
  const failedRounds = log.split('\n').filter((l) => l.includes('"event":"mcp.round"') && l.includes('"level":"error"')
    && l.includes('"tool":"hoard') && l.includes('"code":-32603'));
  assert.ok(failedRounds.length >= 3, `an error line per call:\n${failedRounds.join('\n')}`);
  assert.ok(failedRounds.length <= 3 + 0, `no failure logged again:\n${failedRounds.join('\n')}`);
});
