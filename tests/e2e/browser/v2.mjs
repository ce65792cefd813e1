// The browser entry for the v2 TypeScript client (@modelcontextprotocol/client),
// bundled by esbuild for the page (its browser build: the `browser` export
// condition). `window.mcpE2E.run(...)` connects to an MCP server on another
// origin — by default as v2 does out of the box (the 2025-11-25 session
// wire), or pinned to a modern revision — lists the tools, runs a call that
// pauses for a form the handler answers (then any `extraCalls`), ends the
// session when there is one, and resolves with a report (never rejects).
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { describe, recorder, reporter, within } from './common.mjs';

/**
 * @param {{url: string, pin?: string, tool: string, arguments: object, answer: object,
 *   extraCalls?: {name: string, arguments: object, headers?: Record<string, string>}[],
 *   stepMs: number}} opts
 */
async function run({ url, pin, tool, arguments: args, answer, extraCalls = [], stepMs }) {
  const { wire, recordingFetch } = recorder();
  const { report, step } = reporter(wire, stepMs);
  report.client = 'v2';
  const options = { capabilities: { elicitation: { form: {} } } };
  if (pin) options.versionNegotiation = { mode: { pin } };
  const client = new Client({ name: 'browser-e2e-v2', version: '0.0.1' }, options);
  client.onerror = (e) => report.errors.push(String(e?.message ?? e));
  client.setRequestHandler('elicitation/create', async (request) => {
    report.elicited.push(request.params);
    return { action: 'accept', content: answer };
  });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    fetch: recordingFetch,
    reconnectionOptions: { initialReconnectionDelay: 100, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1.5, maxRetries: 3 },
  });
  try {
    await step('connect', () => client.connect(transport));
    report.era = client.getProtocolEra() ?? null;
    report.negotiated = client.getNegotiatedProtocolVersion() ?? null;
    report.sessionId = transport.sessionId ?? null;
    report.protocolVersion = transport.protocolVersion ?? null;
    report.serverName = client.getServerVersion()?.name ?? null;
    const { tools } = await step('listTools', () => client.listTools());
    report.tools = tools.map((t) => t.name);
    report.result = await step('callTool', () => client.callTool({ name: tool, arguments: args }, { timeout: stepMs }));
    // Further calls, each with the request headers it names; an error is
    // kept as the call's outcome (its JSON-RPC code), not as a failed run.
    report.extra = [];
    for (const { headers, ...call } of extraCalls) {
      try {
        const options = headers ? { timeout: stepMs, headers } : { timeout: stepMs };
        report.extra.push({ result: await within(stepMs, client.callTool(call, options), `callTool ${call.name}`) });
      } catch (e) {
        report.extra.push({ error: describe(e), code: e?.code ?? null });
      }
    }
    if (transport.sessionId) {
      await step('terminateSession', () => transport.terminateSession());
      report.sessionIdAfter = transport.sessionId ?? null;
    }
  } catch { /* in report.failed */ } finally {
    try { await client.close(); } catch { /* already closed */ }
  }
  return report;
}

window.mcpE2E = { client: 'v2', run };
