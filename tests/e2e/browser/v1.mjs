// The browser entry for the v1 TypeScript SDK (@modelcontextprotocol/sdk),
// bundled by esbuild for the page: `window.mcpE2E.run(...)` connects to an
// MCP server on another origin (the 2025-11-25 session wire), lists the
// tools, runs a call that pauses for a form the handler answers, ends the
// session, and resolves with a report (never rejects).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { recorder, reporter } from './common.mjs';

/**
 * @param {{url: string, tool: string, arguments: object, answer: object, stepMs: number}} opts
 */
async function run({ url, tool, arguments: args, answer, stepMs }) {
  const { wire, recordingFetch } = recorder();
  const { report, step } = reporter(wire, stepMs);
  report.client = 'v1';
  const client = new Client({ name: 'browser-e2e-v1', version: '0.0.1' }, { capabilities: { elicitation: {} } });
  client.onerror = (e) => report.errors.push(String(e?.message ?? e));
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    report.elicited.push(request.params);
    return { action: 'accept', content: answer };
  });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    fetch: recordingFetch,
    reconnectionOptions: { initialReconnectionDelay: 100, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1.5, maxRetries: 3 },
  });
  try {
    await step('connect', () => client.connect(transport));
    report.sessionId = transport.sessionId ?? null;
    report.protocolVersion = transport.protocolVersion ?? null;
    report.serverName = client.getServerVersion()?.name ?? null;
    const { tools } = await step('listTools', () => client.listTools());
    report.tools = tools.map((t) => t.name);
    report.result = await step('callTool', () => client.callTool({ name: tool, arguments: args }, undefined, { timeout: stepMs }));
    await step('terminateSession', () => transport.terminateSession());
    report.sessionIdAfter = transport.sessionId ?? null;
  } catch { /* in report.failed */ } finally {
    try { await client.close(); } catch { /* already closed */ }
  }
  return report;
}

window.mcpE2E = { client: 'v1', run };
