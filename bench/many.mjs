// Many at once: a thousand tasks started in one burst against one workerd,
// each working for seconds in alarm-driven slices, and a thousand durable
// MRTR calls paused at once and answered later. Reported: whether all
// completed, whether any alarm was lost, how long until the last one
// completed, how late the slices' alarms fired against when they were due
// (bench/meter records both times at each alarm), and whether the objects'
// storage went back to nothing after its TTL (the objects' SQLite files
// and what they hold).
//
// Env: BENCH_MANY (1000: tasks, and durable calls), BENCH_MANY_STEPS (5) ×
// BENCH_MANY_STEP_MS (1000): each task's slices (`count_slowly`),
// BENCH_MANY_TTL (30: TASK_TTL_SECONDS and STATE_TTL_SECONDS, seconds),
// BENCH_MANY_CONNECTIONS (1000: connections the burst goes out on),
// BENCH_MANY_PAUSE_MS (2000: how long the durable calls stay paused).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { objectFiles } from '../tests/e2e/workerd.mjs';
import { OUT, serve } from './workerd.mjs';
import { KEY, TASKS_META, client, modernReq, taskReq } from './requests.mjs';

const N = Number(process.env.BENCH_MANY ?? 1000);
const STEPS = Number(process.env.BENCH_MANY_STEPS ?? 5);
const STEP_MS = Number(process.env.BENCH_MANY_STEP_MS ?? 1000);
const TTL = Number(process.env.BENCH_MANY_TTL ?? 30);
const CONNECTIONS = Number(process.env.BENCH_MANY_CONNECTIONS ?? 1000);
const PAUSE_MS = Number(process.env.BENCH_MANY_PAUSE_MS ?? 2000);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)] : NaN;
};

/**
 * The objects' SQLite files under `dir`, and how many still hold a table
 * of ours (a file can outlive its data: what counts is what it holds).
 */
async function storageLeft(dir) {
  const { DatabaseSync } = await import('node:sqlite');
  const files = objectFiles(dir);
  let holding = 0;
  let rows = 0;
  for (const f of files) {
    if (!existsSync(f)) continue;
    let db;
    try {
      db = new DatabaseSync(f, { readOnly: true });
      const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'").all();
      if (tables.length) holding += 1;
      for (const { name } of tables) rows += db.prepare(`SELECT count(*) AS n FROM "${name}"`).get().n;
    } catch { /* being written or gone: counted as a file only */ } finally {
      db?.close();
    }
  }
  return { files: files.length, holding, rows };
}

/** Waits until nothing is left (or `deadline`), checking every second; the last check. */
async function untilEmpty(dir, deadline) {
  for (;;) {
    const left = await storageLeft(dir);
    if (left.rows === 0 && left.holding === 0) return { ...left, at: Date.now() };
    if (Date.now() > deadline) return { ...left, at: Date.now() };
    await sleep(1000);
  }
}

/** Runs `fn` over `items` with at most `limit` at a time. */
async function pool(items, limit, fn) {
  const out = new Array(items.length);
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i], i);
    }
  }));
  return out;
}

const meter = async (c, base, reset = false) => (await c.send(base, { method: reset ? 'POST' : 'GET', path: '/__meter', headers: {}, body: '' })).json;

