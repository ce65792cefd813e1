// Long calls' growth (issue 42): a call of 200 rounds against one of 20
// (the median of 3 and of 5),
// on plain workerd, with 20 KB answers (an agent loop asking the client's
// model: the fixtures worker's `long_talk`, and `long_talk_task` as a task),
// on the durable 2026-07-28 wire, in a 2025-11-25 session and as a task.
// Printed for each: workerd's CPU time over the whole call (its threads'
// time on CPU, from /proc: the runtime's HTTP handling included) and the
// ratio of the two (linear would be 10×), and the bytes the meter saw
// bound to writes (bench/meter) by round 100 and by round 190 (the trail
// keeps a call's first and last 64 rounds: by round 65 what a round writes
// is as large as it gets).
import http from 'node:http';
import { join } from 'node:path';
import { OUT, serve } from './workerd.mjs';
import { TASKS_META, client, modernReq, taskReq } from './requests.mjs';
import { cpuMs } from './cost.mjs';

const SHORT = 20;
const LONG = Number(process.env.BENCH_GROWTH_ROUNDS ?? 200);
const TEXT = 'z'.repeat(20_000);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const sampled = () => ({ role: 'assistant', model: 'bench', content: { type: 'text', text: TEXT } });

/** The meter's bytes written so far. */
async function bytesWritten(c, base) {
  return (await c.send(base, { method: 'GET', path: '/__meter', headers: {}, body: '' })).json.bytesWritten;
}

/** `long_talk` on the durable wire: `onRound(i)` before each answer. */
async function durable(c, base, rounds, onRound) {
  const args = { rounds };
  let r = await c.send(base, modernReq('long_talk', args));
  for (let i = 0; i < rounds; i++) {
    const state = r.json?.result?.requestState;
    if (!state) throw new Error(`round ${i}: ${r.text.slice(0, 300)}`);
    await onRound(i);
    r = await c.send(base, modernReq('long_talk', args, { requestState: state, inputResponses: { [`s${i}`]: sampled() } }));
  }
  if (r.json?.result?.resultType !== 'complete') throw new Error(`did not complete: ${r.text.slice(0, 300)}`);
}

const SESSION_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

/** One request whose event stream is read to its end: its messages, and the last event id. */
function stream(base, req) {
  return new Promise((resolve, reject) => {
    const body = req.body ?? '';
    const r = http.request(new URL('/mcp', base), { method: req.method ?? 'POST', agent: false,
      headers: { ...req.headers, ...(body ? { 'content-length': Buffer.byteLength(body) } : {}) } }, (res) => {
      let buf = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => { buf += chunk; });
      res.on('end', () => {
        const messages = [];
        let id;
        if ((res.headers['content-type'] ?? '').includes('text/event-stream')) {
          for (const event of buf.split('\n\n')) {
            const data = [];
            for (const line of event.split('\n')) {
              if (line.startsWith('id:')) id = line.slice(3).trim();
              else if (line.startsWith('data:')) data.push(line.slice(5).trimStart());
            }
            if (data.join('').trim()) messages.push(JSON.parse(data.join('\n')));
          }
        } else if (buf.trim()) {
          messages.push(JSON.parse(buf));
        }
        resolve({ messages, lastEventId: id });
      });
      res.on('error', reject);
    });
    r.on('error', reject);
    r.end(body);
  });
}

/** `long_talk` in a session: each sampling request answered with a POST, the next read on a GET. */
async function session(c, base, rounds, onRound) {
  const init = await c.send(base, { headers: SESSION_HEADERS, body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: { sampling: {} }, clientInfo: { name: 'bench', version: '1' } } }) });
  const sid = init.headers['mcp-session-id'];
  const headers = { ...SESSION_HEADERS, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' };
  await c.send(base, { headers, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
  let last = await stream(base, { headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'long_talk', arguments: { rounds } } }) });
  let round = 0;
  for (let tries = 0; tries < rounds * 4 + 10; tries++) {
    for (const m of last.messages) {
      if (m.id === 1 && (m.result || m.error)) {
        if (!m.result || round !== rounds) throw new Error(`the session call ended at round ${round}: ${JSON.stringify(m).slice(0, 300)}`);
        return;
      }
      if (m.method === 'sampling/createMessage') {
        await onRound(round++);
        await c.send(base, { headers, body: JSON.stringify({ jsonrpc: '2.0', id: m.id, result: sampled() }) });
      }
    }
    last = await stream(base, { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-session-id': sid,
      'mcp-protocol-version': '2025-11-25', ...(last.lastEventId ? { 'last-event-id': last.lastEventId } : {}) } });
  }
  throw new Error(`the session call did not finish (round ${round})`);
}

