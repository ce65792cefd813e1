// What the suites that serve a user's worker crate across deploys share
// (deploys.test.mjs, pinning.test.mjs): the crate written outside the
// repository with its durable-mcp dependency pointed at this checkout and
// built with worker-build into one shared target directory; a stage (one
// --persist-to directory, fixed STATE_KEYS, a webhook counting effects)
// on which each version serves in turn; and a client per wire that starts
// a call, answers it, comes back to it and sends its last request again.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freshPersistDir } from './wrangler.mjs';
import { startServer } from './server.mjs';
import { postPlain, startWebhook } from './webhook.mjs';
import { modernMeta, send } from './modern.mjs';
import { parseSse, SseReader, TIMEOUT } from './sse.mjs';

export const ROOT = resolve(import.meta.dirname, '../..');
// The durable-mcp the user's crate depends on: this checkout, or
// DEPLOYS_DURABLE_MCP (another checkout, say a snapshot of a commit while
// this working tree is being edited).
export const DURABLE_MCP = resolve(process.env.DEPLOYS_DURABLE_MCP ?? ROOT);
// One target directory with the repository's builds (the fixtures worker
// and the quickstart compile the same dependencies for wasm32): each
// version compiles only its own crate.
export const TARGET = process.env.CARGO_TARGET_DIR ?? join(ROOT, 'target');
const WASM_OPT = join(ROOT, 'node_modules/binaryen/bin/wasm-opt');
const WASM_BINDGEN = join(homedir(), '.cargo/bin/wasm-bindgen');
export const BUILD_ENV = {
  ...process.env,
  // worker-build, where `cargo install` puts it (scripts/lib.sh does the same).
  PATH: `${join(homedir(), '.cargo/bin')}:${process.env.PATH}`,
  CARGO_TARGET_DIR: TARGET,
  ...(!process.env.WASM_OPT_BIN && existsSync(WASM_OPT) ? { WASM_OPT_BIN: WASM_OPT } : {}),
  ...(!process.env.WASM_BINDGEN_BIN && existsSync(WASM_BINDGEN) ? { WASM_BINDGEN_BIN: WASM_BINDGEN } : {}),
};

export const TASKS = 'io.modelcontextprotocol/tasks';
export const MRTR_CAPS = { elicitation: { form: {} }, sampling: {} };
export const TASK_CAPS = { ...MRTR_CAPS, extensions: { [TASKS]: {} } };
export const SESSION = '2025-11-25';
/** The session call's JSON-RPC id. */
export const CALL_ID = 5;
/** No request may hang a test. */
const REQUEST_MS = 20_000;
/** A session GET that sends nothing new for this long is closed: nothing came. */
const IDLE_MS = 2500;

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------
// The user's worker, built outside the repository
// ---------------------------------------------------------------------------

/** Cargo.toml of the user's crate: durable-mcp from this checkout. */
function cargoToml(name) {
  return `[package]
name = "${name}"
version = "0.1.0"
edition = "2021"
publish = false

[lib]
crate-type = ["cdylib", "rlib"]

[dependencies]
durable-mcp = { path = ${JSON.stringify(DURABLE_MCP)} }
serde = { version = "1", features = ["derive"] }
serde_json = "1"
schemars = "1"

[target.'cfg(target_arch = "wasm32")'.dependencies]
worker = "0.8.7"

[profile.release]
opt-level = "z"
lto = true
codegen-units = 1
strip = true

[profile.release.package.sha2]
opt-level = 3

[workspace]
`;
}

// One worker name for every version: wrangler dev keeps a worker's objects
// under its name, and a deploy keeps the name.
function wranglerToml(worker) {
  return `name = "${worker}"
main = "build/worker/shim.mjs"
compatibility_date = "2026-04-20"

[build]
command = "worker-build --release --no-opt"

[[durable_objects.bindings]]
name = "MCP_OBJECTS"
class_name = "McpObject"

[[migrations]]
tag = "v1"
new_sqlite_classes = ["McpObject"]
`;
}

