// Paused calls across a deploy that changes the tool's code (issue 31), end
// to end: a user's worker crate (tests/e2e/deploys/: v1 and v2 of its
// lib.rs, one `deploy` tool per case) copied out of the repository, its
// durable-mcp dependency pointed at this checkout, built with worker-build
// into one shared target directory (v2 compiles only its own crate), and
// served by `wrangler dev` (or plain `workerd serve`, the twin
// deploys.workerd.test.mjs) on one --persist-to directory with fixed
// STATE_KEYS (tests/e2e/user-crate.mjs, shared with pinning.test.mjs):
//
// 1. v1 pauses a call per case on every wire — 2026-07-28 MRTR (stateless:
//    no `once`), durable MRTR, tools/callSaga + tools/resumeSaga, the
//    streamless sketch, the 2025-11-25 session wire, tasks — at the form,
//    at the sampling, holding a recorded `once` (its ticket POSTed to the
//    test's webhook), or mid-sleep (a task sleeping in its object).
// 2. v1 stops; v2 serves the same storage and keys, and each client carries
//    on as it would (the user now picks "production" when asked again).
//    Wording and shape changes, a changed timer, an inserted or removed step
//    and the unchanged controls reach the right result, each ticket opened
//    once; a renamed ask or `once` key, a `once` output of another type and
//    the tool removed never open a second ticket and never answer a result:
//    -32050 (HTTP 409) naming the tool and the key on the request/response
//    wires, an error log on a session call's stream (the call stays open), a
//    task kept working with a "Stuck:" status message.
//    Before v2 serves, the replay check (issue 31's "check a deploy before
//    making it"): scripts/export-paused.mjs reads the paused calls out of
//    v1's stopped storage (the stateless MRTR calls are not there: their
//    journal is the client's requestState), and v2's crate replays them
//    natively (deploys/deploy_check.rs, its tests/deploy_check.rs, compiled
//    ahead with the builds): a verdict per call — continues, asks again,
//    diverges. Each call's verdict must then match what v2 does with it.
// 3. v2 stops; v1 serves again (a rollback), and the same request (a
//    session: its stream resumed, or its answer sent again; a task: its
//    alarm, retried every PARKED_RETRY_SECONDS) continues each diverged call
//    to v1's result, its ticket still the one opened before the deploy —
//    the removed tool's calls too, whichever question they paused at.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { VIA } from './server.mjs';
import {
  answersErrors, buildUserCrate, Call, CALL_ID, exportPausedCalls, hasOnce, prepareReplayCheck, runCheck, runToEnd,
  show, sleep,
  Stage, stuck, toolNames, toolOn, WIRES,
} from './user-crate.mjs';

const SOURCES = join(import.meta.dirname, 'deploys');
// The same on every server of this run: v2 must open what v1 sealed.
const STATE_KEYS = 'deploys:deploys-e2e-state-key-0123456789abcdef';
// How often a task the code cannot replay is tried again (default 60).
const PARKED_RETRY_SECONDS = 3;

/** How long v1's sleepers wait (`WAIT` in deploys/deploy.rs). */
const WAIT_MS = 15_000;

// ---------------------------------------------------------------------------
// The user's worker, v1 and v2, built outside the repository
// ---------------------------------------------------------------------------

/** Writes version `v` of the crate into a fresh directory outside the repository and builds it. */
async function build(v) {
  const parent = mkdtempSync(join(tmpdir(), 'durable-mcp-deploys-'));
  stage.temps.push(parent);
  return buildUserCrate({
    // Named per version and per twin: the crates share a target directory.
    crate: `deploys-${VIA}-${v}`, worker: 'deploys', parent, dirName: v,
    files: { 'src/lib.rs': join(SOURCES, v, 'src/lib.rs'), 'src/deploy.rs': join(SOURCES, 'deploy.rs') },
  });
}

// ---------------------------------------------------------------------------
// The replay check: v1's paused calls, exported, replayed against v2's code
// ---------------------------------------------------------------------------

