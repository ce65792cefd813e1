// The operator surfaces tried as an attacker would (issue 43), against
// `wrangler dev` (and, through the twin, plain `workerd serve`):
// - every admin path × method × (no query, a query, a junk cookie)
//   answers as an unknown path does, to the header names;
// - a console sign-in link signs in once: opened twice, from two
//   browsers, and by 5 at once;
// - an operator removed from ADMIN_TOKENS (a restart, the same
//   STATE_KEYS): their cookie and their unused link are the 404 at once;
// - task round lines carry no task id;
// - the deploy check over an export holding a paused `connect` call (URL
//   elicitation) says it continues;
// - 5,000 odd call ids create no object (the SQLite files counted);
// - the export holds no effect's output and no digest of an answer.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { startServer, VIA } from './server.mjs';
import { objectFiles } from './workerd.mjs';
import { modernMeta, send } from './modern.mjs';

const ROOT = resolve(import.meta.dirname, '../..');
const OPS = 'ops-e2e-3c9a1d5b2e8f4a6c0d7f';
const GONE = 'gone-e2e-8f4a6c0d7f3c9a1d5b2e';
const TASKS = { elicitation: { form: {} }, extensions: { 'io.modelcontextprotocol/tasks': {} } };
/** The user's answer to `file_change`: its effect's output quotes it. */
const REASON = 'reason-e2e-the-disk-is-full-71c3';
const TIMEOUT_MS = 20_000;

const STATE_KEYS = readFileSync(join(ROOT, '.dev.vars'), 'utf8').split('\n')
  .find((l) => l.startsWith('STATE_KEYS='))?.slice('STATE_KEYS='.length).trim();

let server;

before(async () => {
  server = await startServer({ vars: { ADMIN_TOKENS: `ops:${OPS},gone:${GONE}` } });
});

after(async () => {
  await server?.stop();
});

const origin = () => new URL(server.url).origin;
const bearer = (t) => ({ authorization: `Bearer ${t}` });

async function http(path, { method = 'GET', headers = {}, body } = {}) {
  const once = () => fetch(origin() + path, {
    method, headers, body, redirect: 'manual', signal: AbortSignal.timeout(TIMEOUT_MS),
  });
  // A kept-alive connection closed under the client is tried once more.
  const r = await once().catch(() => once());
  return { status: r.status, headers: r.headers, text: await r.text() };
}

/** What a scanner compares: status, content type, body (the path made `/nowhere`), header names. */
function shape(r, path) {
  const bare = path.split('?')[0];
  const names = [...r.headers.keys()].filter((n) => n !== 'date').sort();
  return { status: r.status, type: r.headers.get('content-type'), body: r.text.split(bare).join('/nowhere'), names };
}

async function link(token) {
  const r = await http('/admin/api/console', { method: 'POST', headers: bearer(token) });
  assert.equal(r.status, 200, r.text);
  return JSON.parse(r.text).link;
}

const cookieOf = (r) => r.headers.get('set-cookie')?.split(';')[0];

test(`an admin path without a credential is an unknown path (${VIA})`, { timeout: 5 * 60_000 }, async () => {
  const paths = ['/admin', '/admin/', '/admin/enter', '/admin/calls/d.x', '/admin/calls/d.x/cancel',
    '/admin/tools/deploy/pause', '/admin/api/calls', '/admin/api/calls/cancel', '/admin/api/calls/d.x',
    '/admin/api/tools', '/admin/api/tools/deploy/pause', '/admin/api/export', '/admin/api/purge',
    '/admin/api/console', '/admin/whatever'];
  const methods = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
  const variants = [
    { query: '', headers: {} },
    { query: '?x=1&access_token=leaked-e2e-1234', headers: {} },
    { query: '', headers: { cookie: 'dmcp-admin=junk.junk.junk' } },
  ];
  let compared = 0;
  for (const path of paths) {
    for (const method of methods) {
      for (const { query, headers } of variants) {
        const body = ['POST', 'PUT', 'PATCH'].includes(method) ? '{}' : undefined;
        const h = { ...headers, ...(body ? { 'content-type': 'application/json' } : {}) };
        const got = await http(path + query, { method, headers: h, body });
        const unknown = await http(`/nowhere${query}`, { method, headers: h, body });
        const what = `${method} ${path}${query} ${JSON.stringify(headers)}`;
        assert.equal(got.status, 404, `${what}: ${got.text}`);
        assert.deepEqual(shape(got, path), shape(unknown, '/nowhere'), what);
        assert.ok(!got.text.includes('leaked-e2e') && !unknown.text.includes('leaked-e2e'), what);
        compared++;
      }
    }
  }
  assert.equal(compared, paths.length * methods.length * variants.length);
});

