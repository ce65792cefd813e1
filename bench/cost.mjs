// What a paused call costs on each wire, in what Cloudflare bills, and in
// dollars per million calls at its published prices (bench/prices.mjs).
//
// The fixtures worker and the `agents` peer are served metered
// (bench/meter: Worker requests, Durable Object requests, SQLite rows read
// and written, alarms set and fired, the objects' wall time, all counted
// inside workerd as the requests cross). Each wire's call is made
// BENCH_COST_CALLS (20) times, one at a time, as a client makes it; the
// counts are read before and after, and workerd's CPU time (its threads'
// time on CPU, from /proc) over the calls is divided among them. That CPU is the whole
// process's (the runtime's HTTP handling and the objects' work included),
// so as Workers CPU time it is an upper bound: Cloudflare bills a Worker's
// own CPU, and an object's time as duration instead.
import http from 'node:http';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { OUT, serve } from './workerd.mjs';
import { TASKS_META, client, modernReq, taskReq } from './requests.mjs';
import { PRICES, dollarsPerMillion } from './prices.mjs';

const CALLS = Number(process.env.BENCH_COST_CALLS ?? 20);

/**
 * workerd's CPU time so far, in ms: the time on CPU of each of its threads
 * (each `/proc/<pid>/task/<tid>/schedstat`, in ns: the 10 ms ticks of
 * `/proc/<pid>/stat` are too coarse for a few calls).
 */
export function cpuMs(pid) {
  let ns = 0;
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    try { ns += Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[0]); } catch { /* the thread ended */ }
  }
  return ns / 1e6;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A paused MRTR call: the first round, then its retry with the answers. */
export async function mrtr(c, base, name, args, answers) {
  let r = await c.send(base, modernReq(name, args));
  for (const answer of answers) {
    const state = r.json?.result?.requestState;
    if (!state) throw new Error(`${name}: no requestState: ${r.text.slice(0, 300)}`);
    r = await c.send(base, modernReq(name, args, { requestState: state, inputResponses: answer }));
  }
  if (r.json?.result?.resultType !== 'complete') throw new Error(`${name} did not complete: ${r.text.slice(0, 300)}`);
}

/** A task that asks once (`confirm_delete`), polled at its pollIntervalMs as a client would. */
export async function task(c, base) {
  const created = await c.send(base, modernReq('confirm_delete', { filename: 'f' }, { _meta: TASKS_META }));
  let t = created.json?.result;
  if (!t?.taskId) throw new Error(`no task: ${created.text.slice(0, 300)}`);
  const id = t.taskId;
  const poll = async (until) => {
    while (!until(t)) {
      await sleep(t.pollIntervalMs ?? 500);
      t = (await c.send(base, taskReq('tasks/get', id))).json?.result;
    }
  };
  await poll((x) => x.status === 'input_required');
  await c.send(base, taskReq('tasks/update', id, { inputResponses: { confirm: { action: 'accept', content: { confirm: true } } } }));
  t = { ...t, status: 'working' };
  await poll((x) => x.status === 'completed');
}

const SESSION_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

