// The MCP Inspector's CLI (npm `@modelcontextprotocol/inspector`, run as
// `mcp-inspector --cli`, pinned in package.json) against `wrangler dev`
// serving the fixtures worker: it lists the tools, resources and prompts and
// calls a tool, as a developer checking a server by hand would. The Inspector
// declares no elicitation capability (its CLI cannot answer a form), so a
// tool that pauses for one gets an error, and that error must say which
// capability is missing.
//
// By default (no --protocol-era) the CLI speaks the 2025-11-25 session wire:
// `initialize`, then requests carrying Mcp-Session-Id and
// MCP-Protocol-Version. A recording proxy between the two checks that, and
// `--protocol-era modern` (2026-07-28, no session) is run as well.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startWrangler } from './wrangler.mjs';

const ROOT = resolve(import.meta.dirname, '../..');
// The package's `mcp-inspector` bin: the launcher, which runs the CLI for --cli.
const INSPECTOR = join(ROOT, 'node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js');
// Its own catalog and client config live under ~/.mcp-inspector: a fresh home
// keeps the run from reading or writing the developer's.
const HOME = mkdtempSync(join(tmpdir(), 'durable-mcp-inspector-home-'));

let server;
let proxy;
/** What reached the server through the proxy: {method, path, version, session, body}. */
const seen = [];

before(async () => {
  server = await startWrangler();
  proxy = await startProxy(server.url);
});
after(async () => {
  if (proxy) {
    const closed = new Promise((ok) => proxy.close(ok));
    proxy.closeAllConnections();
    await closed;
  }
  await server?.stop();
  rmSync(HOME, { recursive: true, force: true });
});

/**
 * A loopback HTTP proxy to `target` that records each request (its JSON-RPC
 * body, MCP-Protocol-Version and Mcp-Session-Id) and streams the answer back
 * unchanged, SSE included.
 */
async function startProxy(target) {
  const origin = new URL(target).origin;
  const skip = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'keep-alive']);
  const srv = createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = Buffer.concat(chunks);
    let json;
    try { json = body.length ? JSON.parse(body.toString('utf8')) : undefined; } catch { json = undefined; }
    seen.push({
      method: req.method, path: req.url, body: json,
      version: req.headers['mcp-protocol-version'], session: req.headers['mcp-session-id'],
    });
    const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !skip.has(k)));
    const abort = new AbortController();
    res.on('close', () => abort.abort());
    try {
      const r = await fetch(origin + req.url, {
        method: req.method, headers, body: body.length ? body : undefined, signal: abort.signal,
      });
      const out = {};
      r.headers.forEach((v, k) => { if (!skip.has(k) && k !== 'content-encoding') out[k] = v; });
      res.writeHead(r.status, out);
      if (r.body) for await (const c of r.body) res.write(c);
      res.end();
    } catch (e) {
      if (!res.headersSent) res.writeHead(502);
      res.end(String(e));
    }
  });
  await new Promise((ok) => srv.listen(0, '127.0.0.1', ok));
  srv.url = `http://127.0.0.1:${srv.address().port}/mcp`;
  return srv;
}

/**
 * Runs `mcp-inspector --cli <proxy url> --transport http --format json ...args`
 * (killed after `timeoutMs`); resolves {status, stdout, stderr, json} where
 * json is stdout parsed, or undefined. Async, not spawnSync: the proxy runs
 * in this process.
 */
function inspector(args, { timeoutMs = 60_000 } = {}) {
  return new Promise((ok, fail) => {
    const child = spawn(process.execPath, [
      INSPECTOR, '--cli', proxy.url, '--transport', 'http', '--format', 'json', '--quiet',
      // Never start an interactive OAuth login (the fixtures need none).
      '--stored-auth-only', '--connect-timeout', '20000', ...args,
    ], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env, HOME, XDG_CONFIG_HOME: join(HOME, '.config'),
        NO_PROXY: '127.0.0.1,localhost', no_proxy: '127.0.0.1,localhost', NO_COLOR: '1',
      },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (e) => { clearTimeout(timer); fail(e); });
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      let json;
      try { json = JSON.parse(stdout); } catch { json = undefined; }
      ok({ status, signal, stdout, stderr, json });
    });
  });
}

/**
 * The result the Inspector printed (`--format json`: `{"result": ...}` on
 * stdout); fails with everything it printed unless it exited 0 with one.
 */
