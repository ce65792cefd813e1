// Durable mode end to end: the `deploy` tool under `wrangler dev`, its
// progress kept in a Durable Object between rounds, across restarts, lost
// storage, concurrent retries, key rotation and every token failure class.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { freshPersistDir, startWrangler } from './wrangler.mjs';
import { callTool, startWebhook } from './webhook.mjs';

const OLD_KEY = 'old:old-secret-0123456789abcdef';
const NEW_KEY = 'new:new-secret-0123456789abcdef';

/** Every wrangler and webhook started here, so after() can stop leftovers. */
const running = new Set();

async function wrangler(opts = {}) {
  const s = await startWrangler(opts);
  running.add(s);
  return {
    ...s,
    async stop() { running.delete(s); await s.stop(); },
  };
}

async function webhook(opts = {}) {
  const h = await startWebhook(opts);
  running.add(h);
  const stop = h.stop;
  h.stop = async () => { running.delete(h); await stop(); };
  return h;
}

after(async () => {
  for (const s of [...running]) await s.stop();
});

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The claims inside a sealed state (the payload is base64url JSON). */
function claimsOf(state) {
  const [version, payload] = state.split('.');
  assert.equal(version, 'v1');
  return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
}

function deployArgs(service) {
  return { service };
}

const ELICITED = (target) => ({ target: { action: 'accept', content: { target } } });
const SAMPLED = (text = 'yes') => ({ safety: { role: 'assistant', content: { type: 'text', text }, model: 'e2e-model' } });

/** Round 1: a new deploy call asks for the target. Returns its state. */
async function startDeploy(url, args, opts = {}) {
  const r = await callTool(url, 'deploy', args, {}, { id: 1, ...opts });
  assert.equal(r.status, 200, r.text);
  const res = r.json.result;
  assert.equal(res.resultType, 'input_required', r.text);
  assert.deepEqual(Object.keys(res.inputRequests), ['target'], r.text);
  assert.equal(res.inputRequests.target.method, 'elicitation/create');
  assert.equal(res.inputRequests.target.params.message, `Where should ${args.service} be deployed?`);
  assert.equal(typeof res.requestState, 'string');
  return res.requestState;
}

/** Round 2: answers the target; the call asks for the safety sample. Returns the new state. */
async function answerTarget(url, args, state, target = 'staging', opts = {}) {
  const r = await callTool(url, 'deploy', args, { requestState: state, inputResponses: ELICITED(target) }, { id: 2, ...opts });
  assert.equal(r.status, 200, r.text);
  const res = r.json.result;
  assert.equal(res.resultType, 'input_required', r.text);
  assert.deepEqual(Object.keys(res.inputRequests), ['safety'], r.text);
  assert.equal(res.inputRequests.safety.method, 'sampling/createMessage');
  assert.equal(res.inputRequests.safety.params.messages[0].content.text,
    `Is it safe to deploy ${args.service} to ${target} right now? Answer yes or no.`);
  assert.notEqual(res.requestState, state);
  return res.requestState;
}

/** Round 3: answers the safety sample (the final round). Returns the raw reply. */
function answerSafety(url, args, state, opts = {}) {
  return callTool(url, 'deploy', args, { requestState: state, inputResponses: SAMPLED() }, { id: 3, ...opts });
}

function assertCompleted(r, text) {
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.result?.resultType, 'complete', r.text);
  assert.deepEqual(r.json.result.content, [{ type: 'text', text }], r.text);
}

function assertRefused(r, status, pattern) {
  assert.equal(r.status, status, r.text);
  assert.equal(r.json?.error?.code, -32602, r.text);
  assert.equal(r.json.result, undefined, r.text);
  assert.match(r.json.error.message, pattern, r.text);
}

