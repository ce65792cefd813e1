#!/usr/bin/env node
// Exports the paused calls a local `wrangler dev --persist-to <dir>` keeps,
// as the JSON array `durable_mcp::replay::PausedCall` reads, for checking a
// changed worker before deploying it (`DEPLOY_CHECK=paused.json cargo test
// --test deploy_check -- --nocapture` in a crate `durable-mcp new` made; see
// the guide's "Changing a tool while calls are paused").
//
//   node scripts/export-paused.mjs <persist-dir> [--out paused.json]
//
// Needs Node 22 (its built-in node:sqlite; in this repository:
// `source scripts/lib.sh; PATH="$NODE22_BIN:$PATH" node scripts/export-paused.mjs …`).
// Stop wrangler dev first, so what it wrote is all in the files. The files
// are opened read-only.
//
// It reads every Durable Object's SQLite file under <dir>/v3/do (or under
// <dir> itself when there is no v3/do: a plain workerd's localDisk), the
// tables src/worker/*_store.rs write:
//   - durable_calls (id, status, journal, …): each call not finished
//     (`waiting`, `parked`, or `working`: a round claimed and not finished;
//     rows stored before there was one status: `awaiting_input`, `running`);
//     its tool and arguments are the journal's `invocation`.
//   - session_calls (stream, json: a SessionCall) beside session_meta (json:
//     the session): each `tools/call` whose state is not final (completed,
//     failed, cancelled); tool and arguments from its params.
//   - durable_task (record: a TaskRecord): the task unless it is completed,
//     failed or cancelled.
//   Each journal's answers and effects' outputs may be in journal_log
//   (the journal's log, src/store/log.rs): see `assemble`.
// Each becomes {id, tool, arguments, journal}, the journal as stored, its
// numbers written exactly as stored. The ids: `durable:<call id>`,
// `session:~<h>/<call id>`, `task:~<h>`, where <h> is the first 16 hex
// digits of the SHA-256 of the session or task id: those ids are bearer
// capabilities (whoever holds one reaches the session or the task), so the
// file never holds them. Nothing else of a row is written: no resume
// token, principal, caller or session metadata. The journals hold the
// users' answers so far — what the check replays.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const USAGE = 'usage: node scripts/export-paused.mjs <persist-dir> [--out file.json]';

function fail(message, code = 1) {
  process.stderr.write(`export-paused: ${message}\n`);
  process.exit(code);
}

function parseArgs(argv) {
  let dir;
  let out;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--help' || a === '-h') {
      process.stdout.write(`${USAGE}\n`);
      process.exit(0);
    } else if (a === '--out' || a === '-o') {
      out = argv[++i];
      if (!out) fail(`--out needs a file\n${USAGE}`, 64);
    } else if (a.startsWith('--out=')) {
      out = a.slice('--out='.length);
    } else if (a.startsWith('-')) {
      fail(`unknown option ${a}\n${USAGE}`, 64);
    } else if (dir === undefined) {
      dir = a;
    } else {
      fail(`one persist directory only (got ${a} too)\n${USAGE}`, 64);
    }
  }
  if (dir === undefined) fail(USAGE, 64);
  return { dir: resolve(dir), out };
}

/** node:sqlite, without its "experimental" warning on stderr. */
async function sqlite() {
  const emit = process.emitWarning;
  process.emitWarning = (w, ...rest) => {
    if (String(w?.message ?? w).includes('SQLite')) return;
    emit.call(process, w, ...rest);
  };
  try {
    return (await import('node:sqlite')).DatabaseSync;
  } catch {
    return fail(`node:sqlite is not available in Node ${process.version}: run it with Node 22 ` +
      '(in this repository: source scripts/lib.sh; PATH="$NODE22_BIN:$PATH" node scripts/export-paused.mjs …)');
  } finally {
    process.emitWarning = emit;
  }
}

/** The objects' SQLite files under `root`, sorted (metadata.sqlite is wrangler's own). */
function objectFiles(root) {
  const files = [];
  const walk = (d) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile() && e.name.endsWith('.sqlite') && e.name !== 'metadata.sqlite') files.push(p);
    }
  };
  walk(root);
  return files.sort();
}

/**
 * JSON text parsed with every number kept as its text (JSON.rawJSON), so a
 * number the journal holds is written back digit for digit (an integer
 * above 2^53 would otherwise change).
 */
function parseExact(text) {
  return JSON.parse(text, (_key, value, context) =>
    (typeof value === 'number' && context?.source !== undefined ? JSON.rawJSON(context.source) : value));
}

/** What a bearer id becomes in the file. */
function hidden(id) {
  return `~${createHash('sha256').update(String(id)).digest('hex').slice(0, 16)}`;
}

/**
 * A kept journal as its rows hold it (src/store/log.rs): a stored whole
 * journal as it is; a head (the journal's fields, with `log` and `bytes`)
 * with its log's deltas (journal_log, owned by `owner`) applied in order.
 */
