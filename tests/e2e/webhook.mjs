// A loopback change-ticket webhook for the `deploy` tool (TICKET_WEBHOOK),
// counting the side effects it receives, plus a small request helper for
// the 2026-07-28 `tools/call` wire used by the durable tests.
import { createServer } from 'node:http';

/**
 * Starts a webhook on 127.0.0.1. Every POST to `/<path>` is one side effect:
 * it is recorded and answered `{"ticket": "T-<n>"}`, n counting the hits on
 * that path (so each call can have its own path and its own count).
 * @param {{delayMs?: number}} [opts] delayMs holds each answer back, to keep
 *   a round running while a concurrent retry arrives.
 */
export async function startWebhook(opts = {}) {
  const delayMs = opts.delayMs ?? 0;
  /** @type {{path: string, body: any}[]} */
  const hits = [];
  const server = createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (c) => { raw += c; });
    req.on('end', () => {
      let body;
      try { body = JSON.parse(raw); } catch { body = raw; }
      hits.push({ path: req.url, method: req.method, body, idempotencyKey: req.headers['idempotency-key'] });
      const n = hits.filter((h) => h.path === req.url).length;
      setTimeout(() => {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ ticket: `T-${n}` }));
      }, delayMs);
    });
  });
  await new Promise((ok, fail) => {
    server.once('error', fail);
    server.listen(0, '127.0.0.1', ok);
  });
  const base = `http://127.0.0.1:${server.address().port}`;
  return {
    hits,
    /** The URL of a path on this webhook (default `/ticket`). */
    url: (path = '/ticket') => `${base}${path}`,
    /** How many side effects reached `path` (all paths when omitted). */
    count: (path) => (path === undefined ? hits.length : hits.filter((h) => h.path === path).length),
    async stop() {
      server.closeAllConnections?.();
      await new Promise((ok) => server.close(() => ok()));
    },
  };
}

export const MODERN = '2026-07-28';
export const META = {
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientCapabilities': { elicitation: {}, sampling: {} },
};

/** Parses a reply: JSON, or the last `data:` message of an SSE stream. */
function parse(text, contentType) {
  if ((contentType ?? '').startsWith('text/event-stream')) {
    const data = text.split(/\r?\n\r?\n/)
      .map((ev) => ev.split(/\r?\n/).filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trimStart()).join('\n'))
      .filter(Boolean);
    return data.length ? JSON.parse(data.at(-1)) : null;
  }
  try { return JSON.parse(text); } catch { return undefined; }
}

/**
 * One 2026-07-28 `tools/call` (headers and `_meta` as the wire requires).
 * `extra` is merged into params (requestState, inputResponses, …).
 * @returns {Promise<{status: number, json: any, text: string}>}
 */
export async function callTool(url, name, args, extra = {}, opts = {}) {
  const headers = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': MODERN,
    'mcp-method': 'tools/call',
    'mcp-name': name,
    ...(opts.headers ?? {}),
  };
  const body = { jsonrpc: '2.0', id: opts.id ?? 1, method: 'tools/call', params: { name, arguments: args, _meta: META, ...extra } };
  const r = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
  const text = await r.text();
  return { status: r.status, json: parse(text, r.headers.get('content-type')), text };
}

/** A POST with only content-type (the saga and streamless wires need no more). */
export async function postPlain(url, body, headers = {}) {
  const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const text = await r.text();
  return { status: r.status, json: parse(text, r.headers.get('content-type')), text };
}
