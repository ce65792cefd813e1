// The quickstart as a user gets it: examples/quickstart copied out of the
// repository, its one path dependency pointed at the durable-mcp crate, built
// and served by `wrangler dev` with its own wrangler.toml (which runs
// `worker-build`), called with the official TypeScript client. Its ticket
// webhook is a secret in the copy's .dev.vars, read by the tool from the
// Worker's env. Then `wrangler deploy --dry-run` of the copy, with the
// bundle size against the Workers limits.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { SkillsClient } from '@modelcontextprotocol/client/ext/skills';
import { startWrangler } from './wrangler.mjs';
import { callTool, META, startWebhook } from './webhook.mjs';
import { MODERN } from './modern.mjs';

const ROOT = resolve(import.meta.dirname, '../..');
const WRANGLER = join(ROOT, 'node_modules/wrangler/bin/wrangler.js');
// Workers limits on the compressed bundle: 3 MiB on the free plan, 10 MiB paid.
const FREE_LIMIT = 3 * 1024 * 1024;
const WASM_OPT = join(ROOT, 'node_modules/binaryen/bin/wasm-opt');
// The copy builds itself with worker-build. It must not try to download
// wasm-opt (GitHub is not reachable): the npm binaryen package ships one.
// Sharing the repository's target directory saves compiling the same
// crates again.
const BUILD_ENV = {
  DMCP_SKIP_BUILD: '0',
  CARGO_TARGET_DIR: join(ROOT, 'target'),
  ...(existsSync(WASM_OPT) && !process.env.WASM_OPT_BIN ? { WASM_OPT_BIN: WASM_OPT } : {}),
};

let dir;
let hook;
let server;
const clients = [];

/** Copies the quickstart the way a user would: the crate's own files only. */
function copyQuickstart() {
  const d = join(mkdtempSync(join(tmpdir(), 'durable-mcp-user-')), 'my-server');
  const skip = new Set(['build', 'target', '.wrangler', '.dev.vars']);
  cpSync(join(ROOT, 'examples/quickstart'), d, {
    recursive: true,
    filter: (src) => !skip.has(src.split('/').pop()),
  });
  // The one edit the README asks for: point the path dependency at durable-mcp.
  const manifest = join(d, 'Cargo.toml');
  const before = readFileSync(manifest, 'utf8');
  // Only the path: the features the quickstart picks stay as they are.
  const after = before.replace(/durable-mcp = \{ path = "[^"]*"/, `durable-mcp = { path = ${JSON.stringify(ROOT)}`);
  assert.notEqual(after, before, 'the quickstart has one path dependency on durable-mcp');
  writeFileSync(manifest, after);
  // The workspace's lock file, so the copy builds the same versions the
  // repository tested (and reuses their compiled artifacts).
  cpSync(join(ROOT, 'Cargo.lock'), join(d, 'Cargo.lock'));
  return d;
}

before(async () => {
  dir = copyQuickstart();
  hook = await startWebhook();
  writeFileSync(join(dir, '.dev.vars'), [
    'STATE_KEYS=dev:quickstart-e2e-key-0123456789abcdef',
    `TICKET_WEBHOOK=${hook.url('/tickets')}`,
    'ALLOWED_HOSTS=localhost,127.0.0.1,[::1]',
    '',
  ].join('\n'));
  server = await startWrangler({
    cwd: dir,
    // wrangler runs the copy's own build command (worker-build).
    env: BUILD_ENV,
    startupMs: 15 * 60_000,
  });
});

after(async () => {
  for (const c of clients) {
    try { await c.close(); } catch { /* already closed */ }
  }
  await server?.stop();
  await hook?.stop();
});

async function connect(handlers = {}) {
  const client = new Client(
    { name: 'quickstart-e2e', version: '0.0.1' },
    { capabilities: { elicitation: { form: {} }, sampling: {} }, versionNegotiation: { mode: { pin: MODERN } } },
  );
  if (handlers.onElicit) client.setRequestHandler('elicitation/create', handlers.onElicit);
  if (handlers.onSample) client.setRequestHandler('sampling/createMessage', handlers.onSample);
  clients.push(client);
  await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
  return client;
}

test('the copied quickstart lists tools whose schemas come from its Rust types', async () => {
  const client = await connect();
  const { tools } = await client.listTools({}, { cacheMode: 'bypass' });
  assert.deepEqual(tools.map((t) => t.name), ['add', 'backup', 'check_account_issue', 'deploy', 'initiate_human_handoff', 'promote']);
  const deploy = tools.find((t) => t.name === 'deploy');
  assert.equal(deploy.title, 'Deploy a service');
  assert.match(deploy.description, /^Deploys a service: asks where/);
  assert.deepEqual(deploy.inputSchema.required, ['service']);
  assert.deepEqual(deploy.inputSchema.properties.service, { type: 'string', description: 'The service to deploy.' });
  const add = tools.find((t) => t.name === 'add');
  assert.deepEqual(add.inputSchema.required.sort(), ['a', 'b']);
  assert.equal(add.outputSchema.properties.sum.type, 'number');
  const r = await client.callTool({ name: 'add', arguments: { a: 1, b: 2 } });
  assert.deepEqual(r.structuredContent, { sum: 3 });
});

test('promote waits for a person to approve on the worker\'s /approve page, then goes on', { timeout: 60_000 }, async () => {
  const pages = [];
  const client = new Client(
    { name: 'quickstart-e2e', version: '0.0.1' },
    { capabilities: { elicitation: { form: {}, url: {} } }, versionNegotiation: { mode: { pin: MODERN } } },
  );
  client.setRequestHandler('elicitation/create', async (req) => {
    const { mode, url } = req.params;
    assert.equal(mode, 'url');
    if (pages.length === 0) {
      // The person opens the page and posts its form.
      const form = await fetch(url);
      const html = await form.text();
      pages.push([form.status, html]);
      const id = /name=elicitationId value="([^"]+)"/.exec(html)?.[1];
      const posted = await fetch(new URL('/approve', url), {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: new URL(url).origin },
        body: new URLSearchParams({ elicitationId: id ?? '', note: 'ship it' }),
      });
      pages.push([posted.status, await posted.text()]);
    }
    return { action: 'accept' };
  });
  clients.push(client);
  await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
  const r = await client.callTool({ name: 'promote', arguments: { service: 'billing' } });
  assert.equal(pages[0][0], 200, pages[0][1]);
  assert.equal(pages[1][0], 200, pages[1][1]);
  assert.equal(r.content[0].text, 'Promoted billing to production (approved: ship it).');
});