function assemble(db, tables, owner, stored) {
  if (!stored || stored.log === undefined) return stored;
  const { log: _log, bytes: _bytes, ...journal } = stored;
  const count = Number(JSON.stringify(stored.log));
  if (count === 0) return journal;
  if (!tables.has('journal_log')) throw new Error(`${owner}: its journal's log is missing`);
  const bodies = [];
  for (const row of db.prepare('SELECT n, body FROM journal_log WHERE owner = ? ORDER BY n, seq').all(owner)) {
    const n = Number(row.n);
    if (bodies.length && bodies[bodies.length - 1].n === n) bodies[bodies.length - 1].body += row.body;
    else bodies.push({ n, body: row.body });
  }
  if (bodies.length !== count) throw new Error(`${owner}: its journal's log holds ${bodies.length} deltas of ${count}`);
  const map = (k) => { journal[k] ??= {}; return journal[k]; };
  const trail = () => { journal.trail ??= {}; return journal.trail; };
  const times = (k) => { trail()[k] ??= {}; return trail()[k]; };
  for (const { body } of bodies) {
    const d = parseExact(body);
    const gone = d.gone ?? {};
    for (const k of gone.a ?? []) delete map('answers')[k];
    for (const k of gone.o ?? []) delete map('once')[k];
    for (const k of gone.i ?? []) delete map('once_inputs')[k];
    for (const k of gone.w ?? []) delete times('answered')[k];
    for (const k of gone.e ?? []) delete times('effects')[k];
    Object.assign(map('answers'), d.a ?? {});
    Object.assign(map('once'), d.o ?? {});
    Object.assign(map('once_inputs'), d.i ?? {});
    if (d.w) Object.assign(times('answered'), d.w);
    if (d.e) Object.assign(times('effects'), d.e);
    if (d.x !== undefined && journal.invocation) journal.invocation.arguments = d.x;
  }
  for (const k of ['answers', 'once', 'once_inputs']) if (journal[k] && !Object.keys(journal[k]).length) delete journal[k];
  return journal;
}

const FINAL_SESSION = new Set(['completed', 'failed', 'cancelled']);
const TERMINAL_TASK = new Set(['completed', 'failed', 'cancelled']);

/** The paused calls of one object's database. */
function pausedIn(db, file, notes) {
  const tables = new Set(db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all().map((r) => r.name));
  const out = [];
  if (tables.has('durable_calls')) {
    const rows = db.prepare("SELECT id, status, journal FROM durable_calls WHERE status NOT IN ('completed', 'failed', 'cancelled', 'purged') ORDER BY id").all();
    for (const row of rows) {
      const journal = assemble(db, tables, row.id, parseExact(row.journal));
      const inv = journal.invocation;
      if (!inv || typeof inv.tool !== 'string') {
        notes.push(`${file}: durable call ${row.id} (${row.status}) has no invocation in its journal (stored before calls kept their tool): skipped`);
        continue;
      }
      out.push({ id: `durable:${row.id}`, tool: inv.tool, arguments: inv.arguments ?? null, journal, kind: 'durable' });
    }
  }
  if (tables.has('session_calls')) {
    const meta = tables.has('session_meta') ? db.prepare('SELECT json FROM session_meta WHERE id = 1').get() : undefined;
    const sid = meta ? JSON.parse(meta.json).id : undefined;
    for (const row of db.prepare('SELECT json FROM session_calls ORDER BY stream').all()) {
      const call = parseExact(row.json);
      if (call.method !== 'tools/call' || FINAL_SESSION.has(call.state)) continue;
      const name = call.params?.name;
      if (typeof name !== 'string') {
        notes.push(`${file}: session call ${call.stream} has no tool name: skipped`);
        continue;
      }
      // Rows stored before calls had an id of their own are keyed by stream.
      const callId = call.call_id || call.stream;
      const session = sid === undefined ? hidden(file) : hidden(sid);
      out.push({
        id: `session:${session}/${callId}`, tool: name, arguments: call.params.arguments ?? null,
        journal: assemble(db, tables, `session/${call.stream}`, call.journal), kind: 'session',
      });
    }
  }
  if (tables.has('durable_task')) {
    const row = db.prepare('SELECT record FROM durable_task WHERE id = 1').get();
    if (row) {
      const task = parseExact(row.record);
      if (!TERMINAL_TASK.has(task.status)) {
        out.push({ id: `task:${hidden(task.task_id)}`, tool: task.tool, arguments: task.arguments ?? null,
          journal: assemble(db, tables, 'task', task.journal), kind: 'task' });
      }
    }
  }
  return out;
}

async function main() {
  const { dir, out } = parseArgs(process.argv.slice(2));
  if (!existsSync(dir) || !statSync(dir).isDirectory()) fail(`${dir} is not a directory`);
  const v3 = join(dir, 'v3', 'do');
  const root = existsSync(v3) ? v3 : dir;
  const DatabaseSync = await sqlite();
  const files = objectFiles(root);
  const notes = [];
  const calls = [];
  for (const file of files) {
    let db;
    try {
      db = new DatabaseSync(file, { readOnly: true });
      calls.push(...pausedIn(db, file, notes));
    } catch (e) {
      fail(`${file}: ${e.message} (is wrangler dev still running? stop it first)`);
    } finally {
      db?.close();
    }
  }
  calls.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const count = (k) => calls.filter((c) => c.kind === k).length;
  const json = `${JSON.stringify(calls.map(({ kind, ...c }) => c), null, 2)}\n`;
  if (out) writeFileSync(out, json);
  else process.stdout.write(json);
  for (const n of notes) process.stderr.write(`export-paused: ${n}\n`);
  process.stderr.write(`export-paused: ${calls.length} paused call(s) (${count('durable')} durable, ${count('session')} session, ` +
    `${count('task')} task) from ${files.length} object file(s) under ${root}${out ? ` to ${out}` : ''}\n`);
}

await main();
