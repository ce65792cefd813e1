// Raw Server-Sent Events for the session tests: a parser that keeps every
// event (priming events with empty data included, keepalive comments
// dropped) and a reader that takes events one at a time from a fetch
// response, so a test can stop mid-stream or wait for a pushed event.

/**
 * @typedef {{id?: string, event?: string, retry?: number, data: string, message?: any}} SseEvent
 * `message` is the parsed JSON of `data` (undefined when data is empty).
 */

/** Builds an event from its fields; null when it had none (a lone comment). */
function finish(fields) {
  if (fields.id === undefined && fields.event === undefined && fields.retry === undefined && fields.data === undefined) {
    return null;
  }
  const data = fields.data ?? '';
  /** @type {SseEvent} */
  const ev = { data };
  if (fields.id !== undefined) ev.id = fields.id;
  if (fields.event !== undefined) ev.event = fields.event;
  if (fields.retry !== undefined) ev.retry = fields.retry;
  if (data !== '') ev.message = JSON.parse(data);
  return ev;
}

/** Applies one line (without its terminator) to the fields being collected. */
function applyLine(fields, line) {
  if (line.startsWith(':')) return; // a comment (": keepalive")
  const colon = line.indexOf(':');
  const name = colon === -1 ? line : line.slice(0, colon);
  let value = colon === -1 ? '' : line.slice(colon + 1);
  if (value.startsWith(' ')) value = value.slice(1);
  if (name === 'data') fields.data = fields.data === undefined ? value : `${fields.data}\n${value}`;
  else if (name === 'id') fields.id = value;
  else if (name === 'event') fields.event = value;
  else if (name === 'retry' && /^\d+$/.test(value)) fields.retry = Number(value);
}

/** Parses a complete SSE body. */
export function parseSse(text) {
  const events = [];
  let fields = {};
  for (const line of text.split(/\r\n|\r|\n/)) {
    if (line === '') {
      const ev = finish(fields);
      if (ev) events.push(ev);
      fields = {};
    } else {
      applyLine(fields, line);
    }
  }
  const last = finish(fields);
  if (last) events.push(last);
  return events;
}

/** Resolves to TIMEOUT when `ms` pass first. */
export const TIMEOUT = Symbol('timeout');

/**
 * Reads events from a streamed response body as they arrive.
 * `next()` resolves to the next event, or null when the server closed the
 * stream; with `timeoutMs` it resolves to TIMEOUT if nothing arrives in time
 * (the read stays pending and a later next() picks it up).
 */
export class SseReader {
  /** @param {Response} response @param {AbortController} [controller] aborts the fetch on close() */
  constructor(response, controller) {
    this.response = response;
    this.controller = controller;
    this.reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    this.buffer = '';
    this.fields = {};
    this.queue = [];
    this.ended = false;
    this.pending = null;
    /** Every event read so far, in order. */
    this.seen = [];
  }

  /** Pulls chunks until an event or the end is available. */
  async #fill() {
    while (this.queue.length === 0 && !this.ended) {
      const { value, done } = await this.reader.read();
      if (done) {
        this.ended = true;
        // A last event without its blank line still counts.
        if (this.buffer !== '') applyLine(this.fields, this.buffer.replace(/\r$/, ''));
        const ev = finish(this.fields);
        if (ev) this.queue.push(ev);
        this.buffer = '';
        this.fields = {};
        break;
      }
      this.buffer += value;
      // Complete lines only; a trailing "\r" may be half of "\r\n".
      let m;
      while ((m = /\r\n|\n|\r(?=[^\n])/.exec(this.buffer))) {
        const line = this.buffer.slice(0, m.index);
        this.buffer = this.buffer.slice(m.index + m[0].length);
        if (line === '') {
          const ev = finish(this.fields);
          if (ev) this.queue.push(ev);
          this.fields = {};
        } else {
          applyLine(this.fields, line);
        }
      }
    }
  }

  /** @param {{timeoutMs?: number}} [opts] @returns {Promise<SseEvent|null|typeof TIMEOUT>} */
  async next(opts = {}) {
    this.pending ??= this.#fill().finally(() => { this.pending = null; });
    const filled = this.pending;
    if (opts.timeoutMs !== undefined) {
      let timer;
      const raced = await Promise.race([
        filled.then(() => 'filled'),
        new Promise((ok) => { timer = setTimeout(() => ok(TIMEOUT), opts.timeoutMs); }),
      ]);
      clearTimeout(timer);
      if (raced === TIMEOUT) return TIMEOUT;
    } else {
      await filled;
    }
    const ev = this.queue.shift() ?? null;
    if (ev) this.seen.push(ev);
    return ev;
  }

  /** Reads until the server closes the stream; returns the events read by this call. */
  async rest() {
    const out = [];
    for (let ev = await this.next(); ev !== null; ev = await this.next()) out.push(ev);
    return out;
  }

  /** Drops the connection from the client side. */
  async close() {
    this.ended = true;
    this.controller?.abort();
    await this.reader.cancel().catch(() => {});
  }
}
