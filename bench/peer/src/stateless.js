// Peer A, "stateless": the Cloudflare-recommended way to serve MCP from a
// Worker today — agents' createMcpHandler over an MCP SDK v2 McpServer. Every
// request builds a fresh server from the factory; nothing is kept between
// requests, so the MRTR `confirm` tool carries its state in a signed
// requestState the client echoes back.
//
// createMcpHandler is imported from `agents/mcp/server`, the entry the agents
// 0.32.0 docs use for SDK v2 servers. `agents/mcp` exports the same name, and
// given a factory it calls this very function; it would only drag McpAgent,
// SDK v1 and partyserver into a bundle that never uses them.
import { McpServer, acceptedContent, createRequestStateCodec, inputRequired } from '@modelcontextprotocol/server';
import { createMcpHandler } from 'agents/mcp/server';
import { z } from 'zod';

// A fixed key so that every isolate (and every run) accepts the state another
// one minted. Benchmark only: a real server keeps this in a secret.
const codec = createRequestStateCodec({ key: 'durable-mcp-bench-peer-request-state-key-0123456789' });

// Same shape as durable-mcp's fixture: one boolean field `ok`.
const Confirm = z.object({ ok: z.boolean() });

function createServer() {
  const server = new McpServer(
    { name: 'peer-stateless', version: '0.0.0' },
    // verify runs before the handler; a tampered or expired state is answered
    // with -32602 by the SDK, never reaching the tool.
    { requestState: { verify: codec.verify } },
  );

  server.registerTool(
    'echo',
    { description: 'Returns its text', inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: 'text', text }] }),
  );

  server.registerTool(
    'confirm',
    { description: 'Asks the user to confirm, then answers', inputSchema: {} },
    async (_args, ctx) => {
      const state = ctx.mcpReq.requestState();
      const answer = acceptedContent(ctx.mcpReq.inputResponses, 'confirm', Confirm);
      // An answer only counts on a round that carries the state we minted:
      // that is what makes this a genuine two-request round trip.
      if (!state || !answer) {
        return inputRequired({
          inputRequests: {
            confirm: inputRequired.elicit({
              message: 'Please confirm',
              requestedSchema: {
                type: 'object',
                properties: { ok: { type: 'boolean' } },
                required: ['ok'],
              },
            }),
          },
          requestState: await codec.mint({ step: 'confirm' }),
        });
      }
      return { content: [{ type: 'text', text: answer.ok ? 'confirmed' : 'not confirmed' }] };
    },
  );

  return server;
}

// Built once per isolate, as the agents docs say; the route defaults to /mcp.
const handler = createMcpHandler(createServer, { route: '/mcp' });

export default {
  fetch(request, env, ctx) {
    return handler(request, env, ctx);
  },
};
