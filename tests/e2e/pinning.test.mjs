// Pinned calls across deploys (issue 44), end to end: a user's worker crate
// (tests/e2e/pinning/: v1, v2 and v3 of its lib.rs, common.rs shared) copied
// out of the repository, its durable-mcp dependency pointed at this
// checkout, built with worker-build into one shared target directory (each
// version compiles only its own crate), and served by `wrangler dev` (or
// plain `workerd serve`, the twin pinning.workerd.test.mjs) on one
// --persist-to directory with fixed STATE_KEYS (tests/e2e/user-crate.mjs,
// shared with deploys.test.mjs). Its `deploy` tool is pinned
// (`Tool::pinned`): a paused call goes on, on every wire, on the body of the
// version its last round ran on.
//
// 1. v1 (`deploy` version "1": a form `target`, a ticket opened once through
//    the test's webhook, a sampling `verdict`, "v1 deployed …") pauses calls
//    on every wire — 2026-07-28 MRTR (stateless: no `once`), durable MRTR,
//    tools/callSaga + tools/resumeSaga, the streamless sketch, the
//    2025-11-25 session wire, tasks — at the form and at the sampling (then
//    holding its recorded ticket): one set to finish under v2, one set left
//    alone until v3; and `deploy_moving` calls at the sampling (v1's body
//    with `cx.upgrade_point("after-form")` after its form).
// 2. v2 serves (`deploy` version "2", keeping v1's body with `.keeps("1",
//    …)`, its own body completely different: a sampling `risk` first, then
//    a form `window`, a page sent once instead of a ticket, "v2 rolled …
//    out"): every call paused on v1 completes exactly as v1 would (the
//    questions v1 had left, by key and wording, the ticket opened once in
//    all, v1's result); a new call runs v2 (v2's questions in v2's order,
//    a page, no ticket, v2's result); the `deploy_moving` calls leave v1's
//    body at the upgrade point and finish on v2's, the form answered on v1
//    not asked again. v2 pauses calls of its own at its form.
// 3. v3 serves (`deploy` version "3", v2's body, keeping "2" but no longer
//    "1"): the v1 calls left alone park — -32050 (HTTP 409) with
//    data.pinnedTo "1" and data.tool on the request/response wires, an
//    error log on a session call's stream (the call stays open), a task
//    kept working with a "Stuck: …" status naming version "1" — and no
//    effect runs; the calls paused on v2 go on to v2's result; a new call
//    runs v3's body.
// 4. Rolled back to v2, the same request (a session: its stream resumed; a
//    task: its alarm, retried every PARKED_RETRY_SECONDS) continues each
//    parked call to v1's result, its ticket opened once.
// Throughout, the operator's count (`durable-mcp admin <url> tools versions
// --json`, the CLI on the admin API) matches the calls the test holds, per
// tool and version (stateless MRTR calls are the client's, not counted),
// and says which version each deploy runs as current, keeps, or lacks; and
// before v3 serves, the deploy check (v2's storage exported, v3's crate
// replaying it natively) names each call v1 still holds as one that parks
// on version "1", and each call v2 paused as one that continues.
// The same tool as an `upgrade` tool (the default) is deploys.test.mjs.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { VIA } from './server.mjs';
import { CLI } from './cli.mjs';
import {
  answersErrors, buildUserCrate, Call, CALL_ID, exportPausedCalls, hasOnce, prepareReplayCheck, runCheck, runToEnd,
  show, Stage, toolNames, toolOn, WIRES,
} from './user-crate.mjs';

const SOURCES = join(import.meta.dirname, 'pinning');
// The same on every server of this run: a version must open what the one before sealed.
const STATE_KEYS = 'pinning:pinning-e2e-state-key-0123456789abcdef';
// How often a parked task is tried again (default 60).
const PARKED_RETRY_SECONDS = 3;
// The operator's token (ADMIN_TOKENS), for the CLI's counts.
const ADMIN_TOKEN = 'pinning-e2e-admin-token-0123456789';
// The deploy check the user's crate carries (as `durable-mcp new` scaffolds one).
const CHECK_SOURCE = join(import.meta.dirname, 'deploys', 'deploy_check.rs');