/** Puts the native replay check into v2's crate, compiled (see user-crate.mjs). */
const prepareCheck = (dir, v) => prepareReplayCheck(dir, `deploys_${VIA}_${v}`, join(SOURCES, 'deploy_check.rs'));
/** scripts/export-paused.mjs on the stopped server's storage: the paused calls it wrote to `out`. */
const exportPaused = (out) => exportPausedCalls(persistTo, out);

/** Where the export keeps a call of this wire (scripts/export-paused.mjs's ids). */
const keptAs = (wire) => (wire === 'session' ? 'session:' : wire === 'task' ? 'task:' : 'durable:');
/** A call as the export names it: its tool and its arguments (each call's `service` is its own). */
const exportKey = (tool, args) => `${tool} ${JSON.stringify(args)}`;

/**
 * What v2 did with a call, in the check's terms: `continues` (it went on to
 * its end, asking nothing answered before the deploy: only what it was
 * waiting for or a new question), `asks_again` (it asked `keys` again,
 * answered before the deploy), `diverges` (-32050, or a session's error log,
 * or a task's "Stuck:" status; `key` as the error names it, `named` the text
 * that must name the verdict's key), or what it ended as otherwise.
 */
function observe(call, end, mark) {
  const newly = call.asked.slice(mark);
  const waiting = new Set(Object.keys(call.pending ?? {}));
  const before = new Set(call.asked.slice(0, mark).filter((k) => !waiting.has(k)));
  const again = [...new Set(newly.filter((k) => before.has(k)))].sort();
  const shown = { newly, end: end.kind === 'done' ? `done: ${end.text}` : show(end).slice(0, 300) };
  if (end.kind === 'done') return again.length ? { outcome: 'asks_again', keys: again, ...shown } : { outcome: 'continues', ...shown };
  if (end.kind === 'failed' && end.error?.code === -32050) return { outcome: 'diverges', key: end.error.data?.key ?? '', ...shown };
  if (end.kind === 'stuck' && call.wire === 'session') {
    const log = call.notes.find((m) => m.method === 'notifications/message' && m.params?.level === 'error'
      && m.params.data?.code === -32050);
    if (log) return { outcome: 'diverges', key: log.params.data.data?.key ?? '', ...shown };
  }
  if (end.kind === 'stuck' && call.wire === 'task' && stuck(call.lastTask ?? {})) {
    return { outcome: 'diverges', named: call.lastTask.statusMessage, ...shown };
  }
  return { outcome: end.kind, ...shown };
}

/** Why the check's verdict on a call does not match what v2 did with it; null when it does. */
function mismatch(call) {
  const v = call.verdict;
  const o = call.observed;
  if (!v) return 'no verdict';
  if (!o) return 'v2 never met it (its test failed before the call ended)';
  if (v.verdict !== o.outcome) return `the check said ${v.verdict}, v2 ${o.outcome}`;
  if (v.verdict === 'asks_again' && JSON.stringify([...v.keys].sort()) !== JSON.stringify(o.keys)) {
    return `asked again: the check said ${v.keys}, v2 asked ${o.keys}`;
  }
  if (v.verdict === 'diverges') {
    if (o.named !== undefined) {
      const name = v.key ? `"${v.key}"` : `"${call.tool}"`;
      if (!o.named.includes(name)) return `diverges at ${name} by the check, the task's status: ${o.named}`;
    } else if (v.key !== o.key) {
      return `diverges at ${JSON.stringify(v.key)} by the check, at ${JSON.stringify(o.key)} on v2`;
    }
  }
  if (v.verdict === 'continues') {
    // What it asks next is what it was waiting for (an answer, or a
    // sleeper's timer: `cx.sleep("wait", …)`) or a new question.
    const m = /^asks (\[.*\])$/.exec(v.next);
    const next = m ? JSON.parse(m[1]) : [];
    const waited = (k) => k in (call.pending ?? {}) || (call.case.pause === 'sleep' && k === 'wait');
    const unseen = next.filter((k) => !waited(k) && !o.newly.includes(k));
    if (unseen.length) return `the check said it asks ${unseen} next; v2 never asked it`;
  }
  return null;
}