/** A 2025-11-25 session (initialize, initialized): its headers. */
export async function openSession(c, base) {
  const r = await c.send(base, { headers: SESSION_HEADERS, body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: { elicitation: {} }, clientInfo: { name: 'bench', version: '1' } } }) });
  const headers = { ...SESSION_HEADERS, 'mcp-session-id': r.headers['mcp-session-id'], 'mcp-protocol-version': '2025-11-25' };
  await c.send(base, { headers, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
  return headers;
}

/**
 * One request whose event stream is read as it comes: `onMessage(message,
 * eventId)` for each message; resolves when the stream ends (a JSON
 * answer is one message).
 */
export function stream(base, req, onMessage) {
  return new Promise((resolve, reject) => {
    const url = new URL('/mcp', base);
    const body = req.body ?? '';
    const r = http.request(url, { method: req.method ?? 'POST', agent: false,
      headers: { ...req.headers, ...(body ? { 'content-length': Buffer.byteLength(body) } : {}) } }, (res) => {
      let buf = '';
      let id;
      const sse = (res.headers['content-type'] ?? '').includes('text/event-stream');
      res.setEncoding('utf8');
      res.on('data', (chunk) => {
        buf += chunk;
        if (!sse) return;
        let at;
        while ((at = buf.indexOf('\n\n')) >= 0) {
          const event = buf.slice(0, at);
          buf = buf.slice(at + 2);
          const data = [];
          for (const line of event.split('\n')) {
            if (line.startsWith('id:')) id = line.slice(3).trim();
            else if (line.startsWith('data:')) data.push(line.slice(5).trimStart());
          }
          // An event with no data primes `Last-Event-ID` (SEP-1699): its id is kept.
          if (data.join('').trim()) onMessage(JSON.parse(data.join('\n')), id);
        }
      });
      res.on('end', () => {
        if (!sse && buf.trim()) {
          try { onMessage(JSON.parse(buf), undefined); } catch { reject(new Error(`${res.statusCode} ${buf.slice(0, 300)}`)); }
        }
        resolve({ status: res.statusCode, lastEventId: id });
      });
      res.on('error', reject);
    });
    r.on('error', reject);
    r.end(body);
  });
}

/**
 * A paused call in a session: `tools/call`, the elicitation it asks on
 * the call's stream answered with a POST, the result read where it comes:
 * on the same stream (the peer holds it open), or on a GET with
 * `Last-Event-ID` after the server closed it (ours: SEP-1699 polling).
 */
export async function sessionCall(c, base, headers, name, answer, n) {
  let result;
  const answers = [];
  const onMessage = (m) => {
    if (m.method === 'elicitation/create') {
      answers.push(c.send(base, { headers, body: JSON.stringify({ jsonrpc: '2.0', id: m.id, result: answer }) }));
    } else if (m.id === n && (m.result || m.error)) {
      result = m;
    }
  };
  let last = await stream(base, { headers, body: JSON.stringify({ jsonrpc: '2.0', id: n, method: 'tools/call', params: { name, arguments: {} } }) }, onMessage);
  for (let i = 0; !result && i < 5; i++) {
    await Promise.all(answers.splice(0));
    const get = { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-session-id': headers['mcp-session-id'],
      'mcp-protocol-version': '2025-11-25', ...(last.lastEventId ? { 'last-event-id': last.lastEventId } : {}) } };
    last = await stream(base, get, onMessage);
  }
  await Promise.all(answers);
  if (!result?.result) throw new Error(`${name} in a session did not complete: ${JSON.stringify(result)}`);
}

/** The wires, each a call made against `base` (`setup` runs once, outside the count). */
const WIRES = [
  { wire: 'MRTR, stateless (one question, 2 requests)', worker: 'fixtures',
    call: (c, base) => mrtr(c, base, 'test_input_required_result_elicitation', {}, [{ user_name: { action: 'accept', content: { name: 'bench' } } }]) },
  { wire: 'MRTR, stateless (one question, 2 requests)', worker: 'peer-stateless',
    call: (c, base) => mrtr(c, base, 'confirm', {}, [{ confirm: { action: 'accept', content: { ok: true } } }]) },
  // Warmed until every shard holds a call (a new call goes to one of 16 at
  // random): a shard's first call also creates its table and arms its
  // alarm, once for all the calls it will hold; the counts are a warm
  // shard's.
  { wire: 'MRTR, durable (two questions, 3 requests)', worker: 'fixtures', warm: 64,
    call: (c, base) => mrtr(c, base, 'deploy', { service: 'bench' }, [{ target: { action: 'accept', content: { target: 'staging' } } },
      { safety: { role: 'assistant', content: { type: 'text', text: 'yes' } } }]) },
  { wire: '2025-11-25 session (one question)', worker: 'fixtures', setup: openSession,
    call: (c, base, headers, n) => sessionCall(c, base, headers, 'test_input_required_result_elicitation', { action: 'accept', content: { name: 'bench' } }, n) },
  { wire: '2025-11-25 session (one question)', worker: 'peer-session', setup: openSession,
    call: (c, base, headers, n) => sessionCall(c, base, headers, 'confirm', { action: 'accept', content: { ok: true } }, n) },
  { wire: 'task (one question: call, polls, tasks/update)', worker: 'fixtures', call: (c, base) => task(c, base) },
];