/** Runs `cmd` in `cwd`; resolves with its output, rejects when it fails. */
export function run(cmd, args, cwd, timeoutMs) {
  return new Promise((ok, fail) => {
    const child = spawn(cmd, args, { cwd, env: BUILD_ENV, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c) => { out += c; });
    child.stderr.on('data', (c) => { out += c; });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      if (code === 0) ok(out);
      else fail(new Error(`${cmd} ${args.join(' ')} in ${cwd} exited ${code}:\n${out.slice(-6000)}`));
    });
  });
}

/** Runs `cmd`; resolves with its exit code, stdout and stderr apart. */
export function capture(cmd, args, cwd, env, timeoutMs) {
  return new Promise((ok) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => { stdout += c; });
    child.stderr.on('data', (c) => { stderr += c; });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code) => { clearTimeout(timer); ok({ code, stdout, stderr }); });
  });
}

/**
 * Writes a version of the user's crate into a fresh directory outside the
 * repository (under `parent`, made with mkdtemp by the caller, or a fresh
 * one) and builds it. `crate`: its package name (named per version and per
 * twin: the crates share a target directory); `worker`: the Worker's name
 * (the same for every version); `files`: `{ 'src/lib.rs': <source file> }`.
 * Resolves with the crate's directory.
 */
export async function buildUserCrate({ crate, worker, files, parent, dirName }) {
  const dir = join(parent ?? mkdtempSync(join(tmpdir(), 'durable-mcp-user-crate-')), dirName ?? crate);
  mkdirSync(join(dir, 'src'), { recursive: true });
  writeFileSync(join(dir, 'Cargo.toml'), cargoToml(crate));
  writeFileSync(join(dir, 'wrangler.toml'), wranglerToml(worker));
  for (const [to, from] of Object.entries(files)) {
    mkdirSync(join(dir, to, '..'), { recursive: true });
    copyFileSync(from, join(dir, to));
  }
  // The versions this checkout was tested with (and compiled already).
  copyFileSync(join(DURABLE_MCP, 'Cargo.lock'), join(dir, 'Cargo.lock'));
  await run('worker-build', ['--release', '--no-opt'], dir, 15 * 60_000);
  assert.ok(existsSync(join(dir, 'build/worker/shim.mjs')), `${crate} built`);
  return dir;
}

// ---------------------------------------------------------------------------
// The stage: one storage, one set of keys, a webhook; a version serves on it
// ---------------------------------------------------------------------------

/**
 * What the versions of a run share: one --persist-to directory (removed by
 * `cleanup`, with every directory added to `temps`), the webhook the tools
 * POST their effects to (`TICKET_WEBHOOK`), the vars every server gets
 * (STATE_KEYS, fixed: a version must open what the one before sealed), and
 * the calls whose URL follows the server that serves.
 */
// ---------------------------------------------------------------------------
// The replay check ("check a deploy before making it"), run natively
// ---------------------------------------------------------------------------

const EXPORT = join(ROOT, 'scripts/export-paused.mjs');

/**
 * Puts the native replay check into a version's crate (`source`, a
 * deploy_check.rs whose `{{crate_ident}}` is the crate's name, as `durable-mcp
 * new` scaffolds one, as its tests/deploy_check.rs) and compiles it,
 * natively, in the shared target directory: the check itself then runs
 * between one version's stop and the next one's start without building
 * anything. Resolves with how long the build took.
 */
export async function prepareReplayCheck(dir, crate, source) {
  mkdirSync(join(dir, 'tests'), { recursive: true });
  writeFileSync(join(dir, 'tests/deploy_check.rs'), readFileSync(source, 'utf8').replaceAll('{{crate_ident}}', crate));
  const t0 = Date.now();
  await run('cargo', ['test', '--test', 'deploy_check', '--no-run'], dir, 15 * 60_000);
  return Date.now() - t0;
}

/** scripts/export-paused.mjs on a stopped server's storage: the paused calls it wrote to `out`. */
export async function exportPausedCalls(persistTo, out) {
  const r = await capture(process.execPath, [EXPORT, persistTo, '--out', out], ROOT, process.env, 60_000);
  assert.equal(r.code, 0, `export-paused exited ${r.code}:\n${r.stdout}\n${r.stderr}`);
  return { calls: JSON.parse(readFileSync(out, 'utf8')), summary: r.stderr.trim() };
}