test('on the wire, deploy answers input_required with a typed form and sealed state', async () => {
  const r = await callTool(server.url, 'deploy', { service: 'api' });
  assert.equal(r.status, 200, r.text);
  const res = r.json.result;
  assert.equal(res.resultType, 'input_required', r.text);
  assert.equal(typeof res.requestState, 'string');
  const form = res.inputRequests.target;
  assert.equal(form.method, 'elicitation/create');
  assert.deepEqual(form.params.requestedSchema.required, ['target']);
  assert.equal(form.params.requestedSchema.properties.target.description, 'Where to deploy.');
  assert.equal(hook.count(), 0, 'no ticket before the answers');
});

test('deploy pauses for the user and the model, then finishes, opening its ticket at the webhook from its secret', async () => {
  const elicits = [];
  const client = await connect({
    onElicit: async (req) => {
      elicits.push(req.params);
      return { action: 'accept', content: { target: 'production' } };
    },
    onSample: async () => ({ role: 'assistant', model: 'e2e', content: { type: 'text', text: 'yes' }, stopReason: 'endTurn' }),
  });
  const r = await client.callTool({ name: 'deploy', arguments: { service: 'billing' } });
  assert.deepEqual(r.content, [{ type: 'text', text: 'Deployed billing to production (ticket T-1).' }]);
  assert.equal(elicits.length, 1);
  assert.equal(elicits[0].message, 'Where should billing be deployed?');
  assert.deepEqual(elicits[0].requestedSchema.properties.target.oneOf.map((o) => o.const), ['staging', 'production']);
  // TICKET_WEBHOOK is a secret in .dev.vars: the tool read it from the env.
  assert.equal(hook.count('/tickets'), 1);
  assert.deepEqual(hook.hits[0].body, { service: 'billing', target: 'production' });
});

test('the banking chain (seed 004): check_account_issue names initiate_human_handoff with valid arguments, and the client follows it', async () => {
  const client = await connect();
  const { tools } = await client.listTools({}, { cacheMode: 'bypass' });
  // A client that follows nextTool, as the seed describes: depth-limited.
  let result = await client.callTool({ name: 'check_account_issue', arguments: { customer_id: '12345', issue: 'my account is locked' } });
  const chain = ['check_account_issue'];
  while (result._meta?.nextTool && chain.length < 5) {
    const { tool, arguments: args } = result._meta.nextTool;
    const listed = tools.find((t) => t.name === tool);
    assert.ok(listed, `the next tool ${tool} is listed`);
    for (const key of listed.inputSchema.required ?? []) assert.ok(key in args, `argument ${key} present`);
    chain.push(tool);
    result = await client.callTool({ name: tool, arguments: args });
  }
  assert.deepEqual(chain, ['check_account_issue', 'initiate_human_handoff']);
  assert.deepEqual(result.content, [{ type: 'text', text: 'Handed customer 12345 over to a specialist (account_locked, high urgency).' }]);
});