/** What v2 did, as one line of the mismatch table. */
function observedText(o) {
  if (!o) return '-';
  const at = o.key !== undefined ? ` at ${JSON.stringify(o.key)}` : '';
  const keys = o.keys ? ` ${o.keys}` : '';
  return `${o.outcome}${at}${keys}; asked after the deploy ${JSON.stringify(o.newly)}; ${o.end}`;
}

/** The check's verdict, as one line of the mismatch table. */
function verdictText(v) {
  if (!v) return '-';
  if (v.verdict === 'continues') return `continues: ${v.next}`;
  if (v.verdict === 'asks_again') return `asks again: ${v.keys}`;
  if (v.verdict === 'diverges') return `diverges at ${JSON.stringify(v.key)}: ${v.why}`;
  return `fails: ${v.message}`;
}

// ---------------------------------------------------------------------------
// The calls: a case per tool, paused on every wire
// ---------------------------------------------------------------------------

/** The tickets v1 opened before it paused `call`: only the early variants open theirs before the sampling, after the form. */
const EARLY = ['control_early', 'ask_key_renamed', 'once_key_renamed', 'once_type_changed', 'tool_removed'];
const ticketsInV1 = (call) => (hasOnce(call.wire) && EARLY.includes(call.case.tool) && call.case.pause !== 'form' ? 1 : 0);

/** A case's call: `<case>-<pause>-<wire>` its service, its tickets at `/t/<service>`. */
class DeployCall extends Call {
  constructor(wire, c) {
    super(wire, toolOn(c.tool, wire), `${c.tool}-${c.pause}-${wire}`.replaceAll('_', '-'));
    this.case = c;
  }
}

/**
 * What each case pauses and expects. `continues`: to v1's result (staging);
 * `asksAgain`: the form asked again, the new answer (production) used;
 * `diverges`: -32050 naming one of `keys`, then v1's result after the rollback.
 */
const CASES = [
  { tool: 'control', pause: 'form', expect: 'continues' },
  { tool: 'control', pause: 'sampling', expect: 'continues' },
  { tool: 'control_early', pause: 'sampling', expect: 'continues' },
  { tool: 'control_sleep', pause: 'sleep', expect: 'continues' },
  { tool: 'message_edited', pause: 'form', expect: 'continues' },
  { tool: 'message_edited', pause: 'sampling', expect: 'continues' },
  { tool: 'optional_field', pause: 'form', expect: 'continues' },
  { tool: 'optional_field', pause: 'sampling', expect: 'continues' },
  { tool: 'required_field', pause: 'sampling', expect: 'asksAgain' },
  { tool: 'timer_changed', pause: 'sleep', expect: 'continues' },
  { tool: 'step_inserted', pause: 'sampling', expect: 'continues', newKey: 'confirm' },
  { tool: 'step_removed', pause: 'sampling', expect: 'continues' },
  { tool: 'ask_key_renamed', pause: 'sampling', expect: 'diverges', keys: ['ticket'], once: true },
  { tool: 'once_key_renamed', pause: 'sampling', expect: 'diverges', keys: ['ticket2', 'ticket'], once: true },
  { tool: 'once_type_changed', pause: 'sampling', expect: 'diverges', keys: ['ticket'], once: true },
  { tool: 'tool_removed', pause: 'form', expect: 'diverges', keys: [] },
  { tool: 'tool_removed', pause: 'sampling', expect: 'diverges', keys: [] },
];

/** What a user and a model answer: the form filled in, a confirmation given, "yes". */
function respond(asks, target) {
  const out = {};
  for (const [key, req] of Object.entries(asks)) {
    if (req.method === 'elicitation/create') {
      const props = req.params?.requestedSchema?.properties ?? {};
      const content = {};
      if (props.target) content.target = target;
      if (props.approver) content.approver = 'ann';
      if (props.ok) content.ok = true;
      out[key] = { action: 'accept', content };
    } else if (req.method === 'sampling/createMessage') {
      out[key] = { role: 'assistant', content: { type: 'text', text: 'yes' }, model: 'e2e-model' };
    } else {
      throw new Error(`asked ${key} by ${req.method}: ${JSON.stringify(req)}`);
    }
  }
  return out;
}


