// Helpers for hand-built 2026-07-28 requests: the `_meta` envelope, the
// mirrored headers (MCP-Protocol-Version, Mcp-Method, Mcp-Name) and a raw
// POST that returns status, headers, the text and the parsed JSON.
import { request as httpRequest } from 'node:http';

export const MODERN = '2026-07-28';
export const META_PROTOCOL_VERSION = 'io.modelcontextprotocol/protocolVersion';
export const META_CLIENT_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';
export const META_CLIENT_INFO = 'io.modelcontextprotocol/clientInfo';
export const META_SERVER_INFO = 'io.modelcontextprotocol/serverInfo';

/** The `_meta` every modern request carries. */
export function modernMeta(capabilities = { elicitation: { form: {} }, sampling: {} }) {
  return {
    [META_PROTOCOL_VERSION]: MODERN,
    [META_CLIENT_CAPABILITIES]: capabilities,
    [META_CLIENT_INFO]: { name: 'durable-mcp-e2e', version: '0.0.1' },
  };
}

/**
 * `value` as an Mcp-Name header: plain when it is printable ASCII without
 * leading/trailing spaces, else the `=?base64?…?=` form.
 */
export function encodeHeaderValue(value) {
  const plain = /^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/.test(value);
  return plain ? value : `=?base64?${Buffer.from(value, 'utf8').toString('base64')}?=`;
}

/** `value` always in the `=?base64?…?=` form. */
export function base64HeaderValue(value) {
  return `=?base64?${Buffer.from(value, 'utf8').toString('base64')}?=`;
}

/**
 * A valid modern request: `{headers, body}` where body is the JSON-RPC
 * object (not yet serialized). `params._meta` is added unless `params`
 * already has a `_meta` key (set it to `undefined` to drop it).
 * @param {string} method
 * @param {object} [params]
 * @param {{id?: number|string, headers?: Record<string, string|undefined>}} [opts]
 *   opts.headers overrides the defaults; a value of `undefined` removes that header.
 */
export function modernRequest(method, params = {}, opts = {}) {
  const p = { ...params };
  if (!('_meta' in p)) p._meta = modernMeta();
  if (p._meta === undefined) delete p._meta;
  const headers = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': MODERN,
    'mcp-method': method,
  };
  const name = method === 'resources/read' ? p.uri : p.name;
  if (typeof name === 'string') headers['mcp-name'] = encodeHeaderValue(name);
  for (const [k, v] of Object.entries(opts.headers ?? {})) {
    if (v === undefined) delete headers[k.toLowerCase()];
    else headers[k.toLowerCase()] = v;
  }
  const body = { jsonrpc: '2.0', id: opts.id ?? 7, method, params: p };
  return { headers, body };
}

/** Parses a reply body: JSON, or the last `data:` message of an SSE stream. */
function parseBody(text, contentType) {
  if (!text) return null;
  if ((contentType ?? '').startsWith('text/event-stream')) {
    const msgs = text.split(/\r?\n\r?\n/)
      .map((ev) => ev.split(/\r?\n/).filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trimStart()).join('\n'))
      .filter(Boolean)
      .map((d) => JSON.parse(d));
    return msgs.at(-1) ?? null;
  }
  try { return JSON.parse(text); } catch { return undefined; }
}

/**
 * POSTs with fetch. `body` may be a string (sent as is) or an object (JSON).
 * @returns {Promise<{status: number, headers: Headers, text: string, json: any}>}
 */
export async function post(url, headers, body, method = 'POST') {
  const init = { method, headers };
  if (body !== undefined && method !== 'GET' && method !== 'HEAD') {
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
  }
  const r = await fetch(url, init);
  const text = await r.text();
  return { status: r.status, headers: r.headers, text, json: parseBody(text, r.headers.get('content-type')) };
}

/** Sends `modernRequest(method, params, opts)` with fetch. */
export async function send(url, method, params = {}, opts = {}) {
  const { headers, body } = modernRequest(method, params, opts);
  return post(url, headers, body);
}

/**
 * POSTs with node:http, which (unlike fetch) sends a caller-chosen Host
 * header. Headers are returned as a plain lower-cased object.
 */
export function rawHttp(url, headers, body, method = 'POST') {
  return new Promise((ok, fail) => {
    const req = httpRequest(url, { method, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { text += c; });
      res.on('end', () => ok({ status: res.statusCode, headers: res.headers, text, json: parseBody(text, res.headers['content-type']) }));
      res.on('error', fail);
    });
    req.on('error', fail);
    req.end(typeof body === 'string' ? body : JSON.stringify(body));
  });
}
