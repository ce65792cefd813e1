// The official TypeScript client (@modelcontextprotocol/client 2.4.0), pinned
// to 2026-07-28, against one `wrangler dev` running the built worker with the
// conformance fixtures (the fixtures worker).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startWrangler } from './wrangler.mjs';
import { MODERN, META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES, META_SERVER_INFO, send } from './modern.mjs';

const ROOT = resolve(import.meta.dirname, '../..');
const CRATE_VERSION = /^\s*version\s*=\s*"([^"]+)"/m.exec(readFileSync(resolve(ROOT, 'Cargo.toml'), 'utf8'))[1];

// Every tool the fixtures worker registers (tests/fixtures-worker/src/examples.rs, fixtures.rs).
const EXAMPLE_TOOLS = ['add', 'deploy'];
const FIXTURE_TOOLS = [
  'json_schema_2020_12_tool',
  'test_audio_content',
  'test_elicitation',
  'test_elicitation_sep1034_defaults',
  'test_elicitation_sep1330_enums',
  'test_embedded_resource',
  'test_error_handling',
  'test_image_content',
  'test_input_required_result_capabilities',
  'test_input_required_result_elicitation',
  'test_input_required_result_list_roots',
  'test_input_required_result_multi_round',
  'test_input_required_result_multiple_inputs',
  'test_input_required_result_request_state',
  'test_input_required_result_sampling',
  'test_input_required_result_tampered_state',
  'test_logging_tool',
  'test_missing_capability',
  'test_multiple_content_types',
  'test_sampling',
  'test_simple_text',
  'test_streaming_elicitation',
  'test_reconnection',
  'test_trigger_tool_change',
  'test_trigger_prompt_change',
  'test_tool_with_logging',
  'test_tool_with_progress',
  'test_custom_header',
];
/** The tasks-extension fixtures (tests/fixtures-worker/src/tasks.rs). */
const TASK_TOOLS = ['greet', 'slow_compute', 'failing_job', 'protocol_error_job', 'confirm_delete',
  'multi_input', 'test_tool_with_task', 'count_slowly'];
/** The sign-in fixtures (tests/fixtures-worker/src/signin.rs). */
const SIGNIN_TOOLS = ['release', 'whoami'];
/** The URL-elicitation fixtures (tests/fixtures-worker/src/pages.rs). */
const PAGE_TOOLS = ['connect', 'sign_off'];
const APPROVAL_TOOLS = ['file_change'];
/** The long-call fixtures (tests/fixtures-worker/src/long.rs). */
const LONG_TOOLS = ['hoard', 'hoard_task', 'long_talk', 'long_talk_task'];
/** The chaining fixtures (tests/fixtures-worker/src/chains.rs). */
const CHAIN_TOOLS = ['chain_loop', 'chain_step', 'chain_start', 'chain_to_unlisted', 'chain_bad_arguments'];

let server;
/** Every client made here, closed in after(). */
const clients = [];

/**
 * A pinned modern client. `wire` records the Mcp-Method header and parsed
 * body of every POST it sends.
 */
async function connectClient({ onElicit, onSample } = {}) {
  const wire = [];
  const client = new Client(
    { name: 'durable-mcp-e2e', version: '0.0.1' },
    {
      capabilities: { elicitation: { form: {} }, sampling: {} },
      versionNegotiation: { mode: { pin: MODERN } },
    },
  );
  if (onElicit) client.setRequestHandler('elicitation/create', onElicit);
  if (onSample) client.setRequestHandler('sampling/createMessage', onSample);
  const recordingFetch = async (input, init = {}) => {
    const h = new Headers(init.headers);
    let body = null;
    try { body = typeof init.body === 'string' ? JSON.parse(init.body) : null; } catch { /* not JSON */ }
    wire.push({ method: init.method ?? 'GET', mcpMethod: h.get('mcp-method'), mcpName: h.get('mcp-name'), body });
    return fetch(input, init);
  };
  clients.push(client);
  await client.connect(new StreamableHTTPClientTransport(new URL(server.url), { fetch: recordingFetch }));
  return { client, wire };
}

let main;
before(async () => {
  server = await startWrangler();
  main = await connectClient();
});

after(async () => {
  for (const c of clients) {
    try { await c.close(); } catch { /* already closed */ }
  }
  await server?.stop();
});

test('the client discovers the server over server/discover and negotiates 2026-07-28', async () => {
  const { client, wire } = main;
  assert.equal(client.getProtocolEra(), 'modern');
  assert.equal(client.getNegotiatedProtocolVersion(), MODERN);

  // connect() probed with server/discover, carrying the modern _meta envelope.
  const probe = wire[0];
  assert.equal(probe.mcpMethod, 'server/discover');
  assert.equal(probe.body.method, 'server/discover');
  assert.equal(probe.body.params._meta[META_PROTOCOL_VERSION], MODERN);
  assert.deepEqual(probe.body.params._meta[META_CLIENT_CAPABILITIES], { elicitation: { form: {} }, sampling: {} });

  const probed = client.getDiscoverResult();
  assert.deepEqual(probed.supportedVersions, [MODERN]);
  assert.deepEqual(client.getServerVersion(), { name: 'durable-mcp', version: CRATE_VERSION });

  // An explicit server/discover round trip says the same.
  const d = await client.discover();
  assert.deepEqual(d.supportedVersions, [MODERN]);
  for (const cap of ['tools', 'resources', 'prompts']) {
    assert.equal(typeof d.capabilities[cap], 'object', `capability ${cap}`);
  }
  assert.deepEqual(d._meta[META_SERVER_INFO], { name: 'durable-mcp', version: CRATE_VERSION });

  // The raw result carries resultType, which the client does not surface.
  const raw = await send(server.url, 'server/discover', {});
  assert.equal(raw.status, 200);
  assert.equal(raw.json.result.resultType, 'complete');
  assert.deepEqual(raw.json.result.supportedVersions, [MODERN]);
});