describe('durable deploy across restarts, lost storage and races', () => {
  test('durable mode survives a restart between two rounds', async () => {
    const hook = await webhook();
    const P = freshPersistDir();
    const args = deployArgs('api');
    const vars = { TICKET_WEBHOOK: hook.url('/restart') };

    const first = await wrangler({ persistTo: P, vars });
    const s1 = await startDeploy(first.url, args);
    const s2 = await answerTarget(first.url, args, s1, 'staging');
    assert.equal(claimsOf(s2).durable, true);
    assert.equal(claimsOf(s2).round, 2);
    assert.equal(hook.count(), 0, 'no ticket before the safety answer');
    await first.stop();

    const second = await wrangler({ persistTo: P, vars });
    assert.notEqual(second.port, first.port);
    const done = await answerSafety(second.url, args, s2);
    assertCompleted(done, 'Deployed api to staging (ticket T-1).');
    assert.equal(hook.count('/restart'), 1);
    assert.deepEqual(hook.hits[0].body, { service: 'api', target: 'staging' });

    // The token alone cannot know it was used: what the retries get comes
    // from the Durable Object storage that survived the restart. An exact
    // retry (the reply was lost) gets the same reply; other answers are refused.
    const replay = await answerSafety(second.url, args, s2, { id: 4 });
    assertCompleted(replay, 'Deployed api to staging (ticket T-1).');
    const other = await callTool(second.url, 'deploy', args, { requestState: s2, inputResponses: SAMPLED('no') }, { id: 5 });
    assertRefused(other, 400, /already used/);
    assert.equal(hook.count('/restart'), 1, 'the retries opened no second ticket');
    await second.stop();
    await hook.stop();
  });

  test('durable mode rebuilds a call from the token when its storage is gone', async () => {
    const hook = await webhook();
    const P1 = freshPersistDir();
    const P2 = freshPersistDir();
    assert.notEqual(P1, P2);
    const args = deployArgs('api');
    const vars = { TICKET_WEBHOOK: hook.url('/rebuild') };

    const first = await wrangler({ persistTo: P1, vars });
    const s1 = await startDeploy(first.url, args);
    const s2 = await answerTarget(first.url, args, s1, 'production');
    assert.ok(claimsOf(s2).journal, 'the round-2 token carries the journal');
    await first.stop();

    const second = await wrangler({ persistTo: P2, vars });
    const done = await answerSafety(second.url, args, s2);
    assertCompleted(done, 'Deployed api to production (ticket T-1).');
    assert.equal(hook.count('/rebuild'), 1);
    assert.deepEqual(hook.hits[0].body, { service: 'api', target: 'production' });

    // The rebuilt call is now stored on P2: an exact retry gets the same
    // reply, other answers are refused, and no second ticket is opened.
    const replay = await answerSafety(second.url, args, s2, { id: 4 });
    assertCompleted(replay, 'Deployed api to production (ticket T-1).');
    const other = await callTool(second.url, 'deploy', args, { requestState: s2, inputResponses: SAMPLED('no') }, { id: 5 });
    assertRefused(other, 400, /already used/);
    assert.equal(hook.count('/rebuild'), 1);
    await second.stop();
    await hook.stop();
  });

  test('two concurrent retries of the same round: exactly one completes and the once effect runs once', async (t) => {
    // The webhook holds its answer back so the winning retry is still
    // running (claimed) when the other arrives.
    const hook = await webhook({ delayMs: 300 });
    const server = await wrangler({ vars: { TICKET_WEBHOOK: hook.url('/race') } });
    const outcomes = [];
    const ticketsFor = (service) => hook.hits.filter((h) => h.body?.service === service);
    for (const n of [1, 2, 3]) {
      const args = deployArgs(`svc${n}`);
      const s1 = await startDeploy(server.url, args);
      const s2 = await answerTarget(server.url, args, s1, 'staging');

      // One runs the round; the other finds it running (409, -32010: try
      // again) or, arriving after it finished, gets the same reply.
      const replies = await Promise.all([answerSafety(server.url, args, s2), answerSafety(server.url, args, s2)]);
      const done = replies.filter((r) => r.status === 200);
      const busy = replies.filter((r) => r.status === 409);
      assert.ok(done.length >= 1, `race ${n}: ${replies.map((r) => r.text).join(' | ')}`);
      assert.equal(done.length + busy.length, 2, `race ${n}: ${replies.map((r) => r.text).join(' | ')}`);
      for (const r of done) assertCompleted(r, `Deployed svc${n} to staging (ticket T-${n}).`);
      for (const r of busy) {
        assert.equal(r.json?.error?.code, -32010, r.text);
        assert.match(r.json.error.message, /^Conflict: another retry of this round is running/);
      }
      outcomes.push(busy.length ? 409 : 200);
      assert.equal(ticketsFor(`svc${n}`).length, 1, `race ${n}: the ticket webhook ran once`);
      assert.deepEqual(ticketsFor(`svc${n}`)[0].body, { service: `svc${n}`, target: 'staging' });
    }
    assert.equal(hook.count(), 3, 'one ticket per call, three calls');
    // Report how the second copies fared (409 while running, 200 after).
    t.diagnostic(`losing statuses: ${outcomes.join(', ')}`);
    await server.stop();
    await hook.stop();
  });

  test('a token signed with the previous key of the ring still completes its call', async () => {
    const hook = await webhook();
    const P = freshPersistDir();
    const argsA = deployArgs('api');
    const argsB = deployArgs('web');
    const TICKET_WEBHOOK = hook.url('/rotate');

    // Only the old key: its tokens say kid "old" (so --var STATE_KEYS
    // overrides the one in .dev.vars).
    const oldOnly = await wrangler({ persistTo: P, vars: { STATE_KEYS: OLD_KEY, TICKET_WEBHOOK } });
    const a1 = await startDeploy(oldOnly.url, argsA);
    const a2 = await answerTarget(oldOnly.url, argsA, a1, 'staging');
    const b1 = await startDeploy(oldOnly.url, argsB);
    assert.equal(claimsOf(a2).kid, 'old');
    assert.equal(claimsOf(b1).kid, 'old');
    await oldOnly.stop();

    // Rotated: new key first, old key kept for verification.
    const rotated = await wrangler({ persistTo: P, vars: { STATE_KEYS: `${NEW_KEY},${OLD_KEY}`, TICKET_WEBHOOK } });
    const done = await answerSafety(rotated.url, argsA, a2);
    assertCompleted(done, 'Deployed api to staging (ticket T-1).');
    assert.equal(hook.count('/rotate'), 1);
    const c1 = await startDeploy(rotated.url, deployArgs('cache'));
    assert.equal(claimsOf(c1).kid, 'new', 'new tokens are signed with the newest key');
    await rotated.stop();

    // The old key dropped: an old-key token is refused, a new-key one goes on.
    const newOnly = await wrangler({ persistTo: P, vars: { STATE_KEYS: NEW_KEY, TICKET_WEBHOOK } });
    const refused = await callTool(newOnly.url, 'deploy', argsB, { requestState: b1, inputResponses: ELICITED('staging') });
    assertRefused(refused, 400, /^Invalid request state: signature does not verify$/);
    const c2 = await answerTarget(newOnly.url, deployArgs('cache'), c1, 'staging');
    assert.equal(claimsOf(c2).kid, 'new');
    await newOnly.stop();
    await hook.stop();
  });
});