test('the durable-mcp CLI follows the banking chain to initiate_human_handoff', () => {
  const cli = join(process.env.CARGO_TARGET_DIR ?? join(ROOT, 'target'), 'debug', 'durable-mcp');
  const r = spawnSync(cli, ['call', server.url, 'check_account_issue', '--arg', 'customer_id=12345',
    '--arg', 'issue=my account is locked'], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(r.stdout.trim().split('\n'), [
    'This account lockout requires specialist assistance.',
    'Handed customer 12345 over to a specialist (account_locked, high urgency).',
  ]);
  assert.match(r.stderr, /▶ check_account_issue .*\n▶ initiate_human_handoff \{"customerId":"12345","issueType":"account_locked","urgency":"high"\}/);
});

test('backup runs as a task: answered with a task id at once, it works on in its object while the client polls tasks/get', { timeout: 60_000 }, async () => {
  const tasks = { 'io.modelcontextprotocol/tasks': {} };
  const meta = { ...META, 'io.modelcontextprotocol/clientCapabilities': { extensions: tasks } };
  const r = await callTool(server.url, 'backup', { database: 'orders', parts: 2 }, { _meta: meta });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.result.resultType, 'task', r.text);
  const taskId = r.json.result.taskId;
  const get = async () => {
    const res = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream',
        'mcp-protocol-version': MODERN, 'mcp-method': 'tasks/get', 'mcp-name': taskId },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tasks/get', params: { taskId, _meta: meta } }),
    });
    return (await res.json()).result;
  };
  let t = await get();
  const seen = new Set();
  const deadline = Date.now() + 30_000;
  while (!['completed', 'failed', 'cancelled'].includes(t.status) && Date.now() < deadline) {
    seen.add(t.statusMessage);
    await new Promise((ok) => setTimeout(ok, t.pollIntervalMs));
    t = await get();
  }
  assert.equal(t.status, 'completed', JSON.stringify(t));
  assert.deepEqual(t.result.content, [{ type: 'text', text: 'Backed up orders in 2 parts.' }]);
  assert.ok([...seen].every((m) => /^copying part [12] of 2$/.test(m)), [...seen].join());
  // Without the extension the same tool is an ordinary call (here, the
  // wire lets go of the client at each step: a state-only input_required).
  const plain = await callTool(server.url, 'backup', { database: 'orders', parts: 1 });
  assert.equal(plain.json.result.resultType, 'input_required', plain.text);
});

test('the copied quickstart serves its bundled skill, which the official SkillsClient verifies', async () => {
  const skills = new SkillsClient(await connect());
  const { skills: entries } = await skills.list();
  assert.deepEqual(entries.map((e) => e.uri), ['skill://safe-deploys/SKILL.md']);
  for (const { uri } of entries[0].resources) {
    const file = await skills.read(entries[0], uri);
    assert.equal(file.verified, true, uri);
    const onDisk = readFileSync(join(dir, 'skills', uri.slice('skill://'.length)));
    assert.deepEqual(Buffer.from(file.bytes), onDisk, uri);
  }
});

test('wrangler deploy --dry-run bundles the copied quickstart within the Workers size limit', (t) => {
  const out = join(dir, 'dist');
  const r = spawnSync(process.execPath, [WRANGLER, 'deploy', '--dry-run', '--outdir', out], {
    cwd: dir,
    encoding: 'utf8',
    timeout: 10 * 60_000,
    env: { ...process.env, ...BUILD_ENV },
  });
  assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
  const files = readdirSync(out).filter((f) => statSync(join(out, f)).isFile());
  const wasm = files.find((f) => f.endsWith('.wasm'));
  assert.ok(wasm, `a wasm module in the bundle: ${files.join(', ')}`);
  let raw = 0;
  let gzip = 0;
  for (const f of files) {
    const bytes = readFileSync(join(out, f));
    raw += bytes.length;
    gzip += gzipSync(bytes, { level: 9 }).length;
  }
  const wasmRaw = statSync(join(out, wasm)).size;
  const kb = (n) => `${(n / 1024).toFixed(0)} KiB`;
  t.diagnostic(`bundle: ${kb(raw)} raw, ${kb(gzip)} gzip (wasm ${kb(wasmRaw)} raw); limit ${kb(FREE_LIMIT)} gzip on the free plan`);
  console.log(`quickstart bundle: ${kb(raw)} raw, ${kb(gzip)} gzip (wasm ${kb(wasmRaw)}); Workers free-plan limit ${kb(FREE_LIMIT)} gzip`);
  assert.ok(gzip < FREE_LIMIT, `the bundle (${kb(gzip)} gzip) fits the free plan's ${kb(FREE_LIMIT)}`);
  assert.ok(existsSync(join(out, 'index.js')) || files.some((f) => f.endsWith('.js')));
});