/** A thousand tasks at once, each `count_slowly` over STEPS alarm-driven slices. */
async function tasks(c, base, disk) {
  await meter(c, base, true);
  const t0 = Date.now();
  const created = await Promise.all(Array.from({ length: N }, () =>
    c.send(base, modernReq('count_slowly', { to: STEPS, step_ms: STEP_MS }, { _meta: TASKS_META })).catch((e) => ({ error: e }))));
  const startedIn = Date.now() - t0;
  const ids = created.map((r) => r.json?.result?.taskId).filter(Boolean);
  const peak = await storageLeft(disk);
  // Polled once the work should be done (every few hundred ms, a
  // thousand tasks would be load of their own), then again until settled.
  await sleep(Math.max(0, t0 + STEPS * STEP_MS - Date.now()));
  const settled = new Map();
  const deadline = Date.now() + 120_000;
  while (settled.size < ids.length && Date.now() < deadline) {
    const open = ids.filter((id) => !settled.has(id));
    await pool(open, 64, async (id) => {
      // A reset connection is polled again on the next sweep.
      const r = await c.send(base, taskReq('tasks/get', id)).catch(() => null);
      const t = r?.json?.result;
      if (t && ['completed', 'failed', 'cancelled'].includes(t.status)) settled.set(id, t);
    });
    if (settled.size < ids.length) await sleep(500);
  }
  const done = [...settled.values()].filter((t) => t.status === 'completed' && /^Counted to \d+/.test(t.result?.content?.[0]?.text ?? ''));
  const last = Math.max(...[...settled.values()].map((t) => Date.parse(t.lastUpdatedAt) - t0));
  const m = await meter(c, base);
  const afterTtl = await untilEmpty(disk, t0 + TTL * 1000 + 90_000);
  const end = await meter(c, base);
  return {
    what: `${N} tasks (\`count_slowly\`, ${STEPS} slices of ${STEP_MS} ms)`, startedIn, created: ids.length, completed: done.length,
    last, ideal: STEPS * STEP_MS, alarms: m.alarmsFired, alarmsExpected: ids.length * STEPS, lateness: m.lateness,
    peak, afterTtl, emptyAfter: afterTtl.at - t0, ttlAlarms: end.alarmsFired - m.alarmsFired, deleteAll: end.deleteAll,
    cleanup: cleanupOf(m, end, ids.length), errors: created.filter((r) => r.error || r.status !== 200).length,
  };
}

/** A thousand durable `deploy` calls paused at once, answered later (two questions each). */
async function durableCalls(c, base, disk) {
  await meter(c, base, true);
  const args = (i) => ({ service: `svc-${i}` });
  const t0 = Date.now();
  const firsts = await Promise.all(Array.from({ length: N }, (_, i) =>
    c.send(base, modernReq('deploy', args(i))).catch((e) => ({ error: e }))));
  const startedIn = Date.now() - t0;
  const paused = firsts.map((r, i) => ({ i, state: r.json?.result?.requestState })).filter((p) => p.state);
  const peak = await storageLeft(disk);
  await sleep(PAUSE_MS);
  const t1 = Date.now();
  const answer = (p, state, inputResponses) => c.send(base, modernReq('deploy', args(p.i), { requestState: state, inputResponses }))
    .catch((e) => ({ error: e }));
  const seconds = await Promise.all(paused.map((p) => answer(p, p.state, { target: { action: 'accept', content: { target: 'staging' } } })));
  const thirds = await Promise.all(paused.map((p, k) => answer(p, seconds[k].json?.result?.requestState,
    { safety: { role: 'assistant', content: { type: 'text', text: 'yes' } } })));
  const answeredIn = Date.now() - t1;
  const completed = thirds.filter((r) => /^Deployed svc-/.test(r.json?.result?.content?.[0]?.text ?? '')).length;
  const m = await meter(c, base);
  // A shard sweeps calls idle a whole TTL, no sooner than a 64th of it
  // after its last sweep: the storage goes within about TTL × 65/64.
  const afterTtl = await untilEmpty(disk, Date.now() + TTL * 1000 * 2 + 60_000);
  const end = await meter(c, base);
  return {
    what: `${N} durable calls (\`deploy\`, paused at once, answered ${PAUSE_MS} ms later)`, startedIn, created: paused.length,
    answeredIn, completed, alarms: m.alarmsFired, alarmsSet: m.alarmsSet, peak, afterTtl, emptyAfter: afterTtl.at - t1,
    ttlAlarms: end.alarmsFired - m.alarmsFired, deleteAll: end.deleteAll, lateness: end.lateness, cleanup: cleanupOf(m, end, paused.length),
    errors: [...firsts, ...seconds, ...thirds].filter((r) => r.error || r.status !== 200).length,
  };
}

