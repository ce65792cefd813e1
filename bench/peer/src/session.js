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
    // A paused call on this wire (what the bench's cost pass counts): asks
    // the user with McpAgent's elicitInput, on the call's own stream, and
    // answers once the client has.
    this.server.registerTool(
      'confirm',
      { description: 'Asks the user to confirm, then answers', inputSchema: {} },
      async (_args, extra) => {
        const answer = await this.elicitInput({
          message: 'Please confirm',
          requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
        }, { relatedRequestId: extra.requestId });
        const ok = answer.action === 'accept' && answer.content?.ok === true;
        return { content: [{ type: 'text', text: ok ? 'confirmed' : 'not confirmed' }] };
      },
    );
  }
}

// The Worker only routes: each Mcp-Session-Id maps to its own Durable Object.
export default PeerSession.serve('/mcp');