/** Call tables in the objects' SQLite files under a persist directory. */
async function callTables(persistTo) {
  const { DatabaseSync } = await import('node:sqlite');
  const dir = join(persistTo, 'v3', 'do', 'durable-mcp-fixtures-McpObject');
  if (!existsSync(dir)) return [];
  const tables = [];
  for (const f of readdirSync(dir).filter((f) => f.endsWith('.sqlite') && f !== 'metadata.sqlite')) {
    const db = new DatabaseSync(join(dir, f), { readOnly: true });
    try {
      for (const row of db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'durable_calls'").all()) {
        const n = db.prepare('SELECT count(*) AS n FROM durable_calls').get().n;
        tables.push({ file: f, table: row.name, rows: n });
      }
    } finally {
      db.close();
    }
  }
  return tables;
}

describe('idle call objects', () => {
  // Sharded (the default: a shard's object holds many calls, one alarm for
  // them) and CALL_SHARDS=0 (an object per call, whose first WakeBy asks
  // the runtime whether an alarm is armed).
  for (const shards of ['16', '0']) {
    test(`a paused call's storage goes when its idle alarm fires (CALL_SHARDS=${shards})`, async () => {
      const P = freshPersistDir();
      const server = await wrangler({ persistTo: P, vars: { STATE_TTL_SECONDS: '2', CALL_SHARDS: shards } });
      try {
        const args = deployArgs('api');
        await startDeploy(server.url, args);
        await startDeploy(server.url, deployArgs('web'));
        const before = await callTables(P);
        assert.equal(before.reduce((n, t) => n + t.rows, 0), 2, JSON.stringify(before));
        if (shards === '0') assert.equal(before.length, 2, 'an object each');
        await sleep(4500);
        const afterAlarm = await callTables(P);
        assert.deepEqual(afterAlarm, [], `the alarm deleted the calls: ${JSON.stringify(afterAlarm)}`);
      } finally {
        await server.stop();
      }
    });
  }
});