/** `long_talk_task` as a task: each question answered with tasks/update, polled until the next. */
async function task(c, base, rounds, onRound) {
  // The tasks extension, and sampling: the tool asks the client's model.
  const caps = TASKS_META['io.modelcontextprotocol/clientCapabilities'];
  const meta = { ...TASKS_META, 'io.modelcontextprotocol/clientCapabilities': { ...caps, sampling: {} } };
  const created = await c.send(base, modernReq('long_talk_task', { rounds }, { _meta: meta }));
  const id = created.json?.result?.taskId;
  if (!id) throw new Error(`no task: ${created.text.slice(0, 300)}`);
  for (let i = 0; i <= rounds; i++) {
    let t;
    for (let polls = 0; ; polls++) {
      t = (await c.send(base, taskReq('tasks/get', id))).json?.result;
      if (t?.status === 'completed' && i === rounds) return;
      if (t?.status === 'input_required' && t.inputRequests?.[`s${i}`]) break;
      if (['failed', 'cancelled', 'completed'].includes(t?.status) || polls > 2000) {
        throw new Error(`task at round ${i}: ${JSON.stringify(t).slice(0, 300)}`);
      }
      await sleep(2);
    }
    await onRound(i);
    await c.send(base, taskReq('tasks/update', id, { inputResponses: { [`s${i}`]: sampled() } }));
  }
}

const WIRES = [
  ['durable 2026-07-28 wire', durable],
  ['2025-11-25 session', session],
  ['task', task],
];

/** One call of `rounds` rounds: workerd's CPU over it, and the bytes written by two of its rounds. */
async function measure(c, base, pid, call, rounds) {
  const marks = [rounds - 100, rounds - 10].filter((r) => r > 0);
  const written = {};
  let before = 0;
  const onRound = async (i) => {
    if (marks.includes(i)) before = await bytesWritten(c, base);
    if (marks.includes(i - 1)) written[i - 1] = (await bytesWritten(c, base)) - before;
  };
  const cpu0 = cpuMs(pid);
  await call(c, base, rounds, onRound);
  const cpu = cpuMs(pid) - cpu0;
  return { cpu, written };
}

/** The growth pass, on a metered workerd of its own: prints its table, returns its rows. */
export async function growth(workers) {
  const fixtures = workers.find((w) => w.name === 'fixtures');
  const { ports, stop, pid } = await serve([{ ...fixtures, meter: true }], { storage: join(OUT, 'growth-storage'), config: 'growth.capnp' });
  const base = `http://127.0.0.1:${ports.fixtures}`;
  const c = client(4);
  const rows = [];
  try {
    for (const [wire, call] of WIRES) {
      await call(c, base, 2, async () => {}); // warm: the isolate, the objects
      // The machine is noisy: the median of several calls of each length.
      const median = (xs) => [...xs].sort((a, b) => a.cpu - b.cpu)[Math.floor(xs.length / 2)];
      const shorts = [];
      for (let i = 0; i < 5; i++) shorts.push(await measure(c, base, pid(), call, SHORT));
      const longs = [];
      for (let i = 0; i < 3; i++) longs.push(await measure(c, base, pid(), call, LONG));
      const short = median(shorts);
      const long = median(longs);
      rows.push({ wire, short: short.cpu, long: long.cpu, ratio: long.cpu / short.cpu,
        early: long.written[LONG - 100], late: long.written[LONG - 10] });
    }
  } finally {
    c.close();
    stop();
  }
  console.log(`\nlong calls' growth: one call of ${SHORT} and one of ${LONG} rounds, 20 KB answers, on plain workerd `
    + '(CPU: all of workerd over the call; bytes: bound to writes, as bench/meter sees them)\n');
  console.log(`| wire | CPU ms, ${SHORT} rounds | CPU ms, ${LONG} rounds | ratio (linear: ${LONG / SHORT}×) | bytes written by round ${LONG - 100} | by round ${LONG - 10} |`);
  console.log('|---|---|---|---|---|---|');
  for (const r of rows) {
    console.log(`| ${r.wire} | ${r.short.toFixed(0)} | ${r.long.toFixed(0)} | ${r.ratio.toFixed(1)}× | ${r.early} | ${r.late} |`);
  }
  return rows;
}
