// `durable-mcp new`: a new worker crate written by the CLI outside the
// repository (its durable-mcp dependency the repository, through --path),
// then used the way its README says: its own `npm test` (cargo test), its
// own `npm start` (wrangler dev with its own wrangler.toml, which builds it
// with worker-build), and its paused tool driven to completion over the
// 2026-07-28 wire; --durable's then checks a deploy as its README says (a
// call it paused, exported from its storage by scripts/export-paused.mjs,
// replayed by its own `npm run check-deploy`). The default crate, --durable
// and --task are built and served; --oauth is written and tested natively (serving it needs an
// issuer). Builds share one target directory, so each variant compiles only
// its own crate.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort, freshPersistDir, untilUp } from './wrangler.mjs';
import { modernMeta, send } from './modern.mjs';

const ROOT = resolve(import.meta.dirname, '../..');
// Built by `cargo test --workspace` (or `cargo build -p durable-mcp-client`).
const CLI = join(process.env.CARGO_TARGET_DIR ?? join(ROOT, 'target'), 'debug', 'durable-mcp');
// One target directory for every new crate, in every run: their
// dependencies are compiled once.
const SHARED_TARGET = join(ROOT, 'target', 'new-projects');
// worker-build must not download wasm-bindgen or wasm-opt (GitHub is not
// reachable): scripts/lib.sh exports both; these are the same fallbacks.
const WASM_OPT = join(ROOT, 'node_modules/binaryen/bin/wasm-opt');
const WASM_BINDGEN = join(homedir(), '.cargo/bin/wasm-bindgen');
const ENV = {
  ...process.env,
  CARGO_TARGET_DIR: SHARED_TARGET,
  npm_config_update_notifier: 'false',
  CLOUDFLARE_CF_FETCH_ENABLED: 'false',
  WRANGLER_SEND_METRICS: 'false',
  ...(!process.env.WASM_OPT_BIN && existsSync(WASM_OPT) ? { WASM_OPT_BIN: WASM_OPT } : {}),
  ...(!process.env.WASM_BINDGEN_BIN && existsSync(WASM_BINDGEN) ? { WASM_BINDGEN_BIN: WASM_BINDGEN } : {}),
};
const WRANGLER_VERSION = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).devDependencies.wrangler;
const TASKS = 'io.modelcontextprotocol/tasks';

const temps = [];
const links = [];
after(() => {
  // The node_modules links first: nothing may reach into the repository's.
  for (const l of links) unlinkSync(l);
  for (const t of temps) rmSync(t, { recursive: true, force: true });
});

/** A fresh directory outside the repository. */
function scratch() {
  const d = mkdtempSync(join(tmpdir(), 'durable-mcp-new-'));
  temps.push(d);
  return d;
}

/** Runs the CLI (in `cwd`, when given). */
function cli(args, cwd) {
  const r = spawnSync(CLI, args, { encoding: 'utf8', timeout: 60_000, cwd });
  return { status: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
}

/** `durable-mcp new demo --dir <scratch>/demo --path <repo> ...flags`; checks what it wrote. */
function create(flags) {
  const dir = join(scratch(), 'demo');
  const r = cli(['new', 'demo', '--dir', dir, '--path', ROOT, ...flags]);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^Created demo in /);
  for (const f of ['Cargo.toml', 'src/lib.rs', 'tests/deploy_check.rs', 'wrangler.toml', '.dev.vars', '.gitignore', 'package.json', 'README.md']) {
    assert.ok(existsSync(join(dir, f)), `${f} written`);
  }
  const read = (f) => readFileSync(join(dir, f), 'utf8');
  assert.match(read('.dev.vars'), /^STATE_KEYS=dev:[A-Za-z0-9_-]{32,}$/m);
  assert.match(read('Cargo.toml'), new RegExp(`^durable-mcp = \\{ path = ${literal(JSON.stringify(ROOT))} \\}$`, 'm'));
  assert.match(read('Cargo.toml'), /^\[workspace\]$/m);
  const pkg = JSON.parse(read('package.json'));
  assert.deepEqual(pkg.scripts, {
    start: 'wrangler dev', test: 'cargo test', 'check-deploy': 'cargo test --test deploy_check -- --nocapture', deploy: 'wrangler deploy',
  });
  assert.equal(pkg.devDependencies.wrangler, WRANGLER_VERSION);
  // What `npm install` would give it, without a download.
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  links.push(join(dir, 'node_modules'));
  return { dir, read };
}

