// Durable calls kept near their callers (issue 46, acceptance 4), from
// outside: a call started with `cf.continent` EU gets an id naming a
// European shard (`s` weur <n>), and its later rounds, sent from North
// America (the server restarted with another `cf`), reach that shard and
// complete; with CALL_JURISDICTION=eu the id names the EU jurisdiction's
// shard and the call completes there.
//
// The runtime's `request.cf` is set from outside, never by a client:
// under `wrangler dev` miniflare reads it from CLOUDFLARE_CF_FETCH_PATH;
// a plain `workerd serve` (the twin) takes it from the `cf-blob` header
// its test socket names (tests/e2e/workerd.mjs). Locally, wrangler's own
// `cf` says continent NA; plain workerd's has none.
//
// What cannot be seen from here: the location hint and the jurisdiction's
// effect on where an object runs (locally every object is on this
// machine). The native tests (tests/regions.rs) assert both through the
// test server, which opens each object as the Worker's stub does.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freshPersistDir } from './wrangler.mjs';
import { startServer, VIA } from './server.mjs';
import { callTool } from './webhook.mjs';

const running = new Set();
after(async () => {
  for (const s of [...running]) await s.stop();
});

/** A server on `persistTo` whose requests carry `cf.continent` = `continent`. */
async function from(continent, persistTo, vars = {}) {
  const cf = join(persistTo, `cf-${continent}.json`);
  writeFileSync(cf, JSON.stringify({ continent, country: continent === 'EU' ? 'DE' : 'US' }));
  const s = await startServer({
    persistTo, vars,
    env: { CLOUDFLARE_CF_FETCH_ENABLED: 'true', CLOUDFLARE_CF_FETCH_PATH: cf },
  });
  running.add(s);
  const headers = VIA === 'workerd' ? { 'cf-blob': JSON.stringify({ continent }) } : {};
  return {
    ...s,
    call: (args, extra, id) => callTool(s.url, 'deploy', args, extra, { id, headers }),
    async stop() { running.delete(s); await s.stop(); },
  };
}

/** The claims inside a sealed state (the payload is base64url JSON). */
function claimsOf(state) {
  return JSON.parse(Buffer.from(state.split('.')[1], 'base64url').toString('utf8'));
}

const TARGET = { target: { action: 'accept', content: { target: 'staging' } } };
const SAFE = { safety: { role: 'assistant', content: { type: 'text', text: 'yes' }, model: 'e2e-model' } };

/** Two rounds in one region, the last from another: the call's id, and its end. */
async function acrossRegions(persistTo, vars, first, then) {
  const args = { service: 'api' };
  let s = await from(first, persistTo, vars);
  const r1 = await s.call(args, {}, 1);
  assert.equal(r1.json?.result?.resultType, 'input_required', r1.text);
  const r2 = await s.call(args, { requestState: r1.json.result.requestState, inputResponses: TARGET }, 2);
  assert.equal(r2.json?.result?.resultType, 'input_required', r2.text);
  const state = r2.json.result.requestState;
  const { sid } = claimsOf(state);
  await s.stop();

  s = await from(then, persistTo, vars);
  const done = await s.call(args, { requestState: state, inputResponses: SAFE }, 3);
  assert.equal(done.json?.result?.resultType, 'complete', done.text);
  assert.match(done.json.result.content[0].text, /^Deployed api to staging/);
  // Only the shard that kept the call knows this round was answered: an
  // exact retry gets the same reply, other answers are refused.
  const again = await s.call(args, { requestState: state, inputResponses: SAFE }, 4);
  assert.deepEqual(again.json.result, done.json.result, again.text);
  const other = await s.call(args, {
    requestState: state,
    inputResponses: { safety: { ...SAFE.safety, content: { type: 'text', text: 'no' } } },
  }, 5);
  assert.equal(other.json?.error?.code, -32602, other.text);
  assert.match(other.json.error.message, /already used/, other.text);
  await s.stop();
  return sid;
}

test(`a call started in Europe is kept in a European shard and completes from North America (${VIA})`, async () => {
  const sid = await acrossRegions(freshPersistDir(), {}, 'EU', 'NA');
  assert.match(sid, /^sweur[0-3]-[0-9a-f]{32}$/, sid);
});

test(`with CALL_JURISDICTION=eu the call's shard is the EU jurisdiction's, whoever calls (${VIA})`, async () => {
  const sid = await acrossRegions(freshPersistDir(), { CALL_JURISDICTION: 'eu' }, 'NA', 'AS');
  assert.match(sid, /^seu[0-3]-[0-9a-f]{32}$/, sid);
});

test(`a call from no region keeps the shards of no region (${VIA})`, async () => {
  const sid = await acrossRegions(freshPersistDir(), {}, 'T1', 'EU');
  assert.match(sid, /^s[0-9]+-[0-9a-f]{32}$/, sid);
});