/** What the cleanup after the TTL cost, per call: DO requests (its alarms), rows written (its deletions). */
const cleanupOf = (before, after, calls) => ({
  objectRequests: (after.objectRequests - before.objectRequests) / calls,
  rowsWritten: (after.rowsWritten + after.kvRowsWritten + after.alarmsSet - before.rowsWritten - before.kvRowsWritten - before.alarmsSet) / calls,
  deleteAll: (after.deleteAll - before.deleteAll) / calls,
});

const ms = (x) => `${Math.round(x)}`;
const per = (c) => `${c.objectRequests.toFixed(2)}, ${c.rowsWritten.toFixed(2)}`;
const lateness = (xs) => (xs.length ? `${ms(quantile(xs, 0.5))} / ${ms(quantile(xs, 0.99))} / ${ms(Math.max(...xs))} ms (of ${xs.length})` : 'none fired');

/** Both runs against the metered fixtures worker on a workerd of their own; prints and returns the results. */
export async function manyAtOnce(fixtures) {
  const w = { ...fixtures, name: 'many', meter: true,
    vars: { ...fixtures.vars, TASK_TTL_SECONDS: String(TTL), STATE_TTL_SECONDS: String(TTL) } };
  const { ports, stop, disk } = await serve([w], { storage: join(OUT, 'many-storage'), config: 'many.capnp' });
  const base = `http://127.0.0.1:${ports.many}`;
  const c = client(CONNECTIONS);
  try {
    const t = await tasks(c, base, disk);
    const d = await durableCalls(c, base, disk);
    console.log(`\nmany at once: one workerd, each burst over up to ${CONNECTIONS} connections, TTLs ${TTL} s `
      + '(workerd keeps an emptied object\'s SQLite file on disk: what counts is what the files hold)\n');
    console.log('| run | burst took | completed | the last done | alarms fired | alarm lateness p50 / p99 / max | at the peak: objects holding data, rows | after the TTL: objects holding data, rows (files) | cleanup alarms, storage deletions | cleanup per call: DO requests, rows written | errors |');
    console.log('|---|---|---|---|---|---|---|---|---|---|---|');
    console.log(`| ${t.what} | ${ms(t.startedIn)} ms | ${t.completed} of ${N} | ${ms(t.last)} ms after the burst (the work: ${t.ideal} ms) | `
      + `${t.alarms} of ${t.alarmsExpected} slices | ${lateness(t.lateness)} | ${t.peak.holding}, ${t.peak.rows} | `
      + `${t.afterTtl.holding}, ${t.afterTtl.rows} (${t.afterTtl.files}), ${ms(t.emptyAfter / 1000)} s after the burst | ${t.ttlAlarms}, ${t.deleteAll} | ${per(t.cleanup)} | ${t.errors} |`);
    console.log(`| ${d.what} | ${ms(d.startedIn)} ms | ${d.completed} of ${N} | answered in ${ms(d.answeredIn)} ms (2 rounds each) | `
      + `${d.alarmsSet} set, ${d.alarms} fired before the TTL | ${lateness(d.lateness)} | ${d.peak.holding}, ${d.peak.rows} | `
      + `${d.afterTtl.holding}, ${d.afterTtl.rows} (${d.afterTtl.files}), ${ms(d.emptyAfter / 1000)} s after the answers | ${d.ttlAlarms}, ${d.deleteAll} | ${per(d.cleanup)} | ${d.errors} |`);
    return { tasks: { ...t, lateness: undefined, latenessP50: quantile(t.lateness, 0.5), latenessP99: quantile(t.lateness, 0.99), latenessMax: Math.max(...t.lateness) },
      durable: { ...d, lateness: undefined } };
  } finally {
    c.close();
    stop();
  }
}
