// Plays the user of an authorization request over plain HTTP: follows the
// provider's redirects by hand (carrying its cookies), fills the login form
// with a user id and submits the consent form, and stops at the first
// redirect that leaves the provider: the client's redirect_uri with `code`
// and `state` (or `error`).

/**
 * A minimal cookie jar: name+path keyed, path-matched, honours expiry. One
 * host only (the provider), which is all the flow touches.
 */
export class CookieJar {
  #cookies = new Map(); // `${name};${path}` -> { name, value, path, expires }

  /** Stores the Set-Cookie headers of `response` (a fetch Response) for request `url`. */
  store(response, url) {
    const defaultPath = new URL(url).pathname.replace(/\/[^/]*$/, '') || '/';
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';');
      const eq = pair.indexOf('=');
      if (eq <= 0) continue;
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      let path = defaultPath;
      let expires;
      for (const a of attrs) {
        const [k, ...v] = a.split('=');
        const key = k.trim().toLowerCase();
        const val = v.join('=').trim();
        if (key === 'path' && val.startsWith('/')) path = val;
        else if (key === 'max-age') expires = Date.now() + Number(val) * 1000;
        else if (key === 'expires' && expires === undefined) expires = Date.parse(val);
      }
      const id = `${name};${path}`;
      if (expires !== undefined && expires <= Date.now()) this.#cookies.delete(id);
      else this.#cookies.set(id, { name, value, path, expires });
    }
  }

  /** The Cookie header for `url`, or undefined. */
  header(url) {
    const path = new URL(url).pathname;
    const now = Date.now();
    const out = [];
    for (const [id, c] of this.#cookies) {
      if (c.expires !== undefined && c.expires <= now) { this.#cookies.delete(id); continue; }
      const matches = path === c.path || path.startsWith(c.path.endsWith('/') ? c.path : `${c.path}/`);
      if (matches) out.push(`${c.name}=${c.value}`);
    }
    return out.length ? out.join('; ') : undefined;
  }

  /** Names of the cookies held (for assertions). */
  names() {
    return [...new Set([...this.#cookies.values()].map((c) => c.name))];
  }
}

function attrs(tag) {
  const out = {};
  for (const m of tag.matchAll(/([a-zA-Z_:][-a-zA-Z0-9_:.]*)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+)))?/g)) {
    out[m[1].toLowerCase()] = decodeEntities(m[2] ?? m[3] ?? m[4] ?? '');
  }
  return out;
}

function decodeEntities(s) {
  return s.replace(/&#(\d+);/g, (_, n) => String.fromCharCode(Number(n)))
    .replace(/&quot;/g, '"').replace(/&#x27;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
}

/** The first <form> of `html`: { prompt, action, method, inputs: [{name, value, type, checked}], buttons }. */
function parseForm(html) {
  const m = /<form\b([^>]*)>([\s\S]*?)<\/form>/i.exec(html);
  if (!m) return undefined;
  const f = attrs(m[1]);
  const inputs = [...m[2].matchAll(/<input\b([^>]*)>/gi)].map((i) => {
    const a = attrs(i[1]);
    return { name: a.name, value: a.value ?? '', type: (a.type ?? 'text').toLowerCase(), checked: 'checked' in a };
  });
  const buttons = [...m[2].matchAll(/<button\b([^>]*)>/gi)].map((b) => attrs(b[1]));
  return { prompt: f['data-prompt'], action: f.action, method: (f.method ?? 'get').toUpperCase(), inputs, buttons };
}

/**
 * Follows `authorizationUrl` as the user `sub` would in a browser and returns
 * the URL the provider finally redirects to (the client's redirect_uri with
 * `code`, `state` and `iss`, or `error` when denied).
 *
 * @param {string|URL} authorizationUrl the URL the client built (/auth?...)
 * @param {object} opts
 * @param {string} opts.sub the user id to sign in as (becomes the token's `sub`)
 * @param {CookieJar} [opts.cookieJar] reuse to keep a provider session across calls
 *   (then a second authorization skips the login page); default: a fresh jar
 * @param {string[]} [opts.grant] scopes to leave checked on the consent page
 *   (default: all requested)
 * @param {boolean} [opts.deny] press "Deny" on the consent page
 * @param {(event: {kind: string, url: string}) => void} [opts.onStep] sees each page/redirect
 * @returns {Promise<string>}
 */
export async function playUser(authorizationUrl, { sub, cookieJar = new CookieJar(), grant, deny = false, onStep } = {}) {
  if (!sub) throw new Error('playUser: sub is required');
  const origin = new URL(authorizationUrl).origin;
  let url = String(authorizationUrl);
  let init = { method: 'GET' };
  for (let step = 0; step < 25; step++) {
    const headers = { ...(init.headers ?? {}) };
    const cookie = cookieJar.header(url);
    if (cookie) headers.cookie = cookie;
    const res = await fetch(url, { ...init, headers, redirect: 'manual' });
    cookieJar.store(res, url);
    if (res.status >= 300 && res.status < 400) {
      await res.arrayBuffer();
      const next = new URL(res.headers.get('location'), url);
      onStep?.({ kind: 'redirect', url: next.href });
      // Leaving the provider: this is the redirect back to the client.
      if (next.origin !== origin) return next.href;
      url = next.href;
      init = { method: 'GET' };
      continue;
    }
    const text = await res.text();
    if (res.status !== 200) throw new Error(`playUser: ${res.status} at ${url}: ${text.slice(0, 500)}`);
    const form = parseForm(text);
    if (!form?.prompt) throw new Error(`playUser: no login/consent form at ${url}: ${text.slice(0, 500)}`);
    onStep?.({ kind: form.prompt, url });
    const body = new URLSearchParams();
    if (form.prompt === 'login') {
      for (const i of form.inputs) {
        if (!i.name) continue;
        body.set(i.name, i.name === 'sub' ? sub : i.value);
      }
    } else if (form.prompt === 'consent') {
      const keep = grant ? new Set(grant) : undefined;
      for (const i of form.inputs) {
        if (!i.name) continue;
        if (i.type === 'checkbox') {
          if (keep ? keep.has(i.value) : i.checked) body.append(i.name, i.value);
        } else body.append(i.name, i.value);
      }
      body.set('decision', deny ? 'deny' : 'allow');
    } else {
      throw new Error(`playUser: unknown form ${form.prompt} at ${url}`);
    }
    url = new URL(form.action, url).href;
    init = { method: form.method, body, headers: { 'content-type': 'application/x-www-form-urlencoded' } };
  }
  throw new Error('playUser: too many steps');
}
