// A durable-mcp Worker with a built-in authorization server: point `main`
// in your wrangler.toml here. Your config also needs (see
// tests/e2e/builtin-oauth/wrangler.toml for a whole one):
//   compatibility_flags = ["global_fetch_strictly_public"]  # client ID metadata documents
//   [[kv_namespaces]] binding = "OAUTH_KV"                   # grants, tokens, clients
//   [vars] OAUTH_WRAPPER = "workers-oauth-provider"         # the Rust side trusts ctx.props
//   [vars] MCP_RESOURCE = "https://mcp.example.com/mcp"      # your public /mcp URL
//   the MCP_OBJECTS Durable Object binding, as for any durable-mcp Worker.
//
// The one line to change: your crate's worker-build output.
import RustWorker, { McpObject } from '../quickstart/build/worker/shim.mjs';
import { withBuiltinOAuth } from './provider.js';

// The Durable Object class keeps its name: MCP_OBJECTS binds to it.
export { McpObject };

export default withBuiltinOAuth(RustWorker);