/** `s` matched literally in a RegExp. */
function literal(s) {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The crate's own `npm test`: asserts it passed `count` cargo tests. */
function npmTest(dir, count) {
  const r = spawnSync('npm', ['test'], { cwd: dir, encoding: 'utf8', timeout: 10 * 60_000, env: ENV });
  const out = `${r.stdout}\n${r.stderr}`;
  assert.equal(r.status, 0, out.slice(-6000));
  assert.match(out, new RegExp(`test result: ok\\. ${count} passed; 0 failed`), out.slice(-6000));
}

/**
 * The crate's own `npm start` (its wrangler.toml's build command, then
 * wrangler dev), on a free port with fresh state; stopped by its process group.
 */
async function npmStart(dir) {
  const port = await freePort();
  const persistTo = freshPersistDir();
  temps.push(persistTo);
  const logPath = join(persistTo, 'npm-start.log');
  const log = openSync(logPath, 'a');
  const child = spawn('npm', ['start', '--', '--ip', '127.0.0.1', '--port', String(port), '--persist-to', persistTo,
    '--show-interactive-dev-session=false', '--inspector-port', String(await freePort())], {
    cwd: dir, detached: true, stdio: ['ignore', log, log], env: ENV,
  });
  return untilUp(child, { url: `http://127.0.0.1:${port}/mcp`, port, persistTo, logPath },
    { what: 'npm start', deadlineMs: 15 * 60_000, everyMs: 500 });
}

async function call(url, name, args, params = {}, caps) {
  const r = await send(url, 'tools/call', { name, arguments: args, ...params, _meta: modernMeta(caps) });
  assert.equal(r.status, 200, r.text);
  assert.ok(r.json?.result, r.text);
  return r.json.result;
}

/** `greet` over MRTR: the form, then the answer with the sealed state. */
async function greet(url, expected) {
  const args = { name: 'Ada' };
  const paused = await call(url, 'greet', args);
  assert.equal(paused.resultType, 'input_required', JSON.stringify(paused));
  assert.equal(typeof paused.requestState, 'string');
  const form = paused.inputRequests.manner;
  assert.equal(form.method, 'elicitation/create');
  assert.equal(form.params.message, 'How should I greet Ada?');
  assert.deepEqual(form.params.requestedSchema.properties.style.oneOf.map((o) => o.const), ['casual', 'formal']);
  const done = await call(url, 'greet', args, {
    requestState: paused.requestState,
    inputResponses: { manner: { action: 'accept', content: { style: 'formal' } } },
  });
  assert.deepEqual(done.content, [{ type: 'text', text: expected }], JSON.stringify(done));
}

async function toolNames(url) {
  const r = await send(url, 'tools/list', {});
  assert.equal(r.status, 200, r.text);
  return r.json.result.tools.map((t) => t.name).sort();
}

test('durable-mcp new refuses a directory that is not empty, and a name that is not a crate name', () => {
  const dir = scratch();
  writeFileSync(join(dir, 'mine.txt'), 'keep');
  const taken = cli(['new', 'demo', '--dir', dir]);
  assert.equal(taken.status, 1, taken.stderr);
  assert.match(taken.stderr, /already exists and is not empty/);
  assert.deepEqual(readdirSync(dir), ['mine.txt']);
  for (const name of ['My Server', '9lives', 'fn']) {
    const bad = cli(['new', name, '--dir', join(dir, 'x')]);
    assert.equal(bad.status, 64, bad.stderr);
    assert.match(bad.stderr, /not a valid crate name/);
  }
  assert.ok(!existsSync(join(dir, 'x')));
  const notCheckout = cli(['new', 'demo', '--dir', join(dir, 'y'), '--path', dir]);
  assert.equal(notCheckout.status, 64, notCheckout.stderr);
  assert.match(notCheckout.stderr, /not a durable-mcp checkout/);
});

test('durable-mcp new <path> writes into the path, as cargo new does, and names the crate for its last part', () => {
  const root = scratch();
  const work = join(root, 'work');
  mkdirSync(work);
  const made = cli(['new', '../servers/my-server'], work);
  assert.equal(made.status, 0, made.stderr);
  assert.match(made.stdout, /^Created my-server in \.\.\/servers\/my-server /);
  const dir = join(root, 'servers', 'my-server');
  assert.match(readFileSync(join(dir, 'Cargo.toml'), 'utf8'), /^name = "my-server"$/m);
  assert.match(readFileSync(join(dir, 'wrangler.toml'), 'utf8'), /^name = "my-server"$/m);
  assert.equal(JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).name, 'my-server');
  const absolute = cli(['new', join(root, 'abs', 'my_server')], work);
  assert.equal(absolute.status, 0, absolute.stderr);
  assert.match(readFileSync(join(root, 'abs', 'my_server', 'wrangler.toml'), 'utf8'), /^name = "my-server"$/m);
  const bad = cli(['new', '../servers/My Server'], work);
  assert.equal(bad.status, 64, bad.stderr);
  assert.match(bad.stderr, /"My Server" is not a valid crate name/);
  assert.deepEqual(readdirSync(join(root, 'servers')), ['my-server']);
  assert.deepEqual(readdirSync(work), []);
});

const VARIANTS = [
  { flags: [], tests: 2, tools: ['greet'], greeting: 'Good day, Ada.' },
  { flags: ['--durable'], tests: 2, tools: ['greet'], greeting: 'Good day, Ada. (sent: local-14)' },
  { flags: ['--task'], tests: 3, tools: ['countdown', 'greet'], greeting: 'Good day, Ada.' },
];