/**
 * Starts the call and answers until it pauses at its case's point; keeps
 * what the client sends next (the answers to the question it was shown).
 */
async function pauseAt(call) {
  const { pause } = call.case;
  let step = await call.start();
  for (let i = 0; i < 10; i++) {
    assert.equal(step.kind, 'asks', `v1 did not pause ${call.tool} on ${call.wire} at the ${pause}: ${show(step)}`);
    const m = step.asks;
    const here = pause === 'form' ? 'target' in m
      : pause === 'sampling' ? 'verdict' in m
        : Object.keys(m).length === 0 && call.asked.includes('verdict');
    const answers = respond(m, call.target);
    if (here) {
      call.pending = answers;
      call.paused = true;
      // No later than this, the task's sleep began.
      if (pause === 'sleep') call.sleeping = Date.now();
      return;
    }
    if (pause === 'sleep' && call.wire === 'session' && 'verdict' in m) {
      // The answer runs the round to the sleep (a checkpoint on this
      // wire); coming back would run it on, so v1 stops here.
      await call.postAnswers(answers);
      call.pending = {};
      call.paused = true;
      return;
    }
    step = await call.send(answers);
  }
  assert.fail(`v1 never paused ${call.tool} on ${call.wire} at the ${pause}`);
}

/** runToEnd's answers: the user's target of the moment (see respond). */
const answer = (m, call) => respond(m, call.target);

function expectedText(call, target = 'staging') {
  return `Deployed ${call.service} to ${target} (ticket ${hasOnce(call.wire) ? 'T-1' : 'LOCAL'}).`;
}

function assertDone(step, expected, call) {
  assert.equal(step.kind, 'done', `${call.tool} on ${call.wire}: expected ${expected}, got ${show(step)}`);
  assert.equal(step.text, expected, `${call.tool} on ${call.wire}`);
}

/** A divergence, as the wire reports it (see the file's comment). */
function assertDiverged(step, call) {
  const { keys } = call.case;
  const checkError = (error, where) => {
    assert.equal(error?.code, -32050, `${where}: ${show(error)}`);
    assert.equal(error.data?.tool, call.tool, `data.tool ${where}: ${show(error)}`);
    if (call.case.tool !== 'tool_removed') {
      // The code versions (Tool::version) that ran the call's last round and
      // met it: v1, but for ask_key_renamed, whose last round (asking the
      // renamed question) ran on v2.
      const pausedOn = call.case.tool === 'ask_key_renamed' ? /\bv2\b/ : /\bv1\b/;
      assert.match(error.data?.pausedOn ?? '', pausedOn, `data.pausedOn ${where}: ${show(error)}`);
      assert.match(error.data?.metOn ?? '', /\bv2\b/, `data.metOn ${where}: ${show(error)}`);
    }
    if (keys.length) assert.ok(keys.includes(error.data?.key), `data.key ${where}, expected one of ${keys}: ${show(error)}`);
    assert.equal(typeof error.data?.why, 'string', `data.why ${where}: ${show(error)}`);
    assert.match(error.message, /code changed/i, where);
  };
  if (answersErrors(call.wire)) {
    assert.equal(step.kind, 'failed', `${call.tool} on ${call.wire}: expected -32050, got ${show(step)}`);
    assert.equal(step.status, 409, `${call.tool} on ${call.wire}: ${show(step)}`);
    checkError(step.error, `on ${call.wire}`);
    return;
  }
  assert.equal(step.kind, 'stuck', `${call.tool} on ${call.wire}: the call must stay open, not end: ${show(step)}`);
  if (call.wire === 'session') {
    const logs = call.notes.filter((m) => m.method === 'notifications/message' && m.params?.level === 'error');
    assert.ok(logs.length > 0, `no error log on the call's stream: ${show(call.notes)}`);
    checkError(logs[0].params.data, 'in the session log');
    assert.ok(call.notes.every((m) => m.id !== CALL_ID), `a response ended the call: ${show(call.notes)}`);
  } else {
    const t = call.lastTask;
    assert.equal(t.status, 'working', `the task must stay open: ${show(t)}`);
    assert.match(t.statusMessage ?? '', /^Stuck: .*code changed/i, show(t));
    const named = keys.length ? keys.some((k) => t.statusMessage.includes(`"${k}"`)) : t.statusMessage.includes(`"${call.tool}"`);
    assert.ok(named, `the status message names ${keys.length ? keys : call.tool}: ${t.statusMessage}`);
    if (call.case.tool !== 'tool_removed') {
      const pausedOn = call.case.tool === 'ask_key_renamed' ? 'v2' : 'v1';
      assert.match(t.statusMessage, new RegExp(`paused on [^)]*\\b${pausedOn}\\b[^)]*, met [^)]*\\bv2\\b`),
        `the status message names the versions: ${t.statusMessage}`);
    }
  }
}