/** A crate's check on the exported calls: its table, and a report per call (`deploy-check-json` lines). */
export async function runCheck(dir, file) {
  const r = await capture('cargo', ['test', '--test', 'deploy_check', '--', '--nocapture'], dir,
    { ...BUILD_ENV, DEPLOY_CHECK: file }, 10 * 60_000);
  assert.equal(r.code, 0, `the check failed (${r.code}):\n${r.stdout.slice(-6000)}\n${r.stderr.slice(-6000)}`);
  const lines = r.stdout.split('\n');
  const reports = lines.filter((l) => l.startsWith('deploy-check-json ')).map((l) => JSON.parse(l.slice('deploy-check-json '.length)));
  const table = lines.filter((l) => !l.startsWith('deploy-check-json ') && !/^(running \d|test |$)/.test(l)
    && !/^test result/.test(l)).join('\n');
  return { reports, table };
}

export class Stage {
  constructor({ stateKeys, vars = {} }) {
    this.stateKeys = stateKeys;
    this.vars = vars;
    this.persistTo = freshPersistDir();
    this.temps = [this.persistTo];
    this.running = new Set();
    this.calls = [];
    this.hook = null;
  }

  async startWebhook() {
    this.hook = await startWebhook();
    return this.hook;
  }

  /** Serves the built crate in `dir` on the stage; every call's URL is then its. */
  async serve(dir) {
    const s = await startServer({
      prebuilt: dir, persistTo: this.persistTo,
      vars: { STATE_KEYS: this.stateKeys, TICKET_WEBHOOK: this.hook.url('/t'), ...this.vars },
    });
    this.running.add(s);
    for (const call of this.calls) call.url = s.url;
    return { ...s, stop: async () => { this.running.delete(s); await s.stop(); } };
  }

  /** Stops what is left; removes the directories (DEPLOYS_KEEP=1 keeps them: the crates, the storage, the logs). */
  async cleanup() {
    for (const s of [...this.running]) await s.stop();
    await this.hook?.stop();
    if (process.env.DEPLOYS_KEEP === '1') console.log(`kept: ${this.temps.join(' ')}`);
    else for (const t of this.temps) rmSync(t, { recursive: true, force: true });
  }
}

/** The tool names a server lists. */
export async function toolNames(url) {
  const r = await send(url, 'tools/list', {});
  assert.equal(r.status, 200, r.text);
  return r.json.result.tools.map((t) => t.name);
}

// ---------------------------------------------------------------------------
// The wires and a client per wire
// ---------------------------------------------------------------------------

export const WIRES = ['mrtr', 'durable', 'saga', 'sketch', 'session', 'task'];
/** The tool a wire calls: stateless MRTR cannot `once`, a task is a task. */
export const toolOn = (tool, wire) => (wire === 'mrtr' ? `${tool}_plain` : wire === 'task' ? `${tool}_task` : tool);
export const hasOnce = (wire) => wire !== 'mrtr';
/** Request/response wires answer a divergence; a session call and a task stay open. */
export const answersErrors = (wire) => wire !== 'session' && wire !== 'task';

export const asks = (m = {}) => ({ kind: 'asks', asks: m });
export const textOf = (result) => result?.content?.[0]?.text ?? `(no text) ${JSON.stringify(result)}`;
export const show = (x) => JSON.stringify(x).slice(0, 1500);

/**
 * A client of one wire driving one call. Steps: {kind: 'asks', asks} (what
 * the call waits for; none: it paused without asking, or works), {kind:
 * 'done', text}, {kind: 'failed', status, error}, {kind: 'stuck', evidence}.
 */
export class Call {
  /** `tool`: the name it calls; `service`: its argument, its own (its effects' webhook paths end with it). */
  constructor(wire, tool, service) {
    this.wire = wire;
    this.tool = tool;
    this.service = service;
    this.path = `/t/${this.service}`;
    this.target = 'staging';
    this.url = null;
    this.state = null; // MRTR and sketch: the latest requestState
    this.token = null; // saga: the latest token
    this.steps = {}; // saga: every completed step
    this.sid = null; // session
    this.lastEventId = null;
    this.ids = {};
    this.taskId = null;
    this.lastTask = null;
    this.last = null; // the last request, to send again
    this.lastAnswers = null; // session: the last answers posted
    this.asked = []; // every key asked, in order
    this.notes = []; // session: messages and refusals; task: every tasks/get
    this.pending = null; // after v1: what the client sends next
    this.paused = false;
  }