const t0 = Date.now();
const elapsed = () => `${((Date.now() - t0) / 1000).toFixed(1)} s`;

// ---------------------------------------------------------------------------
// The calls
// ---------------------------------------------------------------------------

/**
 * A call of the user's `tool` on `wire`, in a `group` (what the test does
 * with it), paused at `pause` (the key of the question it waits at). Its
 * service is its own: its tickets reach /t/ticket/<service>, its pages
 * /t/page/<service>.
 */
class PinCall extends Call {
  constructor(wire, tool, group, pause) {
    super(wire, toolOn(tool, wire), `${group}-${pause ?? 'none'}-${wire}`);
    this.group = group;
    this.pause = pause;
    this.tickets = `/t/ticket/${this.service}`;
    this.pages = `/t/page/${this.service}`;
    /** Every question shown to the user or the model, [key, request], in order. */
    this.seen = [];
  }
}

/** What each group's calls do: see the file's comment. */
const GROUPS = {
  // Started on v1, paused there, finished on v2.
  drain: { tool: 'deploy', pauses: ['target', 'verdict'] },
  // Started on v1, paused there, left alone until v3 parks them; finished on v2 again.
  parked: { tool: 'deploy', pauses: ['target', 'verdict'] },
  // Started on v1, paused at the sampling, moved to v2's body at its upgrade point.
  moving: { tool: 'deploy_moving', pauses: ['verdict'] },
  // Started on v2 and run to its end there.
  fresh: { tool: 'deploy', pauses: [null] },
  // Started on v2, paused at its form, finished on v3.
  v2paused: { tool: 'deploy', pauses: ['window'] },
  // Started on v3 and run to its end there.
  fresh3: { tool: 'deploy', pauses: [null] },
};

const calls = [];
for (const [group, g] of Object.entries(GROUPS)) {
  for (const wire of WIRES) for (const pause of g.pauses) calls.push(new PinCall(wire, g.tool, group, pause));
}
const inGroup = (group, wire) => calls.filter((c) => c.group === group && (!wire || c.wire === wire));

/** What a user and a model answer: staging, tonight; yes, it is safe; the risk is low. */
function respond(m, call) {
  const out = {};
  for (const [key, req] of Object.entries(m)) {
    call.seen.push([key, req]);
    if (req.method === 'elicitation/create') {
      const props = req.params?.requestedSchema?.properties ?? {};
      const content = {};
      if (props.target) content.target = 'staging';
      if (props.window) content.window = 'tonight';
      out[key] = { action: 'accept', content };
    } else if (req.method === 'sampling/createMessage') {
      const text = key === 'risk' ? 'low' : 'yes';
      out[key] = { role: 'assistant', content: { type: 'text', text }, model: 'e2e-model' };
    } else {
      throw new Error(`asked ${key} by ${req.method}: ${JSON.stringify(req)}`);
    }
  }
  return out;
}

/** The words of a question: a form's message, a sampling's first message. */
const wording = (req) => req?.params?.message ?? req?.params?.messages?.[0]?.content?.text ?? show(req);

/** Each version's questions, by key: the method and words v1 or v2 asks them with. */
const QUESTIONS = {
  target: ['elicitation/create', /^Where should .* be deployed\?$/],
  verdict: ['sampling/createMessage', /^Is it safe to deploy .* to staging right now\?/],
  risk: ['sampling/createMessage', /^How risky is rolling .* out now\?/],
  window: ['elicitation/create', /^In which window should .* roll out \(risk low\)\?$/],
};

/** The keys asked from `mark` on, each once, in order; each asked as its version asks it. */
function askedSince(call, mark) {
  const seen = call.seen.slice(mark);
  for (const [key, req] of seen) {
    const q = QUESTIONS[key];
    assert.ok(q, `${label(call)}: an unknown question ${key}: ${show(req)}`);
    assert.equal(req.method, q[0], `${label(call)}: ${key} asked by ${req.method}`);
    assert.match(wording(req), q[1], `${label(call)}: ${key}'s wording`);
  }
  return [...new Set(seen.map(([k]) => k))];
}