test(`a sign-in link signs in once: twice, from two browsers, by 5 at once (${VIA})`, { timeout: 2 * 60_000 }, async () => {
  const l = await link(OPS);
  const first = await http(l);
  assert.equal(first.status, 303, first.text);
  const cookie = cookieOf(first);
  assert.equal((await http('/admin', { headers: { cookie } })).status, 200);
  // The same browser again, and another one: nothing.
  assert.equal((await http(l, { headers: { cookie } })).status, 404);
  assert.equal((await http(l)).status, 404);
  // Five at once, each a new browser: exactly one gets in.
  const l5 = await link(OPS);
  const opened = await Promise.all(Array.from({ length: 5 }, () => http(l5)));
  const statuses = opened.map((r) => r.status).sort();
  assert.deepEqual(statuses, [303, 404, 404, 404, 404], JSON.stringify(statuses));
  // The replay is the unknown path's answer.
  const unknown = await http('/nowhere');
  assert.deepEqual(shape(await http(l5), '/admin/enter'), shape(unknown, '/nowhere'));
});

test(`an operator removed from ADMIN_TOKENS loses the console and their links at once (${VIA})`, { timeout: 5 * 60_000 }, async () => {
  const cookie = cookieOf(await http(await link(GONE)));
  assert.equal((await http('/admin', { headers: { cookie } })).status, 200);
  const unused = await link(GONE);
  const ops = cookieOf(await http(await link(OPS)));
  // Restart with `gone` removed; the same STATE_KEYS and storage.
  const persistTo = server.persistTo;
  await server.stop();
  server = await startServer({ persistTo, vars: { ADMIN_TOKENS: `ops:${OPS}` } });
  const unknown = await http('/nowhere');
  const refused = await http('/admin', { headers: { cookie } });
  assert.deepEqual(shape(refused, '/admin'), shape(unknown, '/nowhere'));
  const cancel = await http('/admin/calls/d.x/cancel', {
    method: 'POST', headers: { cookie, origin: origin(), 'content-type': 'application/x-www-form-urlencoded' }, body: 'csrf=x',
  });
  assert.equal(cancel.status, 404, cancel.text);
  assert.equal((await http(unused)).status, 404);
  // The operator still configured is still signed in.
  assert.equal((await http('/admin', { headers: { cookie: ops } })).status, 200);
});

