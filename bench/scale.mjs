// Scale (issue 46): the requests each Durable Object receives per call, on
// every wire, counted on workerd, and the model (bench/model.mjs) they
// feed: which object saturates first, at what rate of new calls.
//
// 1. Profiles: the fixtures worker served metered (bench/meter: each
//    object's requests by name, alarms included); each wire's call made
//    BENCH_SCALE_CALLS (20) times, one at a time; per call, the requests
//    to each class of object (a call shard, an index shard, a hub, a task's
//    or a session's own object) and the most any one object received.
//    The build before (BENCH_EXTRA_BUNDLE, e.g. the commit before issue 46)
//    is profiled the same way when served (BENCH_SCALE_RECORD=<commit>
//    records it); else its profile is the one recorded in
//    bench/scale-before.json.
// 2. The model checked: a mixed run (the wires interleaved) counted on
//    workerd against the model's prediction from the profiles, per class
//    (within 10 % is the bar).
// 3. The model run: BENCH_SCALE_RATE (10,000) new calls a second across
//    three regions, each object's capacity BENCH_SCALE_CAPACITY (1,000
//    requests a second), a call living BENCH_SCALE_LIFETIME (30) seconds:
//    per wire and design, the hottest object and its utilization, and the
//    rate where the first object saturates.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { OUT, ROOT, serve } from './workerd.mjs';
import { KEY, client } from './requests.mjs';
import { mrtr, openSession, sessionCall, task } from './cost.mjs';
import { DESIGNS, OWN, classOf, predictTotals, simulate } from './model.mjs';

const CALLS = Number(process.env.BENCH_SCALE_CALLS ?? 20);
const RATE = Number(process.env.BENCH_SCALE_RATE ?? 10000);
const CAPACITY = Number(process.env.BENCH_SCALE_CAPACITY ?? 1000);
const LIFETIME = Number(process.env.BENCH_SCALE_LIFETIME ?? 30);
const REGIONS = ['enam', 'weur', 'apac'];
const BEFORE_FILE = join(ROOT, 'bench/scale-before.json');

const SESSION_ANSWER = { action: 'accept', content: { name: 'bench' } };

/** The wires: one call each, as a client makes it. */
const WIRES = {
  durable: {
    label: 'durable MRTR (two questions, 3 requests)',
    call: (c, base) => mrtr(c, base, 'deploy', { service: 'bench' }, [{ target: { action: 'accept', content: { target: 'staging' } } },
      { safety: { role: 'assistant', content: { type: 'text', text: 'yes' } } }]),
  },
  session: {
    label: '2025-11-25 session (opened, one paused call, ended)',
    call: async (c, base, n) => {
      const headers = await openSession(c, base);
      await sessionCall(c, base, headers, 'test_input_required_result_elicitation', SESSION_ANSWER, n);
      await c.send(base, { method: 'DELETE', headers: { 'mcp-session-id': headers['mcp-session-id'], 'mcp-protocol-version': '2025-11-25' }, body: '' });
    },
  },
  task: { label: 'task (one question: call, polls, tasks/update)', call: (c, base) => task(c, base) },
};

const meter = async (c, base, method) => (await c.send(base, { method, path: '/__meter', headers: {}, body: '' })).json;

/** Requests per class over `byObject`, and the most one object got. */
function byClass(byObject) {
  const classes = {};
  let most = { name: null, n: 0 };
  for (const [name, n] of Object.entries(byObject)) {
    const cls = classOf(name);
    classes[cls] = (classes[cls] ?? 0) + n;
    if (!OWN.has(cls) && n > most.n) most = { name, n };
  }
  return { classes, most };
}

/** One wire's profile on `base`: requests per call by class. */
async function profile(c, base, wire) {
  await wire.call(c, base, 900);
  await meter(c, base, 'POST');
  for (let i = 0; i < CALLS; i++) await wire.call(c, base, 1000 + i);
  // A task's last write and an ended session's index change land late.
  await new Promise((r) => setTimeout(r, 300));
  const { classes, most } = byClass((await meter(c, base, 'GET')).byObject ?? {});
  const per = Object.fromEntries(Object.entries(classes).map(([k, v]) => [k, v / CALLS]));
  return { per, most: { ...most, perCall: most.n / CALLS } };
}

/** The wires interleaved, counted, against the model's prediction from `profiles`. */
async function checkModel(c, base, profiles) {
  const mix = { durable: 12, session: 4, task: 6 };
  await meter(c, base, 'POST');
  // Interleaved: one of each wire in turn while it has calls left.
  const order = [];
  for (let i = 0; order.length < Object.values(mix).reduce((a, b) => a + b, 0); i++) {
    for (const [w, n] of Object.entries(mix)) if (i < n) order.push(w);
  }
  for (let i = 0; i < order.length; i++) await WIRES[order[i]].call(c, base, 2000 + i);
  await new Promise((r) => setTimeout(r, 300));
  const measured = byClass((await meter(c, base, 'GET')).byObject ?? {}).classes;
  const predicted = predictTotals(profiles, mix);
  const classes = [...new Set([...Object.keys(measured), ...Object.keys(predicted)])].sort();
  return classes.map((cls) => {
    const m = measured[cls] ?? 0;
    const p = predicted[cls] ?? 0;
    return { cls, measured: m, predicted: p, error: m ? Math.abs(p - m) / m : p ? Infinity : 0 };
  });
}