for (const v of VARIANTS) {
  describe(`durable-mcp new demo ${v.flags.join(' ') || '(default)'}`, () => {
    let project;
    let server;
    before(() => { project = create(v.flags); });
    after(async () => { await server?.stop(); });

    test('writes a crate whose lib.rs has the variant\'s tools', () => {
      const lib = project.read('src/lib.rs');
      assert.match(lib, /^durable_mcp::entry!\(server\);$/m);
      assert.equal(lib.includes('.durable()'), v.flags.includes('--durable'));
      assert.equal(lib.includes('cx.once("send"'), v.flags.includes('--durable'));
      assert.equal(lib.includes('.task()'), v.flags.includes('--task'));
    });

    test('its own npm test (cargo test) passes', { timeout: 10 * 60_000 }, () => {
      npmTest(project.dir, v.tests);
    });

    test('its own npm start builds and serves it, and a paused call completes over 2026-07-28', { timeout: 15 * 60_000 }, async () => {
      server = await npmStart(project.dir);
      assert.deepEqual(await toolNames(server.url), v.tools);
      await greet(server.url, v.greeting);
      if (!v.flags.includes('--task')) return;
      // countdown as a task: a task id at once, its status while it
      // sleeps in its own object, its question through tasks/update.
      const caps = { elicitation: { form: {} }, extensions: { [TASKS]: {} } };
      const created = await call(server.url, 'countdown', { from: 2 }, {}, caps);
      assert.equal(created.resultType, 'task', JSON.stringify(created));
      const task = async (method, params = {}) => {
        const r = await send(server.url, method, { taskId: created.taskId, ...params, _meta: modernMeta(caps) },
          { headers: { 'mcp-name': created.taskId } });
        assert.equal(r.status, 200, r.text);
        return r.json.result;
      };
      const until = async (done) => {
        const deadline = Date.now() + 60_000;
        for (;;) {
          const t = await task('tasks/get');
          if (done(t)) return t;
          assert.ok(Date.now() < deadline, `task stuck: ${JSON.stringify(t)}`);
          await new Promise((ok) => setTimeout(ok, t.pollIntervalMs ?? 500));
        }
      };
      const asking = await until((t) => t.status !== 'working');
      assert.equal(asking.status, 'input_required', JSON.stringify(asking));
      assert.equal(asking.inputRequests.launch.params.message, 'Launch?');
      const ack = await task('tasks/update', { inputResponses: { launch: { action: 'accept', content: { launch: true } } } });
      assert.deepEqual(ack, { resultType: 'complete' });
      const done = await until((t) => ['completed', 'failed', 'cancelled'].includes(t.status));
      assert.equal(done.status, 'completed', JSON.stringify(done));
      assert.deepEqual(done.result.content, [{ type: 'text', text: 'Launched.' }]);
    });

    if (v.flags.includes('--durable')) {
      test('a call paused under its npm start, exported from its storage, continues by its npm run check-deploy', { timeout: 10 * 60_000 }, async () => {
        const paused = await call(server.url, 'greet', { name: 'Grace' });
        assert.equal(paused.resultType, 'input_required', JSON.stringify(paused));
        await server.stop();
        const file = join(server.persistTo, 'paused.json');
        const exported = spawnSync(process.execPath, [join(ROOT, 'scripts/export-paused.mjs'), server.persistTo, '--out', file],
          { encoding: 'utf8', timeout: 60_000 });
        assert.equal(exported.status, 0, exported.stderr);
        // The greet that completed above is not paused any more.
        const calls = JSON.parse(readFileSync(file, 'utf8'));
        assert.deepEqual(calls.map((c) => [c.tool, c.arguments]), [['greet', { name: 'Grace' }]], JSON.stringify(calls));
        // (The deploy check was compiled by its npm test.)
        const r = spawnSync('npm', ['run', 'check-deploy'], {
          cwd: project.dir, encoding: 'utf8', timeout: 10 * 60_000, env: { ...ENV, DEPLOY_CHECK: file },
        });
        const out = `${r.stdout}\n${r.stderr}`;
        assert.equal(r.status, 0, out.slice(-6000));
        assert.match(out, /^durable:\S+ +greet +continues +asks \["manner"\]$/m, out.slice(-6000));
        assert.match(out, /^paused calls: 1 \(1 continue, 0 ask again, 0 diverge, 0 fail\)$/m, out.slice(-6000));
      });
    }
  });
}

test('durable-mcp new demo --oauth: its own npm test checks the scope and the caller', { timeout: 10 * 60_000 }, () => {
  const { dir, read } = create(['--oauth']);
  assert.match(read('src/lib.rs'), /\.scopes\(\["demo:write"\]\)/);
  assert.match(read('src/lib.rs'), /cx\.caller\(\)/);
  assert.match(read('wrangler.toml'), /^# OAUTH_ISSUER = /m);
  assert.match(read('wrangler.toml'), /Sign-in \(OAuth\)/);
  npmTest(dir, 3);
});
