// A real OpenID provider (oidc-provider, a certified implementation) for the
// OAuth end-to-end tests: loopback http, dynamic client registration, PKCE
// S256, RFC 8707 resource indicators and RFC 9068 JWT access tokens signed
// with keys it generates at start and publishes at its jwks_uri. The login
// and consent pages are plain HTML forms so a test can play the user over
// HTTP (see user.mjs); nothing here needs a browser.
import { createServer } from 'node:http';
import { generateKeyPairSync, randomBytes, createPrivateKey, sign as cryptoSign } from 'node:crypto';
import Provider, { errors } from 'oidc-provider';

const ALGS = {
  RS256: { kty: 'RSA', hash: 'sha256' },
  ES256: { kty: 'EC', hash: 'sha256' },
};

/** A fresh private signing JWK (with kid, alg, use) for `alg` (RS256 or ES256). */
export function generateSigningJwk(alg = 'RS256') {
  const { privateKey } = alg === 'ES256'
    ? generateKeyPairSync('ec', { namedCurve: 'P-256' })
    : generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = privateKey.export({ format: 'jwk' });
  return { ...jwk, kid: `${alg.toLowerCase()}-${randomBytes(6).toString('hex')}`, alg, use: 'sig' };
}

/** The public half of a private JWK (what a JWKS publishes). */
export function publicJwk(jwk) {
  const { d, p, q, dp, dq, qi, oth, ...pub } = jwk;
  return pub;
}

const b64url = (v) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');

/**
 * Signs `payload` as a compact JWS with a private JWK (RS256 or ES256), with
 * header `{ alg, kid, typ }`. For tests that need a token the provider would
 * never issue (wrong aud, expired, foreign issuer).
 */
export function signJwt(payload, jwk, { typ = 'at+jwt', header = {} } = {}) {
  const alg = jwk.alg ?? (jwk.kty === 'EC' ? 'ES256' : 'RS256');
  if (!ALGS[alg]) throw new Error(`signJwt: unsupported alg ${alg}`);
  const input = `${b64url({ alg, kid: jwk.kid, typ, ...header })}.${b64url(payload)}`;
  const key = createPrivateKey({ key: jwk, format: 'jwk' });
  // JWS ES256 signatures are raw r||s, not DER.
  const sig = cryptoSign(ALGS[alg].hash, Buffer.from(input), alg === 'ES256' ? { key, dsaEncoding: 'ieee-p1363' } : key);
  return `${input}.${sig.toString('base64url')}`;
}

const esc = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(title, body) {
  return `<!doctype html><html><head><meta charset="utf-8"><title>${esc(title)}</title></head><body>${body}</body></html>`;
}