// ---------------------------------------------------------------------------
// The run
// ---------------------------------------------------------------------------

const calls = [];
for (const wire of WIRES) {
  for (const c of CASES) {
    if (c.once && !hasOnce(wire)) continue;
    calls.push(new DeployCall(wire, c));
  }
}
/** DEPLOYS_TRACE=<file>: what each client saw after the deploy and the rollback, as JSON lines. */
function trace(call, phase, step) {
  if (!process.env.DEPLOYS_TRACE) return;
  const evidence = call.wire === 'session' ? call.notes : call.wire === 'task' ? call.lastTask : undefined;
  appendFileSync(process.env.DEPLOYS_TRACE, `${JSON.stringify({ phase, tool: call.tool, wire: call.wire,
    pause: call.case.pause, step, evidence, tickets: hook.count(call.path), verdict: call.verdict, observed: call.observed })}\n`);
}
const label = (call) => `${call.case.tool} paused at the ${call.case.pause}, on ${call.wire}`;
const sleepers = (wire) => calls.filter((c) => c.wire === wire && c.case.pause === 'sleep');
const others = (wire) => calls.filter((c) => c.wire === wire && c.case.pause !== 'sleep');

let v1Dir;
let v2Dir;
/** How long compiling v2's native check took (in before()). */
let checkBuildMs;
/** v2 opens what v1 sealed; a task the code cannot replay is tried again every PARKED_RETRY_SECONDS (default 60). */
const stage = new Stage({ stateKeys: STATE_KEYS, vars: { PARKED_RETRY_SECONDS: String(PARKED_RETRY_SECONDS) } });
stage.calls.push(...calls);
const persistTo = stage.persistTo;
/** The webhook counting each call's tickets (started in before()). */
let hook;
const serve = (dir) => stage.serve(dir);

after(() => stage.cleanup());

