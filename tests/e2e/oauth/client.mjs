// The official MCP client (@modelcontextprotocol/client v2) signing in with
// OAuth against the provider of provider.mjs: an in-memory
// OAuthClientProvider whose "browser" is playUser (user.mjs), and the
// standard connect -> UnauthorizedError -> finishAuth -> reconnect dance.
import { randomBytes } from 'node:crypto';
import { Client, StreamableHTTPClientTransport, UnauthorizedError, auth } from '@modelcontextprotocol/client';
import { playUser, CookieJar } from './user.mjs';

/**
 * An OAuthClientProvider (the SDK's interface) that keeps everything in memory
 * and plays the user `sub` whenever the SDK redirects to the authorization
 * endpoint. The SDK registers it dynamically (RFC 7591) the first time,
 * because clientInformation() starts out undefined.
 *
 * @param {object} opts
 * @param {string} opts.redirectUrl loopback redirect, e.g. http://127.0.0.1:<any port>/callback
 *   (nothing listens there: the redirect is captured, never fetched)
 * @param {string} opts.sub the user to sign in as
 * @param {string} [opts.scope] scope for the registration (clientMetadata.scope). The SDK
 *   requests the WWW-Authenticate `scope`, else the resource metadata's scopes_supported,
 *   else this.
 * @param {object} [opts.clientMetadata] merged over the default RFC 7591 metadata
 * @param {string[]} [opts.grant] scopes the user leaves checked on consent (default all)
 * @param {boolean} [opts.deny] the user presses Deny
 * @param {CookieJar} [opts.cookieJar] the user's browser cookies (default: one jar for this provider,
 *   so a second authorization reuses the provider session and skips the login page)
 * @param {typeof playUser} [opts.play] the "browser": (authorizationUrl, {sub, cookieJar, grant, deny})
 *   => the redirect back to the client. Default playUser (oidc-provider's pages); another
 *   authorization server's pages need their own (e.g. builtin-oauth/user.mjs).
 */
export function makeAuthProvider({ redirectUrl, sub, scope, clientMetadata = {}, grant, deny = false, cookieJar = new CookieJar(), play = playUser }) {
  if (!redirectUrl || !sub) throw new Error('makeAuthProvider: redirectUrl and sub are required');
  let clientInfo;
  let tokens;
  let verifier;
  let discovery;
  let expectedState;
  /** @type {URLSearchParams|undefined} callback params not yet passed to finishAuth */
  let pending;

  const provider = {
    // --- the SDK's OAuthClientProvider interface ---
    get redirectUrl() { return redirectUrl; },
    get clientMetadata() {
      return {
        client_name: 'durable-mcp-e2e',
        redirect_uris: [redirectUrl],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none', // a public client: PKCE, no secret
        ...(scope ? { scope } : {}),
        ...clientMetadata,
      };
    },
    state() {
      expectedState = randomBytes(12).toString('base64url');
      return expectedState;
    },
    clientInformation() { return clientInfo; },
    saveClientInformation(info) { clientInfo = info; provider.registrations.push(info); },
    tokens() { return tokens; },
    saveTokens(t) { tokens = t; provider.tokenHistory.push({ ...t, savedAt: Date.now() }); },
    saveCodeVerifier(v) { verifier = v; },
    codeVerifier() {
      if (!verifier) throw new Error('no code verifier saved');
      return verifier;
    },
    // Without these the SDK warns and cannot bind the code to the issuer it was minted by.
    saveDiscoveryState(state) { discovery = state; },
    discoveryState() { return discovery; },
    async redirectToAuthorization(url) {
      provider.authorizationUrls.push(new URL(url));
      const callback = new URL(await play(url, { sub, cookieJar, grant, deny }));
      // The SDK leaves `state` to the host: check it here like a real client would.
      if (callback.searchParams.get('state') !== expectedState) {
        throw new Error(`state mismatch in ${callback.href}`);
      }
      provider.callbackUrls.push(callback);
      pending = callback.searchParams;
    },
    invalidateCredentials(what) {
      provider.invalidations.push(what);
      if (what === 'all' || what === 'client') clientInfo = undefined;
      if (what === 'all' || what === 'tokens') tokens = undefined;
      if (what === 'all' || what === 'verifier') verifier = undefined;
      if (what === 'all' || what === 'discovery') discovery = undefined;
    },

    // --- for tests ---
    sub,
    cookieJar,
    /** Every authorization URL the SDK sent the user to (URL objects). */
    authorizationUrls: [],
    /** Every redirect back (URL objects with code, state, iss or error). */
    callbackUrls: [],
    /** Every token set saved, oldest first, each with savedAt (ms). */
    tokenHistory: [],
    /** Every client registration saved. */
    registrations: [],
    /** Every invalidateCredentials(scope) call. */
    invalidations: [],
    /** The callback's params (code, state, iss) once, for transport.finishAuth(); then undefined. */
    takeCallbackParams() {
      const p = pending;
      pending = undefined;
      return p;
    },
    /** Replaces the stored tokens (e.g. to plant an expired or foreign access token). */
    setTokens(t) { tokens = t; },
    /**
     * Makes the stored access token unusable while keeping the refresh token, so the
     * next request gets a 401 and the SDK refreshes (what an expired token does,
     * without waiting). Returns the access token it replaced.
     */
    spoilAccessToken(replacement = 'expired.invalid.token') {
      const old = tokens?.access_token;
      if (!tokens) throw new Error('no tokens to spoil');
      tokens = { ...tokens, access_token: replacement };
      return old;
    },
    /**
     * Refreshes now with the SDK's own auth() (refresh_token grant, with `resource`
     * from the resource metadata). Resolves to the new tokens; throws if auth()
     * had to fall back to a new authorization instead.
     */
    async refresh(mcpUrl) {
      if (!tokens?.refresh_token) throw new Error('no refresh token');
      const before = tokens;
      const result = await auth(provider, { serverUrl: new URL(mcpUrl) });
      if (result !== 'AUTHORIZED' || tokens === before) throw new Error(`refresh did not happen (${result})`);
      return tokens;
    },
  };
  return provider;
}

