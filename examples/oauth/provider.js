// A durable-mcp Worker behind its own authorization server: Cloudflare's
// @cloudflare/workers-oauth-provider (1.x) in front of the Rust Worker.
//
// The provider serves the OAuth side: the protected resource and
// authorization server metadata, dynamic client registration (/register),
// the token endpoint (/token, with refresh tokens) and the 401 challenges.
// It checks every bearer token on /mcp, then calls the Rust Worker with the
// grant's props as `ctx.props`; the Rust Worker, with the var
// OAUTH_WRAPPER = "workers-oauth-provider", takes them as the caller.
// /authorize is ours: the tiny sign-in and consent page below.
//
// index.js wires it to your Worker's build output; nothing here names it.
import { AuthorizationError, CimdFetchError, OAuthProvider, getOAuthApi } from '@cloudflare/workers-oauth-provider';

/** Everything this server can grant; also the scopes any access needs. */
const SCOPES = ['mcp:read'];

/**
 * The Worker's default export: `RustWorker` (the default export of your
 * crate's worker-build shim, a WorkerEntrypoint class) behind the provider.
 *
 * Vars it reads:
 * - MCP_RESOURCE: the canonical URL clients connect to, e.g.
 *   https://mcp.example.com/mcp. Every token is bound to it. Unset, it is
 *   this request's origin + /mcp (fine for wrangler dev on loopback).
 * - ACCESS_TOKEN_TTL_SECONDS: access token lifetime (default one hour; the
 *   library's minimum is 60). Refresh tokens live 30 days.
 */
export function withBuiltinOAuth(RustWorker, { apiRoute = '/mcp' } = {}) {
  const providers = new Map(); // one per resource and lifetime (config only)

  function providerFor(request, env) {
    const resource = env.MCP_RESOURCE || `${new URL(request.url).origin}${apiRoute}`;
    const ttl = env.ACCESS_TOKEN_TTL_SECONDS ? Number(env.ACCESS_TOKEN_TTL_SECONDS) : undefined;
    const key = `${resource} ${ttl}`;
    let provider = providers.get(key);
    if (!provider) {
      const options = {
        apiRoute,
        apiHandler: RustWorker,
        // Our own page, given the provider's helpers through getOAuthApi()
        // (the provider also sets env.OAUTH_PROVIDER, unless a var of that
        // name exists: the explicit call works either way).
        defaultHandler: { fetch: (req, env) => authorize(req, getOAuthApi(options, env)) },
        authorizeEndpoint: '/authorize',
        tokenEndpoint: '/token',
        clientRegistrationEndpoint: '/register',
        scopesSupported: SCOPES,
        requiredScopes: SCOPES,
        resourceMetadata: { resource, resource_name: env.SERVER_NAME || 'durable-mcp' },
        accessTokenTTL: ttl,
        // Clients may also name themselves by a Client ID Metadata Document
        // URL; needs the global_fetch_strictly_public compatibility flag
        // (without it the provider does not advertise it).
        clientIdMetadataDocumentEnabled: true,
      };
      if (ttl === undefined) delete options.accessTokenTTL;
      provider = new OAuthProvider(options);
      if (providers.size >= 8) providers.clear();
      providers.set(key, provider);
    }
    return provider;
  }

  return {
    fetch(request, env, ctx) {
      return providerFor(request, env).fetch(request, env, ctx);
    },
  };
}

const escape = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const html = (body, headers = new Headers()) => {
  headers.set('content-type', 'text/html; charset=utf-8');
  return new Response(body, { headers });
};
const text = (status, body) => new Response(body, { status, headers: { 'content-type': 'text/plain; charset=utf-8' } });

/**
 * GET /authorize: who are you, and may this app act for you?
 * POST /authorize: Allow (or Deny), then back to the app with a code.
 *
 * A real deployment puts its own sign-in here (a session cookie, or a
 * redirect to GitHub/Google/your IdP, see the library's upstream-sign-in
 * doc). This one believes whatever name is typed: a demo, never a deployment.
 */
async function authorize(request, oauth) {
  const url = new URL(request.url);
  if (url.pathname !== '/authorize') return text(404, 'Not found');
  try {
    if (request.method === 'GET') {
      // Validates the client, its exact redirect URI, PKCE and the resource.
      const authRequest = await oauth.parseAuthRequest(request);
      const about = await oauth.describeConsent(authRequest);
      // The request is kept server-side; the form carries only a one-time
      // handle, bound to this browser by a cookie (in consent.headers).
      const consent = await oauth.beginConsent(authRequest);
      return html(`<!doctype html>
<meta charset="utf-8">
<title>Sign in</title>
<h1>Sign in to allow ${escape(about.clientName)}</h1>
<p>${about.clientDomain ? `Published by <strong>${escape(about.clientDomain)}</strong>.` : 'This app registered itself; its name is not verified.'}
Access (${about.scope.map(escape).join(', ') || 'no scopes'}) will be sent to <strong>${escape(about.redirectHost)}</strong>.</p>
${about.redirectIsLoopback ? '<p><strong>That is an app on your computer.</strong> Continue only if you just started signing in from it.</p>' : ''}
<form method="post" action="/authorize">
  <input type="hidden" name="handle" value="${escape(consent.handle)}">
  <p><label>Your name <input name="user" required autocomplete="username"></label></p>
  <p><button name="decision" value="allow">Allow</button> <button name="decision" value="deny">Deny</button></p>
</form>`, consent.headers);
    }
    if (request.method === 'POST') {
      const form = await request.formData();
      const handle = String(form.get('handle') ?? '');
      if (form.get('decision') !== 'allow') {
        const denied = await oauth.denyConsent(request, handle); // access_denied back to the app
        return new Response(null, { status: 302, headers: denied.headers });
      }
      const name = String(form.get('user') ?? '').trim();
      if (!name || name.length > 200) return text(400, 'Type your name, then Allow.');
      // The stored request (not anything from the form); the handle works once.
      const approved = await oauth.approveConsent(request, handle);
      const { clientId } = approved.request;
      // Grant what was asked of what we offer; nothing asked: the baseline.
      const asked = approved.request.scope.filter((s) => SCOPES.includes(s));
      const scopes = asked.length ? asked : SCOPES;
      const { redirectTo } = await oauth.completeAuthorization({
        request: approved.request,
        userId: encodeURIComponent(name), // the library's user ids may not contain ':'
        metadata: {},
        scope: scopes,
        // What the Rust Worker gets as ctx.props on every /mcp request with
        // this grant's tokens: the caller (sub required).
        props: { sub: name, client_id: clientId, scopes },
      });
      approved.headers.set('location', redirectTo);
      return new Response(null, { status: 302, headers: approved.headers });
    }
    return new Response(null, { status: 405, headers: { allow: 'GET, POST' } });
  } catch (e) {
    // Redirect to the app only when the library validated where to.
    if (e instanceof AuthorizationError && e.redirectTo) return Response.redirect(e.redirectTo, 302);
    if (e instanceof AuthorizationError) return text(400, e.description);
    if (e instanceof CimdFetchError) return text(400, 'This app could not be verified.');
    throw e;
  }
}
