// The ceiling: a plain Worker on the same workerd that answers every POST
// with a fixed JSON-RPC result, doing no MCP work at all.
export default {
  async fetch(request) {
    const body = await request.text();
    let id = null;
    try { id = JSON.parse(body).id ?? null; } catch {}
    return new Response(JSON.stringify({ jsonrpc: '2.0', id, result: { resultType: 'complete', content: [{ type: 'text', text: '3' }] } }), {
      headers: { 'content-type': 'application/json' },
    });
  },
};