const isUnauthorized = (e) => e instanceof UnauthorizedError || e?.name === 'UnauthorizedError'
  || e?.cause instanceof UnauthorizedError;

/**
 * Connects the official client to `mcpUrl` the way an OAuth-capable host does:
 * connect; on UnauthorizedError (the SDK discovered the resource and
 * authorization server, registered, and sent the user through
 * redirectToAuthorization, which played the user), hand the callback to
 * transport.finishAuth() (it exchanges the code, with PKCE and `resource`),
 * then connect again with a fresh client and transport. When the provider
 * already holds valid tokens the first connect just succeeds.
 *
 * @param {string|URL} mcpUrl
 * @param {ReturnType<typeof makeAuthProvider>} authProvider
 * @param {object} [opts]
 * @param {{name: string, version: string}} [opts.clientInfo]
 * @param {object} [opts.clientOptions] second argument of `new Client()` (capabilities, versionNegotiation, ...)
 * @param {object} [opts.transportOptions] merged into the StreamableHTTPClientTransport options
 * @param {(client: Client) => void} [opts.setup] called on each new Client before connect (request handlers)
 * @returns {Promise<{client: Client, transport: StreamableHTTPClientTransport, authorized: boolean}>}
 *   authorized: whether a user authorization happened during this call.
 */
export async function connectWithOAuth(mcpUrl, authProvider, opts = {}) {
  const url = new URL(mcpUrl);
  const make = () => {
    const client = new Client(opts.clientInfo ?? { name: 'durable-mcp-e2e', version: '0.0.1' }, opts.clientOptions ?? {});
    opts.setup?.(client);
    const transport = new StreamableHTTPClientTransport(url, { ...opts.transportOptions, authProvider });
    return { client, transport };
  };
  const first = make();
  try {
    await first.client.connect(first.transport);
    return { ...first, authorized: false };
  } catch (e) {
    if (!isUnauthorized(e)) throw e;
    const params = authProvider.takeCallbackParams();
    if (!params) throw e; // no redirect happened: a genuine auth failure
    if (!params.get('code')) throw new Error(`authorization failed: ${params}`, { cause: e });
    // The whole params, not just the code: the provider sends `iss` (RFC 9207) and
    // advertises it, so the SDK refuses a finishAuth without it.
    await first.transport.finishAuth(params);
    await first.client.close().catch(() => {});
  }
  const second = make();
  await second.client.connect(second.transport);
  return { ...second, authorized: true };
}

/** Decodes a JWT's payload without verifying it (for assertions on sub/aud/scope/exp). */
export function jwtPayload(jwt) {
  return JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url'));
}

/**
 * A recording fetch for a transport: every request's method, URL, status,
 * JSON body, Authorization and WWW-Authenticate, in order.
 */
export function recorder() {
  const wire = [];
  const fetchFn = async (input, init = {}) => {
    let body = null;
    try { body = typeof init.body === 'string' ? JSON.parse(init.body) : null; } catch { /* not JSON */ }
    const r = await fetch(input, init);
    const auth = new Headers(init.headers).get('authorization');
    wire.push({ method: init.method ?? 'GET', url: String(input), status: r.status, body, auth,
      challenge: r.headers.get('www-authenticate') });
    return r;
  };
  return { wire, fetchFn };
}
