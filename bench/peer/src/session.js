// Peer B, "session": the classic (now deprecated) agents McpAgent — one
// Durable Object per 2025-11-25 streamable HTTP session, running an MCP SDK v1
// McpServer. McpAgent refuses SDK v2 servers, hence @modelcontextprotocol/sdk.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { McpAgent } from 'agents/mcp';
import { z } from 'zod';

// The class name is ours to pick; wrangler.session.toml binds it as
// MCP_OBJECT, the binding name McpAgent.serve() looks up by default.
export class PeerSession extends McpAgent {
  server = new McpServer({ name: 'peer-session', version: '0.0.0' });

  // Runs once per Durable Object start, before the session's first message.
  async init() {
    this.server.registerTool(
      'echo',
      { description: 'Returns its text', inputSchema: { text: z.string() } },
      async ({ text }) => ({ content: [{ type: 'text', text }] }),
    );
  }
}

// The Worker only routes: each Mcp-Session-Id maps to its own Durable Object.
export default PeerSession.serve('/mcp');
