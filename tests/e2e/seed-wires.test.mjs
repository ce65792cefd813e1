// The seed wires against `wrangler dev`, with the exact message shapes of
// the seeds: tools/callSaga + tools/resumeSaga (seed 000) and the
// streamless dependent_requests / dependent_responses sketch (seed 002).
// Neither wire sends 2026 `_meta` or the mirrored headers: content-type only.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startWrangler } from './wrangler.mjs';
import { postPlain } from './webhook.mjs';

let server;
before(async () => { server = await startWrangler(); });
after(async () => { await server?.stop(); });

const post = (body, headers) => postPlain(server.url, body, headers);

describe('seed 000: tools/callSaga and tools/resumeSaga', () => {
  test('the deploy story runs over callSaga and resumeSaga with the seed message shapes', async () => {
    // 1. The client initiates the tool call.
    const r1 = await post({ jsonrpc: '2.0', id: 'client-req-1', method: 'tools/callSaga',
      params: { name: 'deploy', arguments: { service: 'api' } } });
    assert.equal(r1.status, 200, r1.text);
    assert.equal(r1.json.id, 'client-req-1');
    // 2. Suspended for an elicitation.
    const sus1 = r1.json.result;
    assert.deepEqual(Object.keys(sus1).sort(), ['sagaToken', 'state', 'steps'], r1.text);
    assert.equal(sus1.state, 'suspended');
    assert.equal(typeof sus1.sagaToken, 'string');
    assert.equal(sus1.steps.length, 1);
    const [step1] = sus1.steps;
    assert.equal(step1.type, 'elicitation');
    assert.equal(step1.stepId, 'target');
    assert.equal(step1.params.message, 'Where should api be deployed?');
    assert.deepEqual(step1.params.requestedSchema, {
      type: 'object',
      properties: { target: { type: 'string', enum: ['staging', 'production'] } },
      required: ['target'],
    });

    // 3. Resume with the elicitation result.
    const elicited = { stepId: step1.stepId, result: { action: 'accept', content: { target: 'production' } } };
    const r2 = await post({ jsonrpc: '2.0', id: 'client-req-2', method: 'tools/resumeSaga',
      params: { sagaToken: sus1.sagaToken, completedSteps: [elicited] } });
    assert.equal(r2.status, 200, r2.text);
    assert.equal(r2.json.id, 'client-req-2');
    // 4. Suspended for sampling, under a new token.
    const sus2 = r2.json.result;
    assert.equal(sus2.state, 'suspended', r2.text);
    assert.notEqual(sus2.sagaToken, sus1.sagaToken);
    assert.equal(sus2.steps.length, 1);
    const [step2] = sus2.steps;
    assert.equal(step2.type, 'sampling');
    assert.equal(step2.stepId, 'safety');
    assert.deepEqual(step2.params.messages, [{ role: 'user',
      content: { type: 'text', text: 'Is it safe to deploy api to production right now? Answer yes or no.' } }]);
    assert.equal(step2.params.maxTokens, 50);

    // 5. Resume with ALL completed steps so far.
    const sampled = { stepId: step2.stepId, result: { role: 'assistant',
      content: { type: 'text', text: 'Yes, all systems are green.' }, model: 'client-side-llm-v2' } };
    const resume3 = { jsonrpc: '2.0', id: 'client-req-3', method: 'tools/resumeSaga',
      params: { sagaToken: sus2.sagaToken, completedSteps: [elicited, sampled] } };
    const r3 = await post(resume3);
    assert.equal(r3.status, 200, r3.text);
    assert.equal(r3.json.id, 'client-req-3');
    // 6. A plain CallToolResult: no saga state, no steps.
    const final = r3.json.result;
    assert.deepEqual(Object.keys(final), ['content'], r3.text);
    assert.equal(final.state, undefined, r3.text);
    assert.equal(final.sagaToken, undefined);
    assert.equal(final.steps, undefined);
    assert.equal(final.content.length, 1);
    assert.equal(final.content[0].type, 'text');
    assert.match(final.content[0].text, /^Deployed api to production \(ticket CHG-[0-9A-F]{8}\)\.$/);
    assert.notEqual(final.isError, true);

    // deploy is durable: the same resume again (its reply was lost) gets
    // the same result; a resume with other answers is refused.
    const replay = await post({ ...resume3, id: 'client-req-4' });
    assert.equal(replay.status, 200, replay.text);
    assert.deepEqual(replay.json.result, final);
    const otherSample = { ...sampled, result: { ...sampled.result, content: { type: 'text', text: 'no' } } };
    const other = await post({ ...resume3, id: 'client-req-5', params: { ...resume3.params, completedSteps: [elicited, otherSample] } });
    assert.equal(other.status, 400, other.text);
    assert.equal(other.json.error.code, -32602);
    assert.match(other.json.error.message, /already used/);
  });

  test('a saga step that failed on the client reaches the tool with its error message', async () => {
    const r1 = await post({ jsonrpc: '2.0', id: 1, method: 'tools/callSaga',
      params: { name: 'test_elicitation', arguments: { message: 'hi' } } });
    assert.equal(r1.status, 200, r1.text);
    const sus = r1.json.result;
    assert.equal(sus.state, 'suspended', r1.text);
    assert.equal(sus.steps[0].type, 'elicitation');
    assert.equal(sus.steps[0].params.message, 'hi');
    const r2 = await post({ jsonrpc: '2.0', id: 2, method: 'tools/resumeSaga',
      params: { sagaToken: sus.sagaToken,
        completedSteps: [{ stepId: sus.steps[0].stepId, error: { code: -1, message: 'user rejected the form' } }] } });
    assert.equal(r2.status, 200, r2.text);
    assert.equal(r2.json.id, 2);
    assert.equal(r2.json.result.state, undefined, r2.text);
    const text = r2.json.result.content[0].text;
    assert.match(text, /^Elicitation not supported or error: /, r2.text);
    assert.ok(text.includes('user rejected the form'), r2.text);
  });
});

