// The platform floor: a plain JavaScript Worker (no framework, no wasm) that
// does the least any 2026-07-28 MCP server must do with a request, so the
// bench can say how far durable-mcp is from the runtime itself:
//
// - reads the three headers the wire mirrors (`MCP-Protocol-Version`,
//   `Mcp-Method`, `Mcp-Name`) and the JSON-RPC body, parses it, and checks
//   the headers against it (a 400 if they differ), as bench/ceiling's
//   `/rpc-mcp` does in Rust;
// - `POST /call`: answers a fixed result (the stateless call);
// - `POST /mrtr`: a body without `params.requestState` gets a fixed
//   `input_required` carrying a fixed state as long as the real one
//   (`STATE_LENGTH`, which the bench measures from the fixtures worker's
//   first round), a body with it the fixed result (the MRTR round trip).
//
// Nothing is sealed, opened, validated or replayed: that is the point.

const COMPLETE = { resultType: 'complete', content: [{ type: 'text', text: '3' }] };
const HEADERS = { 'content-type': 'application/json' };

/** The input_required result, built once per isolate (its state is fixed). */
let inputRequired;
function asking(env) {
  if (!inputRequired) {
    const length = Number(env.STATE_LENGTH ?? 610);
    inputRequired = {
      resultType: 'input_required',
      inputRequests: { q: { method: 'elicitation/create', params: {
        message: '?', requestedSchema: { type: 'object', properties: {} } } } },
      requestState: 'v1.'.concat('AbCdEfGhIj'.repeat(Math.ceil(length / 10))).slice(0, length),
    };
  }
  return inputRequired;
}

const reply = (status, body) => new Response(JSON.stringify(body), { status, headers: HEADERS });

export default {
  async fetch(request, env) {
    // Read before the body, as a server that checks them must.
    const version = request.headers.get('mcp-protocol-version');
    const method = request.headers.get('mcp-method');
    const name = request.headers.get('mcp-name');
    let body;
    try {
      body = JSON.parse(await request.text());
    } catch {
      return reply(400, { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
    }
    const params = body?.params ?? {};
    const id = body?.id ?? null;
    const fits = version === params._meta?.['io.modelcontextprotocol/protocolVersion']
      && method === body?.method && name === params.name;
    if (!fits) return reply(400, { jsonrpc: '2.0', id, error: { code: -32020, message: 'header mismatch' } });
    const { pathname } = new URL(request.url);
    if (pathname === '/mrtr' && typeof params.requestState !== 'string') {
      return reply(200, { jsonrpc: '2.0', id, result: asking(env) });
    }
    return reply(200, { jsonrpc: '2.0', id, result: COMPLETE });
  },
};