const label = (call) => `${call.tool} (${call.group}${call.pause ? `, paused at ${call.pause}` : ''}) on ${call.wire}`;
const effectId = (call) => (hasOnce(call.wire) ? 'T-1' : 'LOCAL');
const v1Result = (call) => `v1 deployed ${call.service} to staging (ticket ${effectId(call)}, verdict safe).`;
const v2Result = (call) => `v2 rolled ${call.service} out in the tonight window (risk low, on-call page ${effectId(call)}).`;
const movedResult = (call) => `v2 rolled ${call.service} out to staging (risk low, on-call page ${effectId(call)}).`;

/**
 * Starts the call on `version` and answers until it asks `call.pause`;
 * keeps the answers the client sends next.
 */
async function pauseAt(call, version) {
  call.version = version;
  let step = await call.start();
  for (let i = 0; i < 10; i++) {
    assert.equal(step.kind, 'asks', `${label(call)}: did not pause at ${call.pause}: ${show(step)}`);
    if (Object.keys(step.asks).length === 0) {
      step = await call.send({});
      continue;
    }
    const answers = respond(step.asks, call);
    if (call.pause in step.asks) {
      call.pending = answers;
      call.paused = true;
      call.mark = call.seen.length;
      return;
    }
    step = await call.send(answers);
  }
  assert.fail(`${label(call)}: never paused at ${call.pause}`);
}

/** Sends what the paused call's client sends next, and carries the call on to its end. */
async function goOn(call, phase) {
  assert.ok(call.paused, `${label(call)}: paused before`);
  call.notes = [];
  const first = await call.send(call.pending);
  return ended(call, trace(call, phase, await runToEnd(call, first, respond)));
}

/** Notes that the call finished when `step` is its end. */
function ended(call, step) {
  if (step.kind === 'done') call.finished = true;
  return step;
}

// ---------------------------------------------------------------------------
// What an operator sees: the counts per version, the deploy check
// ---------------------------------------------------------------------------

/** `durable-mcp admin <url> tools versions --json`: each tool's versions, by version. */
function toolVersions(url) {
  assert.ok(existsSync(CLI), `no CLI at ${CLI}: cargo build -p durable-mcp-client`);
  const r = spawnSync(CLI, ['admin', url, 'tools', 'versions', '--json'], {
    encoding: 'utf8', timeout: 60_000,
    env: { ...process.env, DURABLE_MCP_ADMIN_TOKEN: ADMIN_TOKEN, DURABLE_MCP_NO_BROWSER: '1' },
  });
  assert.equal(r.status, 0, `tools versions: ${r.stderr}${r.stdout}`);
  const out = JSON.parse(r.stdout);
  return Object.fromEntries(out.tools.map((t) => [t.tool, Object.fromEntries(t.versions.map((v) => [v.version, v]))]));
}

/** The calls the server keeps for the test (not stateless MRTR's), unfinished, by tool and version. */
function heldCalls() {
  const held = {};
  for (const c of calls.filter((c) => c.wire !== 'mrtr' && c.paused && !c.finished)) {
    held[c.tool] ??= {};
    held[c.tool][c.version] = (held[c.tool][c.version] ?? 0) + 1;
  }
  return held;
}

/**
 * The CLI's count matches the calls the test holds, per tool and version
 * (waiting, working and parked together: a parked call is still held), and
 * each version's standing is `standing`'s. `settling`: held calls that may
 * have ended on their own before the count (a parked task with every
 * answer in hand goes on at its alarm, however soon the server is asked),
 * each counted or not.
 */