async function readForm(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

/**
 * A storage for oidc-provider models that belongs to one startProvider call,
 * so two providers in one process never share clients or grants, and a
 * rebuilt provider (rotateKeys) keeps them. Mirrors oidc-provider's own
 * memory adapter, without its 1000-entry LRU.
 */
function makeAdapterFactory({ dropClientScope }) {
  const store = new Map(); // key -> { payload, expiresAt }
  const get = (key) => {
    const e = store.get(key);
    if (!e) return undefined;
    if (e.expiresAt !== undefined && e.expiresAt <= Date.now()) { store.delete(key); return undefined; }
    return e.payload;
  };
  const set = (key, payload, expiresIn) => store.set(key, {
    payload, expiresAt: typeof expiresIn === 'number' ? Date.now() + expiresIn * 1000 : undefined,
  });
  return (model) => ({
    async upsert(id, payload, expiresIn) {
      if (model === 'Client' && dropClientScope && 'scope' in payload) {
        // A registered `scope` is an allow-list oidc-provider enforces on later
        // authorization requests. MCP clients register with the scope of their first
        // challenge, so a step-up to more scopes would fail at the provider
        // (invalid_scope) rather than at the server under test: forget it.
        payload = { ...payload };
        delete payload.scope;
      }
      set(`${model}:${id}`, payload, expiresIn);
      if (model === 'Session') set(`sessionUid:${payload.uid}`, id, expiresIn);
      if (payload.userCode) set(`userCode:${payload.userCode}`, id, expiresIn);
      if (payload.grantId) {
        const members = get(`grant:${payload.grantId}`) ?? new Set();
        members.add(`${model}:${id}`);
        set(`grant:${payload.grantId}`, members);
      }
    },
    async find(id) { return get(`${model}:${id}`); },
    async findByUid(uid) { const id = get(`sessionUid:${uid}`); return id && get(`${model}:${id}`); },
    async findByUserCode(code) { const id = get(`userCode:${code}`); return id && get(`${model}:${id}`); },
    async consume(id) { const p = get(`${model}:${id}`); if (p) p.consumed = Math.floor(Date.now() / 1000); },
    async destroy(id) { store.delete(`${model}:${id}`); },
    async revokeByGrantId(grantId) {
      for (const key of get(`grant:${grantId}`) ?? []) store.delete(key);
      store.delete(`grant:${grantId}`);
    },
  });
}

/**
 * Starts an OpenID provider on 127.0.0.1 at a free port.
 *
 * @param {object} [opts]
 * @param {string[]} [opts.scopes] resource scopes the provider knows (default ['mcp:read']);
 *   they are advertised in scopes_supported and are what a resource's access token can carry.
 * @param {'RS256'|'ES256'} [opts.alg] JWS alg of access tokens (default RS256). Both an
 *   RS256 and an ES256 key are always in the JWKS.
 * @param {number} [opts.accessTokenTtlSeconds] access-token lifetime (default 3600);
 *   changeable later with setAccessTokenTtl().
 * @param {string[]} [opts.resources] if given, the only resource indicators accepted
 *   (others get invalid_target); default: any.
 * @param {string} [opts.defaultResource] resource used when a client names none.
 * @param {boolean} [opts.enforceClientScope] keep a client's registered `scope` as the
 *   allow-list of what it may request later (default false: any supported scope, so
 *   step-up authorization works after a registration with fewer scopes).
 * @param {object} [opts.ttl] merged into oidc-provider's `ttl` config (e.g. { RefreshToken: 60 }).
 * @param {object} [opts.config] merged (shallowly) over the oidc-provider configuration.
 * @returns {Promise<{issuer: string, port: number, jwksUrl: string, discoveryUrl: string,
 *   tokenEndpoint: string, registrationEndpoint: string, authorizationEndpoint: string,
 *   scopes: string[], jwks(): {keys: object[]}, signingKeys(): object[],
 *   setAccessTokenTtl(seconds: number): void, signJwt(payload: object, o?: {alg?: string}): string,
 *   rotateKeys(o?: {dropOld?: boolean}): {keys: object[]}, provider: Provider, stop(): Promise<void>}>}
 */
export async function startProvider(opts = {}) {
  const scopes = opts.scopes ?? ['mcp:read'];
  const alg = opts.alg ?? 'RS256';
  let accessTokenTtl = opts.accessTokenTtlSeconds ?? 3600;
  const allowedResources = opts.resources ? new Set(opts.resources) : undefined;
  const adapter = makeAdapterFactory({ dropClientScope: !opts.enforceClientScope });
  // Signed cookies; the same keys across rotateKeys so a user session survives it.
  const cookieKeys = [randomBytes(32).toString('hex')];
  // Newest first: oidc-provider signs with the first key in the JWKS matching the alg.
  let keys = [generateSigningJwk('RS256'), generateSigningJwk('ES256')];

  let provider;
  let handler; // provider.callback(), rebuilt with the provider
  /** Requests served, by path (how often the JWKS was fetched, say). */
  const hits = new Map();
  const server = createServer((req, res) => {
    const path = new URL(req.url, 'http://x').pathname;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    if (path.startsWith('/interaction/')) {
      interaction(req, res, path).catch((err) => {
        if (!res.headersSent) {
          res.statusCode = err instanceof errors.SessionNotFound ? 400 : 500;
          res.setHeader('content-type', 'text/plain');
        }
        res.end(`interaction error: ${err.message}`);
      });
      return;
    }
    handler(req, res);
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address();
  // No trailing slash: MCP clients compare this string with the
  // authorization_servers entry of the resource's metadata.
  const issuer = `http://127.0.0.1:${port}`;

  function configuration() {
    return {
      adapter,
      jwks: { keys },
      cookies: { keys: cookieKeys },
      // openid so the provider is a normal OP; the resource scopes are listed too so
      // discovery's scopes_supported names them. offline_access is left out on
      // purpose: refresh tokens come from issueRefreshToken below, and an advertised
      // offline_access makes MCP clients add it and prompt=consent to every request.
      scopes: ['openid', ...scopes],
      claims: { openid: ['sub'] },
      findAccount: async (_ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
      features: {
        devInteractions: { enabled: false }, // our own login/consent pages below
        registration: { enabled: true }, // RFC 7591, open (no initial access token)
        revocation: { enabled: true },
        introspection: { enabled: true },
        resourceIndicators: {
          enabled: true,
          // A client naming one resource gets it; none named -> opts.defaultResource.
          defaultResource: async (_ctx, _client, oneOf) => oneOf ?? opts.defaultResource,
          // A token request without `resource` gets the resource of the grant,
          // so the access token is always the RFC 9068 JWT for that resource.
          useGrantedResource: async () => true,
          getResourceServerInfo: async (_ctx, resourceIndicator) => {
            if (allowedResources && !allowedResources.has(resourceIndicator)) throw new errors.InvalidTarget();
            return {
              scope: scopes.join(' '),
              audience: resourceIndicator, // aud is exactly the indicator the client sent
              accessTokenFormat: 'jwt',
              accessTokenTTL: accessTokenTtl,
              jwt: { sign: { alg } },
            };
          },
        },
      },
      pkce: { required: () => true }, // S256 is the only method oidc-provider supports
      // Refresh tokens whenever the client registered the refresh_token grant
      // (the default wants the offline_access scope), rotated on every use.
      issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
      rotateRefreshToken: () => true,
      expiresWithSession: async () => false,
      clientBasedCORS: () => true,
      interactions: { url: async (_ctx, i) => `/interaction/${i.uid}` },
      ttl: {
        AccessToken: (_ctx, token) => token.resourceServer?.accessTokenTTL ?? accessTokenTtl,
        IdToken: 3600,
        Interaction: 600,
        Session: 3600,
        Grant: 3600,
        RefreshToken: 24 * 3600,
        ...opts.ttl,
      },
      renderError: async (ctx, out) => {
        ctx.type = 'html';
        ctx.body = page('error', `<h1>oauth error</h1><pre id="error">${esc(JSON.stringify(out))}</pre>`);
      },
      ...opts.config,
    };
  }

  // Rebuilt providers (rotateKeys) share the adapter, so clients registered
  // earlier, grants and refresh tokens still resolve.
  function build() {
    provider = new Provider(issuer, configuration());
    handler = provider.callback();
  }
  build();

  async function interaction(req, res, path) {
    const details = await provider.interactionDetails(req, res);
    const { uid, prompt, params, session } = details;
    const [, , pathUid, action] = path.split('/');
    if (pathUid !== uid) throw new Error('interaction uid mismatch');
    const html = (body) => {
      res.statusCode = 200;
      res.setHeader('content-type', 'text/html; charset=utf-8');
      res.setHeader('cache-control', 'no-store');
      res.end(page(prompt.name, body));
    };

    if (req.method === 'GET' && action === undefined) {
      if (prompt.name === 'login') {
        return html(`<h1>Sign in to ${esc(params.client_id)}</h1>
<form data-prompt="login" method="post" action="/interaction/${esc(uid)}/login">
<input type="text" name="sub" value="">
<button type="submit">Sign in</button>
</form>`);
      }
      if (prompt.name === 'consent') {
        const requested = [...new Set(String(params.scope ?? '').split(' ').filter(Boolean))];
        const boxes = requested.map((s) => `<label><input type="checkbox" name="scope" value="${esc(s)}" checked> ${esc(s)}</label>`).join('\n');
        return html(`<h1>${esc(params.client_id)} asks for access</h1>
<p>resource: <span id="resource">${esc([].concat(params.resource ?? []).join(' '))}</span></p>
<form data-prompt="consent" method="post" action="/interaction/${esc(uid)}/confirm">
${boxes}
<button type="submit" name="decision" value="allow">Allow</button>
<button type="submit" name="decision" value="deny">Deny</button>
</form>`);
      }
      throw new Error(`unknown prompt ${prompt.name}`);
    }

    if (req.method === 'POST' && action === 'login' && prompt.name === 'login') {
      const form = await readForm(req);
      const sub = form.get('sub');
      if (!sub) {
        res.statusCode = 400;
        return res.end('sub required');
      }
      return provider.interactionFinished(req, res, { login: { accountId: sub } }, { mergeWithLastSubmission: false });
    }

    if (req.method === 'POST' && action === 'confirm' && prompt.name === 'consent') {
      const form = await readForm(req);
      if (form.get('decision') === 'deny') {
        return provider.interactionFinished(req, res, { error: 'access_denied', error_description: 'the user denied access' }, { mergeWithLastSubmission: false });
      }
      const checked = new Set(form.getAll('scope'));
      const grant = details.grantId
        ? await provider.Grant.find(details.grantId)
        : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
      const d = prompt.details;
      // Scopes the user unchecked are recorded as rejected, not just left out:
      // the consent check counts rejected scopes as "encountered" and so does not ask again.
      for (const s of d.missingOIDCScope ?? []) {
        if (checked.has(s)) grant.addOIDCScope(s); else grant.rejectOIDCScope(s);
      }
      if (d.missingOIDCClaims) grant.addOIDCClaims(d.missingOIDCClaims);
      for (const [indicator, list] of Object.entries(d.missingResourceScopes ?? {})) {
        const yes = list.filter((s) => checked.has(s));
        const no = list.filter((s) => !checked.has(s));
        if (yes.length) grant.addResourceScope(indicator, yes.join(' '));
        if (no.length) grant.rejectResourceScope(indicator, no.join(' '));
      }
      const grantId = await grant.save();
      const consent = details.grantId ? {} : { grantId };
      return provider.interactionFinished(req, res, { consent }, { mergeWithLastSubmission: true });
    }

    res.statusCode = 405;
    res.end('unexpected interaction request');
  }

  const publicJwks = () => ({ keys: keys.map(publicJwk) });

  return {
    issuer,
    port,
    jwksUrl: `${issuer}/jwks`,
    discoveryUrl: `${issuer}/.well-known/openid-configuration`,
    authorizationEndpoint: `${issuer}/auth`,
    tokenEndpoint: `${issuer}/token`,
    registrationEndpoint: `${issuer}/reg`,
    scopes,
    get provider() { return provider; },
    /** How many requests `path` got (e.g. '/jwks'). */
    hits(path) { return hits.get(path) ?? 0; },
    /** The JWKS it publishes (public keys). */
    jwks: publicJwks,
    /** The private JWKs, newest first (the first of each alg signs). */
    signingKeys: () => keys.map((k) => ({ ...k })),
    /** Lifetime of access tokens issued from now on. */
    setAccessTokenTtl(seconds) { accessTokenTtl = seconds; },
    /** A JWT signed with the provider's current key for `alg` (default opts.alg). */
    signJwt(payload, { alg: a = alg, ...o } = {}) {
      const jwk = keys.find((k) => k.alg === a);
      if (!jwk) throw new Error(`no ${a} key`);
      return signJwt(payload, jwk, o);
    },
    /**
     * New RS256 and ES256 keys that sign from now on. The old keys stay in the
     * JWKS (tokens signed before still verify) unless dropOld. Registered
     * clients, grants and refresh tokens survive; returns the new public JWKS.
     */
    rotateKeys({ dropOld = false } = {}) {
      const fresh = [generateSigningJwk('RS256'), generateSigningJwk('ES256')];
      keys = dropOld ? fresh : [...fresh, ...keys];
      build();
      return publicJwks();
    },
    async stop() {
      server.closeAllConnections?.();
      await new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