function ok(r, what) {
  assert.equal(r.status, 0, `${what}: exit ${r.status} (${r.signal ?? 'no signal'})\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
  assert.ok(r.json?.result, `${what}: stdout is {"result": ...}\n${r.stdout}`);
  return r.json.result;
}

/** Everything the Inspector printed for a failed call, as one string. */
function shown(r) {
  return `${r.stdout}\n${r.stderr}`;
}

for (const era of ['legacy', 'modern']) {
  const eraArgs = era === 'legacy' ? [] : ['--protocol-era', era];
  describe(`Inspector CLI, ${era === 'legacy' ? 'default (2025-11-25 session)' : '--protocol-era modern (2026-07-28)'}`, () => {
    test('tools/list names the fixture tools with their schemas', async () => {
      const { tools } = ok(await inspector([...eraArgs, '--method', 'tools/list']), 'tools/list');
      assert.ok(Array.isArray(tools), JSON.stringify(tools));
      const byName = new Map(tools.map((t) => [t.name, t]));
      for (const name of ['add', 'deploy', 'test_simple_text', 'test_elicitation']) {
        assert.ok(byName.has(name), `${name} listed among ${[...byName.keys()].join(', ')}`);
      }
      assert.deepEqual(Object.keys(byName.get('add').inputSchema.properties).sort(), ['a', 'b']);
      assert.deepEqual(byName.get('test_elicitation').inputSchema.required, ['message']);
    });

    test('resources/list names the fixture resources', async () => {
      const { resources } = ok(await inspector([...eraArgs, '--method', 'resources/list']), 'resources/list');
      const uris = resources.map((r) => r.uri);
      for (const uri of ['durable-mcp://about', 'test://static-text', 'test://static-binary']) {
        assert.ok(uris.includes(uri), `${uri} listed among ${uris.join(', ')}`);
      }
      const text = resources.find((r) => r.uri === 'test://static-text');
      assert.equal(text.name, 'static-text');
      assert.equal(text.mimeType, 'text/plain');
    });

    test('resources/read returns the text', async () => {
      const { contents } = ok(await inspector([...eraArgs, '--method', 'resources/read', '--uri', 'test://static-text']), 'resources/read');
      assert.deepEqual(contents, [{
        uri: 'test://static-text', mimeType: 'text/plain', text: 'This is the content of the static text resource.',
      }]);
    });

    test('prompts/list names the fixture prompts with their arguments', async () => {
      const { prompts } = ok(await inspector([...eraArgs, '--method', 'prompts/list']), 'prompts/list');
      const byName = new Map(prompts.map((p) => [p.name, p]));
      for (const name of ['test_simple_prompt', 'test_prompt_with_arguments', 'test_prompt_with_image']) {
        assert.ok(byName.has(name), `${name} listed among ${[...byName.keys()].join(', ')}`);
      }
      assert.deepEqual(byName.get('test_prompt_with_arguments').arguments.map((a) => [a.name, a.required]),
        [['arg1', true], ['arg2', true]]);
    });

    test('prompts/get fills in the arguments', async () => {
      const r = await inspector([...eraArgs, '--method', 'prompts/get', '--prompt-name', 'test_prompt_with_arguments',
        '--prompt-args', 'arg1=one', 'arg2=two']);
      const { messages } = ok(r, 'prompts/get');
      assert.equal(messages[0].content.text, "Prompt with arguments: arg1='one', arg2='two'");
    });

    test('tools/call add returns the sum, as text and structured content', async () => {
      const r = await inspector([...eraArgs, '--method', 'tools/call', '--tool-name', 'add', '--tool-arg', 'a=2', 'b=40']);
      const result = ok(r, 'tools/call add');
      assert.notEqual(result.isError, true, JSON.stringify(result));
      assert.deepEqual(result.structuredContent, { sum: 42 });
      assert.deepEqual(JSON.parse(result.content[0].text), { sum: 42 });
    });

    test('a tool that needs elicitation: the error names the missing capability', async () => {
      const r = await inspector([...eraArgs, '--method', 'tools/call', '--tool-name', 'test_elicitation',
        '--tool-arg', 'message=Who are you?']);
      // Printed for the report (the tool must not pause and hang: the CLI
      // cannot answer a form).
      console.log(`[inspector ${era}] test_elicitation: exit ${r.status}\nstdout: ${r.stdout.trim()}\nstderr: ${r.stderr.trim()}`);
      assert.notEqual(r.status, null, 'the Inspector exited by itself');
      assert.notEqual(r.status, 0, `a call that cannot proceed is not a success:\n${shown(r)}`);
      // Its error envelope on stderr: {"error": {"code", "message"}}.
      let message;
      try { message = JSON.parse(r.stderr.trim().split('\n').at(-1)).error.message; } catch { message = shown(r); }
      assert.match(message, /elicitation/, `the message names the capability:\n${shown(r)}`);
    });
  });
}

test('the default CLI wire is the 2025-11-25 session: initialize, then the session id and version on every request', async () => {
  const from = seen.length;
  ok(await inspector(['--method', 'tools/call', '--tool-name', 'add', '--tool-arg', 'a=1', 'b=2']), 'tools/call add');
  const run = seen.slice(from);
  const init = run.find((s) => s.method === 'POST' && s.body?.method === 'initialize');
  assert.ok(init, `the Inspector sent initialize: ${JSON.stringify(run.map((s) => s.body?.method))}`);
  assert.equal(init.body.params.protocolVersion, '2025-11-25', JSON.stringify(init.body.params));
  assert.equal(init.body.params.capabilities.elicitation, undefined, 'it declares no elicitation');
  const call = run.find((s) => s.body?.method === 'tools/call');
  assert.ok(call?.session, 'tools/call inside the session');
  assert.equal(call.version, '2025-11-25');
});

test('--protocol-era modern speaks 2026-07-28: server/discover, no session, the version on every request', async () => {
  const from = seen.length;
  ok(await inspector(['--protocol-era', 'modern', '--method', 'tools/call', '--tool-name', 'add', '--tool-arg', 'a=1', 'b=2']), 'tools/call add');
  const run = seen.slice(from);
  assert.ok(run.some((s) => s.body?.method === 'server/discover'), JSON.stringify(run.map((s) => s.body?.method)));
  assert.ok(!run.some((s) => s.body?.method === 'initialize' || s.session), 'no initialize, no session');
  const call = run.find((s) => s.body?.method === 'tools/call');
  assert.equal(call.version, '2026-07-28');
  assert.equal(call.body.params._meta['io.modelcontextprotocol/protocolVersion'], '2026-07-28');
  assert.equal(call.body.params._meta['io.modelcontextprotocol/clientCapabilities'].elicitation, undefined);
});