  get args() {
    return { service: this.service };
  }

  note(step) {
    if (step.kind === 'asks') this.asked.push(...Object.keys(step.asks));
    return step;
  }

  async start() {
    switch (this.wire) {
      case 'mrtr':
      case 'durable':
        return this.note(await this.mrtr({}));
      case 'saga':
        return this.note(this.readSaga(await postPlain(this.url, { jsonrpc: '2.0', id: 1, method: 'tools/callSaga',
          params: { name: this.tool, arguments: this.args } })));
      case 'sketch':
        return this.note(this.readSketch(await postPlain(this.url, { jsonrpc: '2.0', id: 1, method: 'tools/call',
          params: { name: this.tool, arguments: this.args }, dependent_responses: {} })));
      case 'session': {
        const init = await this.sessionPost({ jsonrpc: '2.0', id: 0, method: 'initialize', params: {
          protocolVersion: SESSION, capabilities: { elicitation: {}, sampling: {} },
          clientInfo: { name: 'user-crate-e2e', version: '1' } } }, false);
        assert.equal(init.status, 200, init.text);
        this.sid = init.sessionId;
        assert.ok(this.sid, 'a session id');
        const n = await this.sessionPost({ jsonrpc: '2.0', method: 'notifications/initialized' });
        assert.equal(n.status, 202, n.text);
        const r = await this.sessionPost({ jsonrpc: '2.0', id: CALL_ID, method: 'tools/call',
          params: { name: this.tool, arguments: this.args } });
        if (!r.events) return { kind: 'failed', status: r.status, error: r.json?.error ?? r.text };
        return this.note(this.readSession(r.events));
      }
      case 'task': {
        const r = await send(this.url, 'tools/call', { name: this.tool, arguments: this.args, _meta: modernMeta(TASK_CAPS) });
        if (r.json?.error) return { kind: 'failed', status: r.status, error: r.json.error };
        assert.equal(r.json?.result?.resultType, 'task', r.text);
        this.taskId = r.json.result.taskId;
        return this.note(await this.pollTask(movedOn, 30_000));
      }
      default:
        throw new Error(this.wire);
    }
  }