describe('seed 002: the streamless dependent_requests sketch', () => {
  const call = { name: 'test_input_required_result_multiple_inputs', arguments: {} };
  const answers = {
    user_name: { result: { action: 'accept', content: { name: 'octocat' } } },
    greeting: { result: { role: 'assistant', content: { type: 'text', text: 'Hi!' }, model: 'm' } },
    client_roots: { result: { roots: [] } },
  };

  /** Checks an incomplete response; returns its requestState. */
  function assertIncomplete(r, id) {
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.jsonrpc, '2.0');
    assert.equal(r.json.id, id);
    assert.deepEqual(Object.keys(r.json).sort(), ['dependent_requests', 'id', 'jsonrpc', 'requestState'], r.text);
    const deps = r.json.dependent_requests;
    assert.deepEqual(Object.keys(deps).sort(), ['client_roots', 'greeting', 'user_name'], r.text);
    assert.equal(deps.user_name.method, 'elicitation/create');
    assert.equal(deps.user_name.params.message, 'What is your name?');
    assert.equal(deps.greeting.method, 'sampling/createMessage');
    assert.equal(deps.greeting.params.messages[0].content.text, 'Generate a greeting');
    assert.equal(deps.client_roots.method, 'roots/list');
    assert.equal(typeof r.json.requestState, 'string');
    return r.json.requestState;
  }

  async function retry(state, id) {
    const r = await post({ jsonrpc: '2.0', id, method: 'tools/call', params: call,
      requestState: state, dependent_responses: answers });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.id, id);
    assert.deepEqual(Object.keys(r.json).sort(), ['id', 'jsonrpc', 'result'], r.text);
    assert.deepEqual(r.json.result.content, [{ type: 'text', text: 'Name: octocat; Greeting: Hi!; Roots: 0' }], r.text);
  }

  test('the streamless sketch round-trips with dependent_responses on the first call', async () => {
    const r = await post({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: call, dependent_responses: {} });
    const state = assertIncomplete(r, 2);
    await retry(state, 3);
  });

  test('the streamless opt-in also works with the Mcp-Dependent-Requests header alone', async () => {
    const r = await post({ jsonrpc: '2.0', id: 'first', method: 'tools/call', params: call },
      { 'mcp-dependent-requests': '1' });
    const state = assertIncomplete(r, 'first');
    await retry(state, 'second');
  });
});
