// What both browser entries share: a fetch that records every request the
// client makes (and what the page could read of each answer), a timeout
// for each step, and the report a run hands back to the test.

/** `e` as text: name, message, code and the chain of causes. */
export function describe(e) {
  const parts = [];
  for (let x = e, depth = 0; x && depth < 5; x = x.cause, depth++) {
    if (typeof x !== 'object') {
      parts.push(String(x));
      break;
    }
    parts.push(`${x.name ?? 'Error'}: ${x.message ?? ''}${x.code !== undefined ? ` (code ${x.code})` : ''}`);
  }
  return parts.join(' <- ');
}

/**
 * A fetch for the client's transport that records, for each request, its
 * method, JSON-RPC method, the header names it sent, and what the page can
 * read of the answer (its status and the exposed MCP headers) or the error
 * the browser gave instead.
 */
export function recorder() {
  const wire = [];
  const recordingFetch = async (input, init = {}) => {
    const req = input instanceof Request ? input : null;
    const url = new URL(req ? req.url : String(input));
    const headers = new Headers(init.headers ?? req?.headers);
    let rpc = null;
    try {
      const body = typeof init.body === 'string' ? JSON.parse(init.body) : null;
      rpc = Array.isArray(body) ? body.map((m) => m.method ?? 'response').join(',') : (body?.method ?? (body ? 'response' : null));
    } catch { /* not JSON */ }
    const entry = {
      method: init.method ?? req?.method ?? 'GET',
      path: url.pathname,
      rpc,
      sent: [...headers.keys()].sort(),
      lastEventId: headers.get('last-event-id'),
    };
    wire.push(entry);
    try {
      const r = await fetch(input, init);
      entry.status = r.status;
      entry.sessionId = r.headers.get('mcp-session-id');
      entry.protocolVersion = r.headers.get('mcp-protocol-version');
      return r;
    } catch (e) {
      entry.error = describe(e);
      throw e;
    }
  };
  return { wire, recordingFetch };
}

/** `promise`, or a rejection naming `what` after `ms`. */
export function within(ms, promise, what) {
  let timer;
  const timeout = new Promise((_, fail) => {
    timer = setTimeout(() => fail(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * A run's report and its steps: `step(name, fn)` runs `fn` within the
 * step timeout and records it; the first failure is kept in
 * `report.failed` and ends the run.
 */
export function reporter(wire, stepMs) {
  const report = { steps: [], failed: null, errors: [], elicited: [], wire };
  const step = async (name, fn) => {
    try {
      const value = await within(stepMs, fn(), name);
      report.steps.push(name);
      return value;
    } catch (e) {
      report.failed = { step: name, error: describe(e) };
      throw e;
    }
  };
  return { report, step };
}