  /**
   * Answers what the call asked; with no answers, comes back to it (a retry
   * after a pause that asked nothing, a GET on the session's stream, a task
   * polled until it moves).
   */
  async send(answers) {
    const empty = Object.keys(answers).length === 0;
    switch (this.wire) {
      case 'mrtr':
      case 'durable': {
        const extra = { requestState: this.state };
        if (!empty) extra.inputResponses = answers;
        return this.note(await this.mrtr(extra));
      }
      case 'saga': {
        Object.assign(this.steps, answers);
        const completedSteps = Object.entries(this.steps).map(([stepId, result]) => ({ stepId, result }));
        this.last = { jsonrpc: '2.0', id: 2, method: 'tools/resumeSaga', params: { sagaToken: this.token, completedSteps } };
        return this.note(this.readSaga(await postPlain(this.url, this.last)));
      }
      case 'sketch': {
        const deps = Object.fromEntries(Object.entries(answers).map(([k, v]) => [k, { result: v }]));
        this.last = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: this.tool, arguments: this.args },
          requestState: this.state, dependent_responses: deps };
        return this.note(this.readSketch(await postPlain(this.url, this.last)));
      }
      case 'session':
        if (!empty) await this.postAnswers(answers);
        return this.note(await this.sessionGet());
      case 'task':
        if (empty) return this.note(await this.pollTask(settled, 45_000));
        {
          const r = await this.taskMethod('tasks/update', { inputResponses: answers });
          if (r.json?.error) return { kind: 'failed', status: r.status, error: r.json.error };
          assert.deepEqual(r.json?.result, { resultType: 'complete' }, r.text);
        }
        return this.note(await this.pollTask(movedOn, 30_000));
      default:
        throw new Error(this.wire);
    }
  }

  /** The last request again, as it was (a session: back on its stream; a task: its alarm). */
  async resend() {
    switch (this.wire) {
      case 'mrtr':
      case 'durable':
        return this.note(await this.mrtr(this.last, true));
      case 'saga':
        return this.note(this.readSaga(await postPlain(this.url, this.last)));
      case 'sketch':
        return this.note(this.readSketch(await postPlain(this.url, this.last)));
      case 'session':
        return this.note(await this.sessionGet());
      case 'task':
        // A stuck task stays stuck until its alarm tries it again.
        return this.note(await this.pollTask((t) => t.status !== 'working', 45_000));
      default:
        throw new Error(this.wire);
    }
  }

  // --- 2026-07-28 MRTR -----------------------------------------------------

  async mrtr(extra, again = false) {
    if (!again) this.last = extra;
    const r = await send(this.url, 'tools/call', { name: this.tool, arguments: this.args, ...extra, _meta: modernMeta(MRTR_CAPS) });
    if (r.json?.error) return { kind: 'failed', status: r.status, error: r.json.error };
    const res = r.json?.result;
    if (res?.resultType === 'input_required') {
      this.state = res.requestState;
      return asks(res.inputRequests ?? {});
    }
    if (res?.resultType === 'complete') return { kind: 'done', text: textOf(res) };
    throw new Error(`an MRTR reply neither paused nor complete: ${r.status} ${r.text}`);
  }

  // --- seed 000: the saga methods ------------------------------------------

  readSaga(r) {
    if (r.json?.error) return { kind: 'failed', status: r.status, error: r.json.error };
    const res = r.json?.result;
    assert.ok(res, `${r.status} ${r.text}`);
    if (res.state === 'suspended') {
      this.token = res.sagaToken;
      const METHOD = { elicitation: 'elicitation/create', sampling: 'sampling/createMessage', roots: 'roots/list' };
      return asks(Object.fromEntries((res.steps ?? []).map((s) => [s.stepId, { method: METHOD[s.type], params: s.params }])));
    }
    return { kind: 'done', text: textOf(res) };
  }

  // --- seed 002: the streamless sketch -------------------------------------

  readSketch(r) {
    if (r.json?.error) return { kind: 'failed', status: r.status, error: r.json.error };
    if (r.json?.dependent_requests) {
      this.state = r.json.requestState;
      return asks(r.json.dependent_requests);
    }
    assert.ok(r.json?.result, `${r.status} ${r.text}`);
    return { kind: 'done', text: textOf(r.json.result) };
  }

  // --- 2025-11-25 sessions -------------------------------------------------

  sessionHeaders() {
    const h = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    if (this.sid) Object.assign(h, { 'mcp-session-id': this.sid, 'mcp-protocol-version': SESSION });
    return h;
  }

  /** A POST read to its end (polling mode closes a call's stream after each request). */
  async sessionPost(body, withSession = true) {
    const headers = withSession ? this.sessionHeaders() : { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const r = await fetch(this.url, { method: 'POST', headers, body: JSON.stringify(body), signal: AbortSignal.timeout(REQUEST_MS) });
    const text = await r.text();
    const out = { status: r.status, text, sessionId: r.headers.get('mcp-session-id') };
    if ((r.headers.get('content-type') ?? '').startsWith('text/event-stream')) out.events = parseSse(text);
    else if (text) out.json = JSON.parse(text);
    return out;
  }

  /** POSTs the answers, as JSON-RPC responses to the requests that asked. */
  async postAnswers(answers) {
    this.lastAnswers = answers;
    for (const [key, result] of Object.entries(answers)) {
      const r = await this.sessionPost({ jsonrpc: '2.0', id: this.ids[key] ?? null, result });
      if (r.status !== 202) this.notes.push({ answerRefused: r.status, reply: r.json ?? r.text });
    }
  }

  /** Comes back to the call's stream (GET + Last-Event-ID) and reads what is new. */
  async sessionGet() {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), REQUEST_MS);
    try {
      const r = await fetch(this.url, { method: 'GET', signal: controller.signal, headers: {
        accept: 'text/event-stream', 'mcp-session-id': this.sid, 'mcp-protocol-version': SESSION,
        'last-event-id': this.lastEventId } });
      if (r.status !== 200) {
        const text = await r.text();
        this.notes.push({ getRefused: r.status, reply: text });
        let error = text;
        try { error = JSON.parse(text).error ?? text; } catch { /* not JSON */ }
        return { kind: 'failed', status: r.status, error };
      }
      const reader = new SseReader(r, controller);
      const events = [];
      try {
        for (;;) {
          const ev = await reader.next({ timeoutMs: IDLE_MS });
          if (ev === TIMEOUT || ev === null) break;
          events.push(ev);
        }
      } finally {
        await reader.close();
      }
      return this.readSession(events);
    } finally {
      clearTimeout(timer);
    }
  }

  readSession(events) {
    const found = {};
    let end = null;
    for (const ev of events) {
      if (ev.id) this.lastEventId = ev.id;
      const m = ev.message;
      if (!m) continue;
      this.notes.push(m);
      if (m.method && typeof m.id === 'string') {
        // Our requests' ids are `<stream>/<round>/<key>`.
        const key = m.id.split('/').slice(2).join('/');
        this.ids[key] = m.id;
        found[key] = { method: m.method, params: m.params };
      } else if (m.id === CALL_ID) {
        end = m.error ? { kind: 'failed', status: 200, error: m.error } : { kind: 'done', text: textOf(m.result) };
      }
    }
    return end ?? asks(found);
  }

  // --- tasks ---------------------------------------------------------------

  taskMethod(method, params = {}) {
    return send(this.url, method, { taskId: this.taskId, ...params, _meta: modernMeta(TASK_CAPS) },
      { headers: { 'mcp-name': this.taskId } });
  }

  /** Polls tasks/get until `done(task)` or `deadlineMs` pass; the step it shows. */
  async pollTask(done, deadlineMs) {
    const deadline = Date.now() + deadlineMs;
    for (;;) {
      const r = await this.taskMethod('tasks/get');
      assert.ok(r.status < 500, `tasks/get answered ${r.status}: ${r.text}`);
      if (r.json?.error) return { kind: 'failed', status: r.status, error: r.json.error };
      const t = r.json.result;
      this.notes.push(t);
      this.lastTask = t;
      if (done(t) || Date.now() > deadline) break;
      await sleep(Math.min(t.pollIntervalMs ?? 500, 500));
    }
    const t = this.lastTask;
    if (t.status === 'completed') return { kind: 'done', text: textOf(t.result) };
    if (t.status === 'failed' || t.status === 'cancelled') return { kind: 'failed', status: 200, error: t.error ?? t };
    if (t.status === 'input_required') return asks(t.inputRequests ?? {});
    return asks({});
  }

  /** What the client saw of a call that does not move. */
  evidence() {
    return this.wire === 'task' ? this.lastTask : this.notes;
  }
}