function assertCounts(url, standing, settling = []) {
  const got = toolVersions(url);
  const want = heldCalls();
  const mayEnd = {};
  for (const c of settling) {
    mayEnd[c.tool] ??= {};
    mayEnd[c.tool][c.version] = (mayEnd[c.tool][c.version] ?? 0) + 1;
  }
  const total = (row) => row.waiting + row.working + row.parked;
  /** The least and the most a tool's version may count. */
  const range = (tool, v) => {
    const most = want[tool]?.[v] ?? 0;
    return [most - (mayEnd[tool]?.[v] ?? 0), most];
  };
  const within = (n, tool, v) => { const [least, most] = range(tool, v); return n >= least && n <= most; };
  const wanted = (tool, v) => { const [least, most] = range(tool, v); return least === most ? `${most}` : `${least} to ${most}`; };
  for (const [tool, versions] of Object.entries(want)) {
    for (const [v, n] of Object.entries(versions)) {
      const row = got[tool]?.[v];
      if (!row && n === (mayEnd[tool]?.[v] ?? 0)) continue;
      assert.ok(row, `${tool} version ${v}: not listed: ${show(got[tool])}`);
      assert.ok(within(total(row), tool, v), `${tool} version ${v}: ${show(row)}, wanted ${wanted(tool, v)}`);
      assert.equal(row.standing, standing[v], `${tool} version ${v}: ${show(row)}`);
    }
  }
  for (const [tool, versions] of Object.entries(got)) {
    for (const [v, row] of Object.entries(versions)) {
      assert.ok(within(total(row), tool, v), `${tool} version ${v} counts calls the test does not hold: ${show(row)}, wanted ${wanted(tool, v)}`);
    }
  }
  return got;
}

/** PINNING_TRACE=<file>: how each call ended in each phase, what its client saw, as JSON lines. */
function trace(call, phase, step) {
  if (process.env.PINNING_TRACE) {
    const evidence = call.wire === 'session' ? call.notes : call.wire === 'task' ? call.lastTask : undefined;
    appendFileSync(process.env.PINNING_TRACE, `${JSON.stringify({ phase, tool: call.tool, wire: call.wire,
      group: call.group, pause: call.pause, step, evidence, effects: effects(call) })}\n`);
  }
  return step;
}

function assertDone(step, expected, call) {
  assert.equal(step.kind, 'done', `${label(call)}: expected "${expected}", got ${show(step)}`);
  assert.equal(step.text, expected, label(call));
}

/** The effects a call ran: [tickets, pages]. */
const effects = (call) => [hook.count(call.tickets), hook.count(call.pages)];

/** A parked call, as its wire reports it: -32050 naming version 1 (see the file's comment). */
function assertParked(step, call) {
  const checkError = (error, where) => {
    assert.equal(error?.code, -32050, `${where}: ${show(error)}`);
    assert.equal(error.data?.pinnedTo, '1', `data.pinnedTo ${where}: ${show(error)}`);
    assert.equal(error.data?.tool, call.tool, `data.tool ${where}: ${show(error)}`);
    assert.match(error.message, /version "1"/, `the message names version 1 ${where}: ${show(error)}`);
  };
  if (answersErrors(call.wire)) {
    assert.equal(step.kind, 'failed', `${label(call)}: expected -32050, got ${show(step)}`);
    assert.equal(step.status, 409, `${label(call)}: ${show(step)}`);
    checkError(step.error, `on ${call.wire}`);
    return;
  }
  assert.equal(step.kind, 'stuck', `${label(call)}: the call must stay open, not end: ${show(step)}`);
  if (call.wire === 'session') {
    const logs = call.notes.filter((m) => m.method === 'notifications/message' && m.params?.level === 'error');
    assert.ok(logs.length > 0, `no error log on the call's stream: ${show(call.notes)}`);
    checkError(logs[0].params.data, 'in the session log');
    assert.ok(call.notes.every((m) => m.id !== CALL_ID), `a response ended the call: ${show(call.notes)}`);
  } else {
    const t = call.lastTask;
    assert.equal(t.status, 'working', `the task must stay open: ${show(t)}`);
    assert.match(t.statusMessage ?? '', /^Stuck: /, show(t));
    assert.match(t.statusMessage, /version "1"/, `the status message names version 1: ${t.statusMessage}`);
  }
}

// ---------------------------------------------------------------------------
// The run
// ---------------------------------------------------------------------------