/** Per-call units of one wire: the meter's counts and workerd's CPU over CALLS calls. */
async function measure(c, base, pid, wire) {
  const setup = wire.setup ? await wire.setup(c, base) : undefined;
  // Warm: the isolate, the objects.
  for (let i = 0; i < (wire.warm ?? 1); i++) await wire.call(c, base, setup, 900 + i);
  await c.send(base, { method: 'POST', path: '/__meter', headers: {}, body: '' });
  const cpu0 = cpuMs(pid);
  for (let i = 0; i < CALLS; i++) await wire.call(c, base, setup, 1000 + i);
  const cpu = cpuMs(pid) - cpu0;
  // Let the last call's late work (a task's last write, its hub message) land.
  await sleep(200);
  const m = (await c.send(base, { method: 'GET', path: '/__meter', headers: {}, body: '' })).json;
  const per = (x) => x / CALLS;
  return {
    wire: wire.wire, who: wire.worker.startsWith('peer') ? 'agents' : 'durable-mcp',
    workerRequests: per(m.workerRequests), objectRequests: per(m.objectRequests), rowsRead: per(m.rowsRead + m.kvRowsRead),
    rowsWritten: per(m.rowsWritten + m.kvRowsWritten + m.alarmsSet), alarmsSet: per(m.alarmsSet), alarmsFired: per(m.alarmsFired),
    cpuMs: per(cpu), objectMs: per(m.objectWallMs),
  };
}

const fmt = (x) => (Number.isInteger(x) ? String(x) : x.toFixed(2));

/** The cost pass: ours and the peer's (when built), metered on a workerd of their own. */
export async function costPerCall(workers) {
  const names = new Set(WIRES.map((w) => w.worker));
  const metered = workers.filter((w) => names.has(w.name)).map((w) => ({ ...w, meter: true }));
  const { ports, stop, pid } = await serve(metered, { storage: join(OUT, 'cost-storage'), config: 'cost.capnp' });
  const c = client(8);
  const rows = [];
  try {
    for (const wire of WIRES.filter((w) => ports[w.worker])) {
      rows.push(await measure(c, `http://127.0.0.1:${ports[wire.worker]}`, pid(), wire));
    }
  } finally {
    c.close();
    stop();
  }
  console.log(`\ncost per paused call: counted in workerd (bench/meter), ${CALLS} calls each, one at a time; `
    + `prices of ${PRICES.asOf} (bench/prices.mjs)\n`);
  console.log('| wire | server | Worker requests | DO requests | rows read | rows written (alarms set) | alarms fired | CPU ms (all of workerd) | DO wall ms | $ per million calls |');
  console.log('|---|---|---|---|---|---|---|---|---|---|');
  for (const r of rows) {
    const d = dollarsPerMillion(r);
    console.log(`| ${r.wire} | ${r.who} | ${fmt(r.workerRequests)} | ${fmt(r.objectRequests)} | ${fmt(r.rowsRead)} | `
      + `${fmt(r.rowsWritten)} (${fmt(r.alarmsSet)}) | ${fmt(r.alarmsFired)} | ${r.cpuMs.toFixed(2)} | ${r.objectMs.toFixed(1)} | `
      + `${d.total.toFixed(2)} (requests ${d.requests.toFixed(2)}, CPU ${d.cpu.toFixed(2)}, DO ${d.objects.toFixed(2)}, rows ${d.rows.toFixed(2)}, duration ${d.duration.toFixed(3)}) |`);
  }
  return rows;
}
