// Plays the user on the built-in authorization server's page
// (examples/oauth/provider.js): GET /authorize, type a name, press Allow (or
// Deny), and stop at the redirect back to the client (code, state, iss; or
// error). Carries the page's consent cookie like a browser would.
import { CookieJar } from '../oauth/user.mjs';

const decode = (s) => s.replace(/&#(\d+);/g, (_, n) => String.fromCharCode(Number(n)))
  .replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');

function attrs(tag) {
  const out = {};
  for (const m of tag.matchAll(/([a-zA-Z_:][-a-zA-Z0-9_:.]*)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+)))?/g)) {
    out[m[1].toLowerCase()] = decode(m[2] ?? m[3] ?? m[4] ?? '');
  }
  return out;
}

/** The page's form: action, method, inputs ({name, type, value}) and buttons ({name, value}). */
export function parseLoginForm(html) {
  const m = /<form\b([^>]*)>([\s\S]*?)<\/form>/i.exec(html);
  if (!m) return undefined;
  const f = attrs(m[1]);
  return {
    action: f.action ?? '',
    method: (f.method ?? 'get').toUpperCase(),
    inputs: [...m[2].matchAll(/<input\b([^>]*)>/gi)].map((i) => {
      const a = attrs(i[1]);
      return { name: a.name, type: (a.type ?? 'text').toLowerCase(), value: a.value ?? '' };
    }),
    buttons: [...m[2].matchAll(/<button\b([^>]*)>/gi)].map((b) => attrs(b[1])),
  };
}

/**
 * Follows `authorizationUrl` as the user `sub` and returns where the server
 * finally sends the browser: the client's redirect_uri with `code`, `state`
 * and `iss` (or `error` when denied).
 *
 * @param {string|URL} authorizationUrl
 * @param {object} opts
 * @param {string} opts.sub the name typed into the page
 * @param {CookieJar} [opts.cookieJar]
 * @param {boolean} [opts.deny] press Deny instead of Allow
 * @param {(step: {kind: 'page'|'redirect', url: string, status: number, html?: string, headers?: Headers}) => void} [opts.onStep]
 * @returns {Promise<string>}
 */
export async function playBuiltinUser(authorizationUrl, { sub, cookieJar = new CookieJar(), deny = false, onStep } = {}) {
  if (!sub) throw new Error('playBuiltinUser: sub is required');
  const url = String(authorizationUrl);
  const origin = new URL(url).origin;
  const get = await fetch(url, { headers: withCookie(cookieJar, url), redirect: 'manual' });
  cookieJar.store(get, url);
  // The server may send the browser straight back (an error it may redirect).
  if (get.status >= 300 && get.status < 400) return leave(get, url, origin, onStep);
  const html = await get.text();
  if (get.status !== 200) throw new Error(`playBuiltinUser: ${get.status} at ${url}: ${html.slice(0, 500)}`);
  onStep?.({ kind: 'page', url, status: get.status, html, headers: get.headers });
  const form = parseLoginForm(html);
  if (!form) throw new Error(`playBuiltinUser: no form at ${url}: ${html.slice(0, 500)}`);
  const userField = form.inputs.find((i) => i.type === 'text' && i.name);
  if (!userField) throw new Error(`playBuiltinUser: no name field in ${html.slice(0, 500)}`);
  const choice = form.buttons.find((b) => b.value === (deny ? 'deny' : 'allow'));
  if (!choice?.name) throw new Error(`playBuiltinUser: no ${deny ? 'deny' : 'allow'} button in ${html.slice(0, 500)}`);
  const body = new URLSearchParams();
  for (const i of form.inputs) if (i.name && i !== userField) body.append(i.name, i.value);
  body.set(userField.name, sub);
  body.set(choice.name, choice.value);
  const action = new URL(form.action || url, url).href;
  const post = await fetch(action, {
    method: form.method,
    body,
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...withCookie(cookieJar, action) },
    redirect: 'manual',
  });
  cookieJar.store(post, action);
  if (post.status < 300 || post.status >= 400) {
    throw new Error(`playBuiltinUser: ${post.status} after the form at ${action}: ${(await post.text()).slice(0, 500)}`);
  }
  return leave(post, action, origin, onStep);
}

function withCookie(jar, url) {
  const cookie = jar.header(url);
  return cookie ? { cookie } : {};
}

async function leave(res, url, origin, onStep) {
  await res.arrayBuffer();
  const next = new URL(res.headers.get('location'), url);
  onStep?.({ kind: 'redirect', url: next.href, status: res.status, headers: res.headers });
  if (next.origin === origin) throw new Error(`playBuiltinUser: redirected within the server to ${next.href}`);
  return next.href;
}