/**
 * The documented rule: call shards per region for `rate` new calls a
 * second across `regions`: a third of an object's capacity on average,
 * which keeps the busiest (calls land at random) under half.
 */
export function callShardsPerRegion(rate, regions, requestsPerCall, capacity) {
  return Math.max(1, Math.ceil(((rate / regions) * requestsPerCall) / (capacity / 3)));
}

const fmt = (x) => (Number.isInteger(x) ? String(x) : x.toFixed(2));

export async function scalePass(workers) {
  const fixtures = workers.find((w) => w.name === 'fixtures');
  const before = workers.find((w) => w.extra);
  const vars = { STATE_KEYS: KEY, SERVER_NAME: 'durable-mcp' };
  const lanes = [{ ...fixtures, name: 'scale', meter: true, vars }];
  if (before) lanes.push({ ...before, name: 'scale-before', meter: true, vars });
  const { ports, stop } = await serve(lanes, { storage: join(OUT, 'scale-storage'), config: 'scale.capnp' });
  const c = client(8);
  const base = (name) => `http://127.0.0.1:${ports[name]}`;
  const profiles = { after: {}, before: {} };
  const most = {};
  let check;
  try {
    for (const [key, wire] of Object.entries(WIRES)) {
      const p = await profile(c, base('scale'), wire);
      profiles.after[key] = p.per;
      most[key] = p.most;
      if (before) profiles.before[key] = (await profile(c, base('scale-before'), wire)).per;
    }
    check = await checkModel(c, base('scale'), profiles.after);
  } finally {
    c.close();
    stop();
  }
  if (before && process.env.BENCH_SCALE_RECORD) {
    // BENCH_SCALE_RECORD names the build before (a commit): kept for runs without it.
    const note = `measured ${new Date().toISOString().slice(0, 10)} on ${process.env.BENCH_SCALE_RECORD}: requests per call by class of object`;
    writeFileSync(BEFORE_FILE, `${JSON.stringify({ note, profiles: profiles.before }, null, 2)}\n`);
  } else if (!before) {
    profiles.before = JSON.parse(readFileSync(BEFORE_FILE, 'utf8')).profiles;
  }

  console.log(`\nscale: Durable Object requests per call, counted on workerd (bench/meter), ${CALLS} calls of each wire one at a time`);
  const classes = [...new Set(Object.values(profiles.after).concat(Object.values(profiles.before)).flatMap((p) => Object.keys(p)))].sort();
  console.log(`| wire | design | ${classes.join(' | ')} | most to one shared object |`);
  console.log(`|---|---|${classes.map(() => '---').join('|')}|---|`);
  for (const key of Object.keys(WIRES)) {
    for (const design of ['before', 'after']) {
      const p = profiles[design][key] ?? {};
      const m = design === 'after' ? `${most[key].name ?? '—'}: ${fmt(most[key].perCall)} a call` : '—';
      console.log(`| ${WIRES[key].label} | ${design} | ${classes.map((k) => fmt(p[k] ?? 0)).join(' | ')} | ${m} |`);
    }
  }

  console.log('\nscale: the model checked against a mixed run (12 durable calls, 4 sessions, 6 tasks, interleaved): requests by class');
  console.log('| class | counted | predicted | error |');
  console.log('|---|---|---|---|');
  for (const r of check) console.log(`| ${r.cls} | ${fmt(r.measured)} | ${fmt(r.predicted)} | ${(100 * r.error).toFixed(1)} % |`);
  const worst = Math.max(...check.map((r) => r.error));
  console.log(`worst error ${(100 * worst).toFixed(1)} % (the bar: 10 %)`);

  const perRegion = RATE / REGIONS.length;
  const shards = callShardsPerRegion(RATE, REGIONS.length, profiles.after.durable.calls ?? 0, CAPACITY);
  const deployment = { regions: REGIONS, ratePerRegion: perRegion, lifetimeSeconds: LIFETIME, capacity: CAPACITY };
  console.log(`\nscale: the model, ${RATE.toLocaleString('en')} new calls a second across ${REGIONS.length} regions, `
    + `an object's capacity ${CAPACITY} requests a second, a call living ${LIFETIME} s; after: CALL_SHARDS_PER_REGION=${shards} `
    + '(the rule: new calls a second per region × call-shard requests per call ÷ a third of the capacity)');
  console.log('| wire | design | hottest object | its requests a second | of capacity | first saturates at (new calls a second) | object |');
  console.log('|---|---|---|---|---|---|---|');
  const model = {};
  for (const key of Object.keys(WIRES)) {
    for (const [design, d] of [['before', DESIGNS.before], ['after', DESIGNS.after(shards)]]) {
      const r = simulate(profiles[design][key] ?? {}, d, deployment);
      (model[key] ??= {})[design] = r;
      const sat = r.saturatesAt ? Math.round(r.saturatesAt.rate).toLocaleString('en') : 'never (no shared object)';
      console.log(`| ${WIRES[key].label} | ${design} | ${r.hottest.name} | ${Math.round(r.hottest.perSecond)} | `
        + `${(100 * r.hottest.utilization).toFixed(0)} % | ${sat} | ${r.saturatesAt?.object ?? '—'} |`);
    }
  }
  return { profiles, most, check, shardsPerRegion: shards, model };
}