export const stuck = (t) => /^Stuck:/.test(t.statusMessage ?? '');
/** A task answered or started: until it asks, ends, sleeps or is stuck. */
export const movedOn = (t) => t.status !== 'working' || stuck(t) || /^waiting/.test(t.statusMessage ?? '');
/** A task come back to: until it asks, ends or is stuck. */
export const settled = (t) => t.status !== 'working' || stuck(t);

/**
 * Carries the call on from `step`, answering what it asks, until it ends or
 * stays where it is (three comebacks with nothing new, or only questions
 * already answered). `respond(asks, call)`: the answers to what it asks.
 */
export async function runToEnd(call, step, respond) {
  const answered = new Set();
  let idle = 0;
  for (let i = 0; i < 16; i++) {
    if (step.kind !== 'asks') return step;
    const fresh = Object.entries(step.asks).filter(([k, r]) => !answered.has(`${k} ${JSON.stringify(r)}`));
    if (fresh.length > 0) {
      idle = 0;
      for (const [k, r] of Object.entries(step.asks)) answered.add(`${k} ${JSON.stringify(r)}`);
      step = await call.send(respond(step.asks, call));
    } else {
      if (++idle >= 3) return { kind: 'stuck', evidence: call.evidence() };
      step = await call.send({});
    }
  }
  return { kind: 'stuck', evidence: call.evidence() };
}

