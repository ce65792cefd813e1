// The Rust client and the `durable-mcp` CLI against `wrangler dev` serving
// the fixtures worker: the client's live tests (every wire, tasks, chains)
// and the CLI driven with piped answers, as a script or a test harness
// would drive it.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { startWrangler } from './wrangler.mjs';

const ROOT = resolve(import.meta.dirname, '../..');
const TARGET = process.env.CARGO_TARGET_DIR ?? join(ROOT, 'target');
// Built by `cargo test --workspace` (the client package has integration tests).
const CLI = join(TARGET, 'debug', 'durable-mcp');

let server;
before(async () => { server = await startWrangler(); });
after(async () => { await server?.stop(); });

/** Runs the CLI with `input` piped to its stdin. */
function cli(args, input = '') {
  const r = spawnSync(CLI, args, { input, encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
}

test('the CLI binary was built by cargo test', () => {
  assert.ok(existsSync(CLI), `${CLI} exists (cargo test --workspace builds it)`);
});

test("the client's live tests pass against wrangler dev: every wire, tasks, chains", { timeout: 10 * 60_000 }, () => {
  // `--workspace --test live` resolves features as `cargo test --workspace`
  // did just before, so nothing is rebuilt.
  const r = spawnSync('cargo', ['test', '--workspace', '--test', 'live', '--', '--ignored', '--test-threads=1'], {
    cwd: ROOT, encoding: 'utf8', timeout: 10 * 60_000, env: { ...process.env, DMCP_URL: server.url },
  });
  const out = `${r.stdout}\n${r.stderr}`;
  assert.equal(r.status, 0, out);
  assert.match(out, /test result: ok\. 5 passed; 0 failed/, out);
});

test('durable-mcp tools lists the tools with their parameters', () => {
  const r = cli(['tools', server.url]);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^deploy\(service\)  Deploys a service/m);
  assert.match(r.stdout, /^add\(a, b\)  Adds two numbers\./m);
});

for (const wire of ['modern', 'session', 'saga', 'sketch']) {
  test(`durable-mcp call deploy over ${wire} asks the form and the model from piped answers`, () => {
    // The form's one field (an enum: its value or its position), then the model's reply.
    const r = cli(['call', server.url, 'deploy', '--arg', 'service=api', '--wire', wire], '2\nyes\n');
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^Deployed api to production \(ticket [A-Z0-9-]+\)\.$/m);
    assert.match(r.stderr, /\? Where should api be deployed\?/);
    assert.match(r.stderr, /Is it safe to deploy api to production right now\?/);
  });
}

test('a declined form reaches the tool: !decline', () => {
  const r = cli(['call', server.url, 'deploy', '--arg', 'service=api'], '!decline\n');
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /Deployment of api cancelled by the user\./);
});

test('durable-mcp call runs a task: status on stderr, its question answered from the pipe', () => {
  const r = cli(['call', server.url, 'confirm_delete', '--arg', 'filename=notes.txt'], 'y\n');
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), 'Deleted notes.txt.');
  assert.match(r.stderr, /task input_required/);
  assert.match(r.stderr, /\? Delete notes\.txt\?/);
  assert.match(r.stderr, /task completed/);
});

test('durable-mcp call follows a chain, and stops a looping one with a clear error', () => {
  const ok = cli(['call', server.url, 'chain_start', '--arg', 'name=Ada']);
  assert.equal(ok.status, 0, ok.stderr);
  assert.deepEqual(ok.stdout.trim().split('\n'), ['starting', 'Hello, Ada!']);
  const loop = cli(['call', server.url, 'chain_loop']);
  assert.equal(loop.status, 2, loop.stderr);
  assert.match(loop.stderr, /error: chain: stopped before chain_loop: the chain loops/);
  const deep = cli(['call', server.url, 'chain_step', '--arg', 'n=1']);
  assert.equal(deep.status, 2, deep.stderr);
  assert.equal(deep.stdout.trim().split('\n').length, 5, 'five calls, then it stops');
  assert.match(deep.stderr, /a chain makes at most 5 calls/);
});

test('a tool that names an unlisted next tool, or bad arguments, gets a tool error (exit 1)', () => {
  for (const tool of ['chain_to_unlisted', 'chain_bad_arguments']) {
    const r = cli(['call', server.url, tool]);
    assert.equal(r.status, 1, `${tool}: ${r.stderr}`);
    assert.match(r.stdout, /to be called next/, tool);
  }
});

test('usage errors are exit 64 with the help', () => {
  const r = cli(['call']);
  assert.equal(r.status, 64);
  assert.match(r.stderr, /USAGE/);
});
