// The requests the bench's passes send, and a plain HTTP client for the
// passes that are not load (cold starts, many at once, costs).
import http from 'node:http';

/** The state key every bench worker is served with. */
export const KEY = 'bench:bench-key-0123456789abcdef0123456789abcdef';
export const MODERN = '2026-07-28';
export const META = { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': { elicitation: {}, sampling: {} } };
export const TASKS_EXT = 'io.modelcontextprotocol/tasks';
/** `_meta` of a client that takes tasks (and answers forms). */
export const TASKS_META = { ...META, 'io.modelcontextprotocol/clientCapabilities': { elicitation: {}, extensions: { [TASKS_EXT]: {} } } };

/** A 2026-07-28 request of `method` (default `tools/call` of `name`) as autocannon takes it. */
export function modernReq(name, args, extra = {}) {
  return {
    method: 'POST', path: '/mcp',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream',
      'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': name },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args, _meta: META, ...extra } }),
  };
}

/** A 2026-07-28 task method (`tasks/get`, `tasks/update`…) on `taskId`. */
export function taskReq(method, taskId, extra = {}) {
  return {
    method: 'POST', path: '/mcp',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream',
      'mcp-protocol-version': MODERN, 'mcp-method': method, 'mcp-name': taskId },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { taskId, _meta: TASKS_META, ...extra } }),
  };
}

/**
 * A client over `maxSockets` kept-alive connections: `send(base, req)`
 * resolves to `{ status, headers, text, json }` (json: the body parsed, or
 * the data of an event stream's first message). A thousand requests at once
 * go out over those connections as fast as they free up.
 */
export function client(maxSockets = 256) {
  const agent = new http.Agent({ keepAlive: true, maxSockets });
  const send = (base, req) => new Promise((resolve, reject) => {
    const url = new URL(req.path ?? '/mcp', base);
    const body = req.body ?? '';
    const r = http.request(url, { method: req.method ?? 'POST', agent,
      headers: { ...req.headers, ...(body ? { 'content-length': Buffer.byteLength(body) } : {}) } }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json;
        try {
          json = (res.headers['content-type'] ?? '').includes('text/event-stream')
            ? JSON.parse(text.split('\n').find((l) => l.startsWith('data: '))?.slice(6) ?? 'null')
            : JSON.parse(text);
        } catch { /* not JSON */ }
        resolve({ status: res.statusCode, headers: res.headers, text, json });
      });
      res.on('error', reject);
    });
    r.on('error', reject);
    r.end(body);
  });
  return { send, close: () => agent.destroy() };
}