test(`task round lines carry no task id; the deploy check continues a paused URL elicitation; the export shows no effect (${VIA})`, { timeout: 10 * 60_000 }, async () => {
  // Three tasks, each paused at its question (its rounds logged).
  const taskIds = [];
  for (let i = 0; i < 3; i++) {
    const created = await send(server.url, 'tools/call', { name: 'confirm_delete', arguments: { filename: `f${i}.txt` }, _meta: modernMeta(TASKS) });
    assert.equal(created.json?.result?.resultType, 'task', created.text);
    const { taskId } = created.json.result;
    taskIds.push(taskId);
    const deadline = Date.now() + 30_000;
    for (;;) {
      const r = await send(server.url, 'tasks/get', { taskId, _meta: modernMeta(TASKS) }, { headers: { 'mcp-name': taskId } });
      if (r.json?.result?.status === 'input_required') break;
      assert.ok(Date.now() < deadline, `task stuck: ${r.text}`);
      await new Promise((ok) => setTimeout(ok, 200));
    }
  }
  // A `connect` call paused at its URL elicitation.
  const urlCaps = modernMeta({ elicitation: { form: {}, url: {} } });
  const connect = await send(server.url, 'tools/call', { name: 'connect', arguments: { service: 'github' }, _meta: urlCaps });
  assert.equal(connect.json?.result?.resultType, 'input_required', connect.text);
  // A `file_change` call whose effect (quoting the answer) ran, paused after it.
  const started = await send(server.url, 'tools/call', { name: 'file_change', arguments: { system: 'db' } });
  assert.equal(started.json?.result?.resultType, 'input_required', started.text);
  const filed = await send(server.url, 'tools/call', {
    name: 'file_change', arguments: { system: 'db' }, requestState: started.json.result.requestState,
    inputResponses: { reason: { action: 'accept', content: { reason: REASON } } },
  });
  assert.deepEqual(Object.keys(filed.json?.result?.inputRequests ?? {}), ['approve'], filed.text);

  // Round lines: the tasks' are there, and no task id is anywhere in the output.
  const log = readFileSync(server.logPath, 'utf8');
  const taskLines = log.split('\n').filter((l) => l.includes('"event":"mcp.round"') && l.includes('"wire":"task"'));
  assert.ok(taskLines.length >= 3, `task round lines: ${taskLines.length}`);
  for (const id of taskIds) assert.ok(!log.includes(id), `the task id ${id} in the server's output`);

  // The export: no effect's output, no digest of an answer; the check continues.
  const exported = await http('/admin/api/export', { headers: bearer(OPS) });
  assert.equal(exported.status, 200, exported.text);
  assert.ok(!exported.text.includes(REASON), 'neither the answer nor the effect quoting it');
  const calls = JSON.parse(exported.text);
  assert.ok(calls.some((c) => c.tool === 'connect') && calls.some((c) => c.tool === 'file_change'), exported.text.slice(0, 2000));
  for (const c of calls) {
    assert.equal(c.journal.once, undefined, `${c.id}: an effect's output`);
    assert.equal(c.journal.once_inputs, undefined, `${c.id}: digests of answers`);
  }
  const out = join(server.persistTo, 'operator-export.json');
  writeFileSync(out, exported.text);
  const check = spawnSync('cargo', ['test', '-p', 'fixtures-worker', '--test', 'server', '--', 'deploy_check', '--nocapture'], {
    cwd: ROOT, encoding: 'utf8', timeout: 10 * 60_000, env: { ...process.env, DEPLOY_CHECK: out, STATE_KEYS },
  });
  const said = `${check.stdout}\n${check.stderr}`;
  assert.equal(check.status, 0, said.slice(-4000));
  const lines = said.split('\n').filter((l) => l.startsWith('deploy-check '));
  assert.equal(lines.length, calls.length, said.slice(-4000));
  const connectLine = lines.find((l) => l.includes(' connect '));
  assert.match(connectLine ?? '', /"verdict":"continues"/);
});

test(`5,000 odd call ids create no object (${VIA})`, { timeout: 5 * 60_000 }, async () => {
  // The objects a listing reads (workerd stores nothing for a read).
  assert.equal((await http('/admin/api/calls', { headers: bearer(OPS) })).status, 200);
  const before = objectFiles(server.persistTo).length;
  const odd = (i) => {
    switch (i % 5) {
      case 0: return `d.s${100_000 + i}-0123456789abcdef0123456789abcdef`;
      case 1: return `d.s0-${i}`;
      case 2: return `d.${'a'.repeat(200 + (i % 300))}${i}`;
      case 3: return `d.S${i % 16}-0123456789abcdef0123456789abcdef`;
      default: return `d.${i.toString(16).padStart(32, 'g')}`;
    }
  };
  let i = 0;
  const worker = async () => {
    while (i < 5_000) {
      const id = odd(i++);
      const r = await http(`/admin/api/calls/${encodeURIComponent(id)}`, { headers: bearer(OPS) });
      assert.equal(r.status, 404, `${id}: ${r.text}`);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  // A cancel naming them acts on none.
  const ids = Array.from({ length: 50 }, (_, k) => odd(k));
  const cancel = await http('/admin/api/calls/cancel', {
    method: 'POST', headers: { ...bearer(OPS), 'content-type': 'application/json' }, body: JSON.stringify({ ids }),
  });
  assert.equal(cancel.status, 200, cancel.text);
  assert.deepEqual(JSON.parse(cancel.text).done, []);
  assert.equal(objectFiles(server.persistTo).length, before, 'no object was made');
});