describe(`a deploy that changes a paused call's code (${VIA})`, { timeout: 20 * 60_000 }, () => {
  before(async () => {
    hook = await stage.startWebhook();
    v1Dir = await build('v1');
    v2Dir = await build('v2');
    checkBuildMs = await prepareCheck(v2Dir, 'v2');
  }, { timeout: 20 * 60_000 });

  describe('v1 pauses a call per case on every wire', () => {
    let v1;
    before(async () => { v1 = await serve(v1Dir); });
    after(async () => { await v1?.stop(); });

    test('v1 serves every case', async () => {
      const names = await toolNames(v1.url);
      for (const c of CASES) for (const w of WIRES) assert.ok(names.includes(toolOn(c.tool, w)), `${toolOn(c.tool, w)} listed`);
    });

    for (const wire of WIRES) {
      test(`v1 pauses its calls on ${wire} at the form, at the sampling, holding a once`, { timeout: 120_000 }, async () => {
        await Promise.all(others(wire).map(pauseAt));
        for (const call of others(wire)) {
          assert.equal(hook.count(call.path), ticketsInV1(call), `${label(call)}: tickets opened in v1`);
        }
      });
    }

    // Last, and v1 stops right after: a task sleeps WAIT (15 s) in v1, and
    // its alarm must come due under v2.
    test('v1 pauses its calls mid-sleep on every wire (a task sleeping in its object)', { timeout: 120_000 }, async () => {
      await Promise.all(WIRES.flatMap(sleepers).map(pauseAt));
      for (const call of WIRES.flatMap(sleepers)) {
        // The ticket is opened before the sleep.
        for (let i = 0; i < 20 && hook.count(call.path) < Number(hasOnce(call.wire)); i++) await sleep(250);
        assert.equal(hook.count(call.path), hasOnce(call.wire) ? 1 : 0, `${label(call)}: the ticket opened before the sleep`);
        if (call.wire === 'task') {
          assert.equal(call.lastTask.status, 'working', show(call.lastTask));
          assert.match(call.lastTask.statusMessage, /^waiting/, show(call.lastTask));
        }
      }
      await v1.stop();
      // v1 stopped before any task's sleep was over: each wakes under v2.
      const first = Math.min(...sleepers('task').map((c) => c.sleeping));
      assert.ok(Date.now() - first < WAIT_MS - 2000,
        `v1 took ${Date.now() - first} ms to stop after its tasks began to sleep (${WAIT_MS} ms): they would wake under v1`);
    });
  });

  // v1 has stopped; v2 does not serve yet.
  describe('before v2 serves, the replay check gives each paused call a verdict', () => {
    let exported;
    test('export-paused reads every paused call from v1\'s storage, but the stateless ones', { timeout: 120_000 }, async () => {
      const { calls: out, summary } = await exportPaused(join(v2Dir, 'paused.json'));
      exported = out;
      const byKey = new Map(calls.map((c) => [exportKey(c.tool, c.args), c]));
      for (const e of exported) {
        const call = byKey.get(exportKey(e.tool, e.arguments));
        assert.ok(call, `an exported call the test did not make: ${show(e)}`);
        assert.ok(!call.exported, `${label(call)} exported twice: ${call.exported?.id} and ${e.id}`);
        assert.ok(e.id.startsWith(keptAs(call.wire)), `${label(call)} exported as ${e.id}`);
        call.exported = e;
      }
      // Stateless MRTR keeps nothing on the server: its journal is the client's requestState.
      assert.ok(exported.every((e) => !e.tool.endsWith('_plain')), 'no stateless call exported');
      for (const call of calls) {
        if (call.wire === 'mrtr') assert.equal(call.exported, undefined, `${label(call)}: stateless, not exported`);
        else assert.ok(call.exported, `${label(call)} (${call.tool} ${show(call.args)}) not exported`);
      }
      assert.equal(exported.length, calls.filter((c) => c.wire !== 'mrtr').length, summary);
    });

    test('v2\'s code replays each natively: continues, asks again or diverges', { timeout: 300_000 }, async () => {
      assert.ok(exported, 'exported');
      const t0 = Date.now();
      const { reports, table } = await runCheck(v2Dir, join(v2Dir, 'paused.json'));
      console.log(`${table}\n(the check built in ${checkBuildMs} ms with the workers, ran in ${Date.now() - t0} ms)`);
      assert.equal(reports.length, exported.length, table);
      const byId = new Map(reports.map((r) => [r.id, r]));
      for (const call of calls.filter((c) => c.exported)) {
        const r = byId.get(call.exported.id);
        assert.ok(r, `no verdict for ${label(call)} (${call.exported.id})`);
        assert.equal(r.tool, call.tool, call.exported.id);
        call.verdict = r;
      }
    });
  });

  describe('v2 serves the same storage and keys', { concurrency: 8 }, () => {
    let v2;
    before(async () => { v2 = await serve(v2Dir); });
    after(async () => { await v2?.stop(); });

    test('v2 no longer serves tool_removed', async () => {
      const names = await toolNames(v2.url);
      assert.ok(names.includes('control') && !names.some((n) => n.startsWith('tool_removed')), names.join());
    });

    for (const call of calls) {
      const { expect: e } = call.case;
      const what = e === 'continues' ? 'continues to its result'
        : e === 'asksAgain' ? 'asks the form again and uses the new answer'
          : 'is refused (-32050) and kept, its ticket not opened again';
      test(`${label(call)}: ${what}`, { timeout: 120_000 }, async () => {
        assert.ok(call.paused, 'v1 paused it');
        // From now on the user picks another target when asked.
        call.target = 'production';
        call.notes = [];
        const mark = call.asked.length;
        const first = await call.send(call.pending);
        const end = await runToEnd(call, first, answer);
        call.v2 = end;
        call.observed = observe(call, end, mark);
        trace(call, 'v2', end);
        const tickets = hasOnce(call.wire) ? 1 : 0;
        if (e === 'diverges') {
          assertDiverged(end, call);
          assert.equal(hook.count(call.path), ticketsInV1(call), `${label(call)}: no second ticket`);
          return;
        }
        if (end.kind === 'failed') {
          assert.notEqual(end.error?.code, -32603, `${label(call)}: ${show(end)}`);
          assert.ok(end.status < 500, `${label(call)}: ${show(end)}`);
        }
        assertDone(end, expectedText(call, e === 'asksAgain' ? 'production' : 'staging'), call);
        assert.equal(hook.count(call.path), tickets, `${label(call)}: tickets opened`);
        const newly = call.asked.slice(mark);
        if (e === 'asksAgain') assert.ok(newly.includes('target'), `the form asked again: ${newly}`);
        if (call.case.newKey) assert.ok(newly.includes(call.case.newKey), `the new question asked: ${newly}`);
      });
    }
  });

  describe('the replay check said what v2 then did', () => {
    test('each exported call\'s verdict matches what v2 did with it', () => {
      const checked = calls.filter((c) => c.exported);
      assert.ok(checked.length > 0, 'calls exported');
      const rows = checked.map((c) => ({ c, why: mismatch(c) }));
      const bad = rows.filter((r) => r.why);
      const table = bad.map(({ c, why }) => `${label(c)} [${c.exported.id}]\n    check: ${verdictText(c.verdict)}\n`
        + `    v2:    ${observedText(c.observed)}\n    ${why}`).join('\n');
      assert.equal(bad.length, 0, `${bad.length} of ${checked.length} verdicts do not match what v2 did:\n${table}`);
    });
  });

  describe('rolled back to v1, the same requests continue', { concurrency: 8 }, () => {
    let v1;
    before(async () => { v1 = await serve(v1Dir); });
    after(async () => { await v1?.stop(); });

    test('v1 serves tool_removed again', async () => {
      const names = await toolNames(v1.url);
      for (const w of WIRES) assert.ok(names.includes(toolOn('tool_removed', w)), names.join());
    });

    for (const call of calls.filter((c) => c.case.expect === 'diverges')) {
      // A session call comes back on its stream, or (once_key_renamed)
      // sends its answer again.
      const repost = call.wire === 'session' && call.case.tool === 'once_key_renamed';
      const how = call.wire === 'session' ? (repost ? 'its answer sent again' : 'its stream resumed')
        : call.wire === 'task' ? 'its alarm' : 'the same request';
      test(`${label(call)}: continues to v1's result (${how}), its ticket opened once`, { timeout: 120_000 }, async () => {
        assert.ok(call.v2, 'v2 met it');
        let again;
        if (repost) {
          await call.postAnswers(call.lastAnswers);
          again = await call.sessionGet();
        } else {
          again = await call.resend();
        }
        const end = await runToEnd(call, again, answer);
        trace(call, 'rollback', end);
        assertDone(end, expectedText(call), call);
        assert.equal(hook.count(call.path), hasOnce(call.wire) ? 1 : 0, `${label(call)}: tickets opened`);
      });
    }
  });
});