const stage = new Stage({
  stateKeys: STATE_KEYS,
  vars: { PARKED_RETRY_SECONDS: String(PARKED_RETRY_SECONDS), ADMIN_TOKENS: `ops:${ADMIN_TOKEN}` },
});
stage.calls.push(...calls);
let hook;
const dirs = {};

after(async () => {
  await stage.cleanup();
  console.log(`# pinning (${VIA}): ${elapsed()} in all`);
});

describe(`pinned calls across deploys (${VIA})`, { timeout: 20 * 60_000 }, () => {
  before(async () => {
    hook = await stage.startWebhook();
    const parent = mkdtempSync(join(tmpdir(), 'durable-mcp-pinning-'));
    stage.temps.push(parent);
    for (const v of ['v1', 'v2', 'v3']) {
      const b0 = Date.now();
      dirs[v] = await buildUserCrate({
        // Named per version and per twin: the crates share a target directory.
        crate: `pinning-${VIA}-${v}`, worker: 'pinning', parent, dirName: v,
        files: { 'src/lib.rs': join(SOURCES, v, 'src/lib.rs'), 'src/common.rs': join(SOURCES, 'common.rs') },
      });
      console.log(`# ${v} built in ${((Date.now() - b0) / 1000).toFixed(1)} s`);
    }
    const ms = await prepareReplayCheck(dirs.v3, `pinning_${VIA}_v3`, CHECK_SOURCE);
    console.log(`# v3's deploy check built in ${(ms / 1000).toFixed(1)} s`);
  }, { timeout: 20 * 60_000 });

  describe('v1 pauses calls on every wire', () => {
    let v1;
    before(async () => { v1 = await stage.serve(dirs.v1); });
    after(async () => { await v1?.stop(); });

    test('v1 serves deploy and deploy_moving on every wire', async () => {
      const names = await toolNames(v1.url);
      for (const t of ['deploy', 'deploy_moving']) for (const w of WIRES) assert.ok(names.includes(toolOn(t, w)), `${toolOn(t, w)} listed`);
    });

    for (const wire of WIRES) {
      test(`v1 pauses calls on ${wire} at the form and at the sampling (then holding its ticket)`, { timeout: 120_000 }, async () => {
        const mine = ['drain', 'parked', 'moving'].flatMap((g) => inGroup(g, wire));
        await Promise.all(mine.map((c) => pauseAt(c, '1')));
        for (const call of mine) {
          const ticket = hasOnce(call.wire) && call.tool === toolOn('deploy', wire) && call.pause === 'verdict' ? 1 : 0;
          assert.deepEqual(effects(call), [ticket, 0], `${label(call)}: [tickets, pages] opened on v1`);
          assert.deepEqual(askedSince(call, 0), call.pause === 'target' ? ['target'] : ['target', 'verdict'], label(call));
        }
      });
    }

    test('the operator counts every kept call on version 1, the one v1 runs', { timeout: 120_000 }, async () => {
      const got = assertCounts(v1.url, { 1: 'current' });
      assert.ok(got.deploy?.['1']?.waiting > 0, show(got.deploy));
    });
  });

  describe('v2 serves: v1\'s calls finish on v1\'s body, new calls run v2\'s', { concurrency: 8 }, () => {
    let v2;
    before(async () => { v2 = await stage.serve(dirs.v2); });
    after(async () => { await v2?.stop(); });

    test('v2 lists deploy and deploy_moving', async () => {
      const names = await toolNames(v2.url);
      for (const t of ['deploy', 'deploy_moving']) for (const w of WIRES) assert.ok(names.includes(toolOn(t, w)), `${toolOn(t, w)} listed`);
    });

    for (const call of inGroup('drain')) {
      test(`${label(call)}: completes exactly as v1 would`, { timeout: 120_000 }, async () => {
        const end = await goOn(call, 'v2');
        assertDone(end, v1Result(call), call);
        // The questions v1 had left: the sampling (and nothing else), asked as v1 asks it.
        assert.deepEqual(askedSince(call, call.mark), call.pause === 'target' ? ['verdict'] : [], `${label(call)}: asked on v2`);
        assert.deepEqual(effects(call), [hasOnce(call.wire) ? 1 : 0, 0], `${label(call)}: [tickets, pages] in all`);
      });
    }

    for (const call of inGroup('moving')) {
      test(`${label(call)}: moves to v2's body at its upgrade point, the form not asked again`, { timeout: 120_000 }, async () => {
        const end = await goOn(call, 'v2');
        assertDone(end, movedResult(call), call);
        assert.deepEqual(askedSince(call, call.mark), ['risk'], `${label(call)}: asked on v2`);
        assert.deepEqual(effects(call), [0, hasOnce(call.wire) ? 1 : 0], `${label(call)}: [tickets, pages]`);
      });
    }

    for (const call of inGroup('fresh')) {
      test(`${label(call)}: a new call runs v2's body`, { timeout: 120_000 }, async () => {
        const end = ended(call, await runToEnd(call, await call.start(), respond));
        assertDone(end, v2Result(call), call);
        assert.deepEqual(askedSince(call, 0), ['risk', 'window'], `${label(call)}: v2's questions in v2's order`);
        assert.deepEqual(effects(call), [0, hasOnce(call.wire) ? 1 : 0], `${label(call)}: [tickets, pages]`);
      });
    }

    for (const wire of WIRES) {
      const call = inGroup('v2paused', wire)[0];
      test(`${label(call)}: v2 pauses a call of its own at its form`, { timeout: 120_000 }, async () => {
        await pauseAt(call, '2');
        assert.deepEqual(askedSince(call, 0), ['risk', 'window'], label(call));
        assert.deepEqual(effects(call), [0, 0], `${label(call)}: [tickets, pages]`);
      });
    }
  });

  // v2 has stopped; v3 does not serve yet.
  describe('before v3 serves, the deploy check names the calls version 1 still holds', () => {
    test('v3\'s code replays the exported calls: v1\'s park on version 1, v2\'s continue', { timeout: 300_000 }, async () => {
      const file = join(dirs.v3, 'paused.json');
      const { calls: exported, summary } = await exportPausedCalls(stage.persistTo, file);
      const { reports, table } = await runCheck(dirs.v3, file);
      console.log(`${summary}\n${table}`);
      const held = calls.filter((c) => c.wire !== 'mrtr' && c.paused && !c.finished);
      assert.equal(exported.length, held.length, `exported ${show(exported.map((e) => e.id))}`);
      assert.equal(reports.length, held.length, table);
      const byArgs = new Map(exported.map((e) => [`${e.tool} ${JSON.stringify(e.arguments)}`, e.id]));
      const byId = new Map(reports.map((r) => [r.id, r]));
      for (const call of held) {
        const r = byId.get(byArgs.get(`${call.tool} ${JSON.stringify(call.args)}`));
        assert.ok(r, `no verdict for ${label(call)}: ${table}`);
        assert.equal(r.version, call.version, `${label(call)}: ${show(r)}`);
        if (call.version === '1') {
          assert.equal(r.verdict, 'diverges', `${label(call)}: ${show(r)}`);
          assert.match(r.why, /version "1"/, `${label(call)}: ${show(r)}`);
        } else {
          assert.equal(r.verdict, 'continues', `${label(call)}: ${show(r)}`);
        }
      }
      // The per-version table: version 1's calls, and that they park.
      const v1Line = table.split('\n').find((l) => /^deploy\s+1\s+missing\s/.test(l));
      assert.ok(v1Line, `no line for deploy version 1: ${table}`);
      assert.match(v1Line, new RegExp(`\\s${held.filter((c) => c.tool === 'deploy' && c.version === '1').length}\\s`), v1Line);
      assert.match(v1Line, /park/i, v1Line);
    });
  });

  describe('v3 serves, keeping v2\'s body but no longer v1\'s', { concurrency: 8 }, () => {
    let v3;
    before(async () => {
      v3 = await stage.serve(dirs.v3);
      // Before any round on v3: version 1 is missing here, its calls still held.
      assertCounts(v3.url, { 1: 'missing', 2: 'kept' });
    });
    after(async () => { await v3?.stop(); });

    test('v3 lists deploy, no longer deploy_moving', async () => {
      const names = await toolNames(v3.url);
      for (const w of WIRES) assert.ok(names.includes(toolOn('deploy', w)), `${toolOn('deploy', w)} listed`);
      assert.ok(!names.some((n) => n.startsWith('deploy_moving')), names.join());
    });

    for (const call of inGroup('parked')) {
      test(`${label(call)}: parks naming version 1, no effect runs`, { timeout: 120_000 }, async () => {
        const before = effects(call);
        const end = await goOn(call, 'v3');
        call.v3 = end;
        assertParked(end, call);
        assert.deepEqual(effects(call), before, `${label(call)}: [tickets, pages] unchanged`);
        assert.deepEqual(before, [hasOnce(call.wire) && call.pause === 'verdict' ? 1 : 0, 0], `${label(call)}: v1's effects`);
      });
    }

    for (const call of inGroup('v2paused')) {
      test(`${label(call)}: paused on v2, continues on v2's body kept by v3`, { timeout: 120_000 }, async () => {
        const end = await goOn(call, 'v3');
        assertDone(end, v2Result(call), call);
        assert.deepEqual(askedSince(call, call.mark), [], `${label(call)}: asked on v3`);
        assert.deepEqual(effects(call), [0, hasOnce(call.wire) ? 1 : 0], `${label(call)}: [tickets, pages]`);
      });
    }

    for (const call of inGroup('fresh3')) {
      test(`${label(call)}: a new call runs v3's body`, { timeout: 120_000 }, async () => {
        const end = ended(call, await runToEnd(call, await call.start(), respond));
        assertDone(end, v2Result(call), call);
        assert.deepEqual(askedSince(call, 0), ['risk', 'window'], label(call));
        assert.deepEqual(effects(call), [0, hasOnce(call.wire) ? 1 : 0], `${label(call)}: [tickets, pages]`);
      });
    }
  });

  describe('rolled back to v2, the same requests continue the parked calls', { concurrency: 8 }, () => {
    let v2;
    before(async () => {
      v2 = await stage.serve(dirs.v2);
      // What v3 did: v1's calls parked, still on version 1 (kept here); v2's
      // finished. A parked task answered at its sampling needs nothing more:
      // its alarm (every PARKED_RETRY_SECONDS) may have finished it already.
      const settling = inGroup('parked', 'task').filter((c) => c.pause === 'verdict');
      assertCounts(v2.url, { 1: 'kept', 2: 'current' }, settling);
    });
    after(async () => { await v2?.stop(); });

    for (const call of inGroup('parked')) {
      const how = call.wire === 'session' ? 'its stream resumed' : call.wire === 'task' ? 'its alarm' : 'the same request';
      test(`${label(call)}: continues to v1's result (${how}), its ticket opened once`, { timeout: 120_000 }, async () => {
        assert.ok(call.v3, 'v3 met it');
        const end = ended(call, trace(call, 'rollback', await runToEnd(call, await call.resend(), respond)));
        assertDone(end, v1Result(call), call);
        assert.deepEqual(askedSince(call, call.mark), call.pause === 'target' ? ['verdict'] : [], `${label(call)}: asked after the rollback`);
        assert.deepEqual(effects(call), [hasOnce(call.wire) ? 1 : 0, 0], `${label(call)}: [tickets, pages] in all`);
      });
    }
  });

  describe('after the rollback, no call is left on version 1', () => {
    let v2;
    before(async () => { v2 = await stage.serve(dirs.v2); });
    after(async () => { await v2?.stop(); });

    test('the operator counts none: version 1 can be removed', { timeout: 120_000 }, async () => {
      assert.deepEqual(heldCalls(), {}, 'the test holds no call');
      const got = assertCounts(v2.url, {});
      assert.equal(got.deploy?.['1']?.standing, 'kept', show(got.deploy));
    });
  });
});