test('the client lists every tool, examples and fixtures, sorted by name', async () => {
  const { tools } = await main.client.listTools({}, { cacheMode: 'bypass' });
  const names = tools.map((t) => t.name);
  assert.deepEqual(names, [...names].sort(), 'tools are sorted by name');
  assert.deepEqual(names, [...EXAMPLE_TOOLS, ...FIXTURE_TOOLS, ...TASK_TOOLS, ...CHAIN_TOOLS, ...SIGNIN_TOOLS, ...PAGE_TOOLS, ...APPROVAL_TOOLS, ...LONG_TOOLS].sort());
  const deploy = tools.find((t) => t.name === 'deploy');
  assert.equal(deploy.title, 'Deploy a service');
  assert.deepEqual(deploy.inputSchema.required, ['service']);
  const add = tools.find((t) => t.name === 'add');
  assert.deepEqual(add.outputSchema.required, ['sum']);
});

test('calling add returns the sum as text and as structuredContent', async () => {
  const r = await main.client.callTool({ name: 'add', arguments: { a: 2, b: 3.5 } });
  assert.equal(r.isError ?? false, false);
  assert.deepEqual(r.structuredContent, { sum: 5.5 });
  // The same JSON as a text block, for clients that read only content.
  assert.deepEqual(r.content, [{ type: 'text', text: '{"sum":5.5}' }]);
  const sent = main.wire.findLast((w) => w.mcpMethod === 'tools/call');
  assert.equal(sent.mcpName, 'add', 'the client mirrored the tool name in Mcp-Name');
});

test('the client reads durable-mcp://about and test://static-text', async () => {
  const about = await main.client.readResource({ uri: 'durable-mcp://about' }, { cacheMode: 'bypass' });
  assert.deepEqual(about.contents, [{
    uri: 'durable-mcp://about',
    mimeType: 'text/plain',
    text: 'durable-mcp: MCP tools that can pause mid-call and resume.',
  }]);
  const fixture = await main.client.readResource({ uri: 'test://static-text' }, { cacheMode: 'bypass' });
  assert.deepEqual(fixture.contents, [{
    uri: 'test://static-text',
    mimeType: 'text/plain',
    text: 'This is the content of the static text resource.',
  }]);
});

test('the client gets test_prompt_with_arguments with its arguments filled in', async () => {
  const p = await main.client.getPrompt({ name: 'test_prompt_with_arguments', arguments: { arg1: 'alpha', arg2: 'beta' } });
  assert.deepEqual(p.messages, [{
    role: 'user',
    content: { type: 'text', text: "Prompt with arguments: arg1='alpha', arg2='beta'" },
  }]);
});

test('deploy runs end to end through the client’s own elicitation and sampling handlers', async () => {
  const elicits = [];
  const samples = [];
  const { client, wire } = await connectClient({
    onElicit: async (req, ctx) => {
      elicits.push({ key: ctx.mcpReq.id, params: req.params });
      return { action: 'accept', content: { target: 'staging' } };
    },
    onSample: async (req, ctx) => {
      samples.push({ key: ctx.mcpReq.id, params: req.params });
      return { role: 'assistant', model: 'e2e-fake', content: { type: 'text', text: 'yes, go ahead' }, stopReason: 'endTurn' };
    },
  });
  const r = await client.callTool({ name: 'deploy', arguments: { service: 'api' } });
  assert.equal(r.isError ?? false, false);
  assert.equal(r.content.length, 1);
  assert.equal(r.content[0].type, 'text');
  assert.match(r.content[0].text, /^Deployed api to staging \(ticket CHG-[0-9A-F]{8}\)\.$/);
  assert.ok(r.content[0].text.startsWith('Deployed api to staging (ticket CHG-'));

  assert.equal(elicits.length, 1, 'elicitation handler called exactly once');
  assert.equal(elicits[0].key, 'target');
  assert.equal(elicits[0].params.message, 'Where should api be deployed?');
  assert.deepEqual(elicits[0].params.requestedSchema.properties.target.enum, ['staging', 'production']);
  assert.equal(samples.length, 1, 'sampling handler called exactly once');
  assert.equal(samples[0].key, 'safety');
  assert.match(JSON.stringify(samples[0].params.messages), /deploy api to staging/);

  // Three legs on the wire: ask the target, ask the model, complete.
  const legs = wire.filter((w) => w.mcpMethod === 'tools/call');
  assert.equal(legs.length, 3);
  assert.equal(legs[0].body.params.requestState, undefined);
  assert.deepEqual(Object.keys(legs[1].body.params.inputResponses), ['target']);
  assert.deepEqual(Object.keys(legs[2].body.params.inputResponses), ['safety']);
  assert.equal(typeof legs[2].body.params.requestState, 'string');
});

test('deploy reports a cancellation when the elicitation is declined', async () => {
  let elicitCalls = 0;
  let sampleCalls = 0;
  const { client } = await connectClient({
    onElicit: async () => { elicitCalls += 1; return { action: 'decline' }; },
    onSample: async () => {
      sampleCalls += 1;
      return { role: 'assistant', model: 'e2e-fake', content: { type: 'text', text: 'yes' }, stopReason: 'endTurn' };
    },
  });
  const r = await client.callTool({ name: 'deploy', arguments: { service: 'api' } });
  assert.equal(r.isError ?? false, false);
  assert.deepEqual(r.content, [{ type: 'text', text: 'Deployment of api cancelled by the user.' }]);
  assert.equal(elicitCalls, 1);
  assert.equal(sampleCalls, 0, 'no safety question after a decline');
});
