// A trap in the wasm (a panic: `unreachable`) ends the request it happened
// in, and nothing else: the Worker serves the next request, a Durable
// Object the next call, and a call paused before the trap still
// completes (worker-build's shim resets the instance and makes an object
// again after a trap). The tools that trap exist only with TRAP_TOOLS set.
//
// Not held here, because it does not hold: that the request which trapped
// inside an object gets an answer. A trap in an object's awaited round (a
// microtask) reaches no caller, and worker-build's shim leaves that
// request waiting until the runtime cancels it; it is given a few seconds
// and then let go.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { callTool } from './webhook.mjs';
import { startServer, VIA } from './server.mjs';

let server;
before(async () => {
  server = await startServer({ vars: { TRAP_TOOLS: '1' } });
});
after(async () => {
  await server?.stop();
});

/** A call that traps: refused as a server error or cut off, never a result. */
async function trapped(url, name, { patience } = {}) {
  const call = callTool(url, name, {});
  const waited = patience && new Promise((ok) => setTimeout(ok, patience, 'waited'));
  let r;
  try {
    r = await (waited ? Promise.race([call, waited]) : call);
  } catch {
    return; // the connection was cut: the request ended
  }
  if (r === 'waited') {
    call.catch(() => {});
    return;
  }
  assert.ok(r.status >= 500, `a trap is no result: ${r.status} ${r.text}`);
}

async function adds(url) {
  const r = await callTool(url, 'add', { a: 2, b: 3 });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.result.structuredContent.sum, 5, r.text);
}

describe(`a trap ends its own request only (${VIA})`, () => {
  test('the Worker serves the next request after a tool traps, again and again', async () => {
    await adds(server.url);
    for (let i = 0; i < 3; i++) {
      await trapped(server.url, 'trap');
      await adds(server.url);
    }
  });

  test('a call paused before an object trapped completes after it; a new call runs', async () => {
    const elicited = { target: { action: 'accept', content: { target: 'staging' } } };
    const first = await callTool(server.url, 'deploy', { service: 'api' }, {}, { id: 1 });
    assert.equal(first.status, 200, first.text);
    assert.equal(first.json.result.resultType, 'input_required', first.text);
    // Calls are spread over 16 objects: trap in several, so some trap
    // lands beside the paused one (and every one must recover).
    for (let i = 0; i < 4; i++) await trapped(server.url, 'trap_durable', { patience: 3000 });
    const second = await callTool(server.url, 'deploy', { service: 'api' },
      { inputResponses: elicited, requestState: first.json.result.requestState }, { id: 2 });
    assert.equal(second.status, 200, second.text);
    assert.deepEqual(Object.keys(second.json.result.inputRequests ?? {}), ['safety'], second.text);
    const sampled = { safety: { role: 'assistant', content: { type: 'text', text: 'yes' }, model: 'e2e-model' } };
    const third = await callTool(server.url, 'deploy', { service: 'api' },
      { inputResponses: sampled, requestState: second.json.result.requestState }, { id: 3 });
    assert.equal(third.status, 200, third.text);
    assert.equal(third.json.result?.resultType, 'complete', third.text);
    const fresh = await callTool(server.url, 'deploy', { service: 'web' }, {}, { id: 3 });
    assert.equal(fresh.status, 200, fresh.text);
    assert.equal(fresh.json.result.resultType, 'input_required', fresh.text);
    await adds(server.url);
  });
});