describe('calls sharing one shard', () => {
  test('CALL_SHARDS=1: ten calls at once in one object, each its own', async () => {
    // The ticket webhook answers late, so each call's last round waits in
    // the shared object while the others' rounds run there.
    const hook = await webhook({ delayMs: 300 });
    const P = freshPersistDir();
    // (wrangler dev's own `cf` names a continent: its region one shard too.)
    const server = await wrangler({ persistTo: P, vars: { CALL_SHARDS: '1', CALL_SHARDS_PER_REGION: '1', TICKET_WEBHOOK: hook.url('/shared') } });
    try {
      const calls = Array.from({ length: 10 }, (_, i) => ({
        args: deployArgs(`svc-${i}`),
        target: i % 2 ? 'production' : 'staging',
      }));
      const done = await Promise.all(calls.map(async ({ args, target }) => {
        const s1 = await startDeploy(server.url, args);
        const s2 = await answerTarget(server.url, args, s1, target);
        return { s2, r: await answerSafety(server.url, args, s2) };
      }));
      const tickets = new Set();
      done.forEach(({ r }, i) => {
        assert.equal(r.status, 200, r.text);
        const text = r.json.result?.content?.[0]?.text ?? '';
        const m = text.match(new RegExp(`^Deployed svc-${i} to ${calls[i].target} \\(ticket (T-\\d+)\\)\\.$`));
        assert.ok(m, r.text);
        tickets.add(m[1]);
      });
      assert.equal(tickets.size, 10, 'a ticket each');
      assert.equal(hook.count('/shared'), 10, 'each effect once');
      assert.deepEqual(
        hook.hits.map((h) => h.body.service).sort(),
        calls.map((c) => c.args.service).sort(),
      );
      assert.equal(new Set(hook.hits.map((h) => h.idempotencyKey)).size, 10);
      // An exact retry is answered from the shard, running nothing.
      const again = await answerSafety(server.url, calls[3].args, done[3].s2);
      assert.deepEqual(again.json, done[3].r.json);
      assert.equal(hook.count('/shared'), 10);
      const tables = await callTables(P);
      assert.deepEqual(tables.map((t) => t.rows), [10], `one object holds all ten: ${JSON.stringify(tables)}`);
    } finally {
      await server.stop();
      await hook.stop();
    }
  });
});

describe('token failure classes over HTTP are -32602 with HTTP 400', () => {
  let server;
  before(async () => { server = await wrangler(); });
  after(async () => { await server?.stop(); });

  test('a tampered state is refused and leaves the round usable', async () => {
    const args = deployArgs('api');
    const s1 = await startDeploy(server.url, args);
    const [v, payload, tag] = s1.split('.');

    // A character flipped in the middle of the payload part.
    const i = Math.floor(payload.length / 2);
    const flipped = payload[i] === 'A' ? 'B' : 'A';
    const tampered = `${v}.${payload.slice(0, i)}${flipped}${payload.slice(i + 1)}.${tag}`;
    const r1 = await callTool(server.url, 'deploy', args, { requestState: tampered, inputResponses: ELICITED('staging') });
    assertRefused(r1, 400, /^Invalid request state: (signature does not verify|malformed)$/);

    // A well-formed forgery (the call moved to round 7) under the old tag.
    const claims = claimsOf(s1);
    const forged = `${v}.${Buffer.from(JSON.stringify({ ...claims, round: 7 })).toString('base64url')}.${tag}`;
    const r2 = await callTool(server.url, 'deploy', args, { requestState: forged, inputResponses: ELICITED('staging') });
    assertRefused(r2, 400, /^Invalid request state: signature does not verify$/);

    // Refusals claim nothing: the genuine state still continues.
    await answerTarget(server.url, args, s1, 'staging');
  });

  test('a deploy state is refused on another tool', async () => {
    const args = deployArgs('api');
    const s1 = await startDeploy(server.url, args);
    const r = await callTool(server.url, 'test_input_required_result_elicitation', {}, {
      requestState: s1,
      inputResponses: { user_name: { action: 'accept', content: { name: 'octocat' } } },
    });
    assertRefused(r, 400, /^Invalid request state: issued for another request$/);
    await answerTarget(server.url, args, s1, 'staging');
  });

  test('a deploy state is refused for other arguments', async () => {
    const s1 = await startDeploy(server.url, deployArgs('api'));
    const r = await callTool(server.url, 'deploy', deployArgs('db'), { requestState: s1, inputResponses: ELICITED('staging') });
    assertRefused(r, 400, /^Invalid request state: issued for other arguments$/);
    await answerTarget(server.url, deployArgs('api'), s1, 'staging');
  });

  test('an answered round gives its exact retry the same reply and refuses other answers, the last round and an earlier one alike', async () => {
    const args = deployArgs('api');
    const s1 = await startDeploy(server.url, args);
    const s2 = await answerTarget(server.url, args, s1, 'production');
    const done = await answerSafety(server.url, args, s2);
    assert.equal(done.status, 200, done.text);
    assert.match(done.json.result.content[0].text, /^Deployed api to production \(ticket CHG-[0-9A-F]{8}\)\.$/);
    const again = await answerSafety(server.url, args, s2, { id: 9 });
    assert.equal(again.status, 200, again.text);
    assert.deepEqual(again.json.result, done.json.result);
    assertRefused(await callTool(server.url, 'deploy', args, { requestState: s2, inputResponses: SAMPLED('no') }),
      400, /^Invalid request state: already used/);
    const earlier = await callTool(server.url, 'deploy', args, { requestState: s1, inputResponses: ELICITED('staging') });
    assertRefused(earlier, 400, /^Invalid request state: already used/);
  });

  test('an expired state is refused', async () => {
    const short = await wrangler({ vars: { STATE_TTL_SECONDS: '1' } });
    try {
      const args = deployArgs('api');
      const s1 = await startDeploy(short.url, args);
      const c = claimsOf(s1);
      assert.equal(c.exp - c.iat, 1000);
      await sleep(1500);
      const r = await callTool(short.url, 'deploy', args, { requestState: s1, inputResponses: ELICITED('staging') });
      assertRefused(r, 400, /^Invalid request state: expired$/);
    } finally {
      await short.stop();
    }
  });

  test('a state issued to one principal is refused for another', async () => {
    const authed = await wrangler({ vars: { API_TOKENS: 'alice:tok-alice-0001,bob:tok-bob-0002' } });
    try {
      const alice = { headers: { authorization: 'Bearer tok-alice-0001' } };
      const bob = { headers: { authorization: 'Bearer tok-bob-0002' } };
      const args = deployArgs('api');
      const anonymous = await callTool(authed.url, 'deploy', args);
      assert.equal(anonymous.status, 401, anonymous.text);

      const s1 = await startDeploy(authed.url, args, alice);
      assert.equal(claimsOf(s1).sub, 'alice');
      const r = await callTool(authed.url, 'deploy', args, { requestState: s1, inputResponses: ELICITED('staging') }, bob);
      assertRefused(r, 400, /^Invalid request state: issued to another principal$/);
      const s2 = await answerTarget(authed.url, args, s1, 'staging', alice);
      assert.equal(claimsOf(s2).sub, 'alice');
    } finally {
      await authed.stop();
    }
  });

  test('a state signed with an unrelated key is refused', async () => {
    const P = freshPersistDir();
    const k1 = await wrangler({ persistTo: P, vars: { STATE_KEYS: 'one:first-secret-0123456789abcdef' } });
    const args = deployArgs('api');
    let s1;
    try {
      s1 = await startDeploy(k1.url, args);
      assert.equal(claimsOf(s1).kid, 'one');
    } finally {
      await k1.stop();
    }
    const k2 = await wrangler({ persistTo: P, vars: { STATE_KEYS: 'two:other-secret-0123456789abcdef' } });
    try {
      const r = await callTool(k2.url, 'deploy', args, { requestState: s1, inputResponses: ELICITED('staging') });
      assertRefused(r, 400, /^Invalid request state: signature does not verify$/);
    } finally {
      await k2.stop();
    }
  });
});
