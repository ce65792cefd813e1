//! Who is calling, decided before a request is routed: adapts the host's
//! credentials to [`crate::auth`]. With OAuth on, the bearer token is
//! checked here once (its signature by the host's [`KeyVerifier`]); with
//! a wrapping authorization server, its `ctx.props` are the caller. The
//! verified [`Caller`] is handed back as a value ([`Signed`]): the inbound
//! pipeline carries it to the server, and writes it in an internal header
//! only for a request it forwards to an object.

use std::cell::RefCell;

use crate::auth::{
    self, Caller, KeyVerifier, OAuthConfig, SeenTokens, CALLER_HEADER, QUERY_TOKEN_HEADER,
};
use crate::effects::Reply;
use crate::error::McpError;
use crate::http::HttpRequest;
use crate::server::{error_response, Server};

/// A caller the host verified: the value, and (when a token seen lately
/// already had it) the internal header that carries it.
#[derive(Debug, Clone)]
pub(super) struct Signed {
    pub(super) caller: Caller,
    header: Option<String>,
}

impl Signed {
    /// The internal header an object reads the caller from.
    pub(super) fn header(&self) -> String {
        match &self.header {
            Some(h) => h.clone(),
            None => serde_json::to_string(&self.caller).unwrap_or_default(),
        }
    }
}

/// What [`authenticate_now`] decided.
#[derive(Debug)]
pub(super) enum Authenticated {
    /// The request may go on: its verified caller, when this path signs in.
    Yes(Option<Signed>),
    /// Answer with this.
    No(Reply),
    /// A signature has to be checked first: call [`authenticate`].
    Later,
}

/// Checks `req`'s credentials (OAuth mode) as far as that needs no wait —
/// which is all of it for a token whose signature verified lately
/// (`seen`) — and, when they hold, says who the caller is. Without OAuth it
/// does nothing: `API_TOKENS` are checked by the server, synchronously,
/// where they were. A static `API_TOKENS` entry is accepted beside OAuth
/// (checked first).
pub(super) fn authenticate_now(
    server: &Server,
    req: &mut HttpRequest,
    now_ms: u64,
    seen: &SeenTokens,
) -> Authenticated {
    match credentials(server, req, now_ms) {
        Pending::Done(r) => settle(server, req, r),
        Pending::Token(c) => match auth::check(c.credentials(), seen) {
            auth::Checked::Done(r) => settle(server, req, r),
            auth::Checked::Known(caller, header) => admit(server, req, caller, Some(header)),
            auth::Checked::Verify(_) => Authenticated::Later,
        },
    }
}

/// [`authenticate_now`], waiting for the signature check when one is
/// needed (its key fetched, WebCrypto); the verified token is remembered
/// in `seen`. Ends in `Yes` or `No`.
pub(super) async fn authenticate(
    server: &Server,
    req: &mut HttpRequest,
    now_ms: u64,
    verifier: &dyn KeyVerifier,
    seen: &RefCell<SeenTokens>,
) -> Authenticated {
    let result = match credentials(server, req, now_ms) {
        Pending::Done(r) => r,
        Pending::Token(c) => auth::authenticate(c.credentials(), verifier, seen).await,
    };
    settle(server, req, result)
}

/// A request's credentials, owned (so the request can be changed after).
struct Owned<'a> {
    config: &'a OAuthConfig,
    resource: String,
    authorization: Option<String>,
    query_token: bool,
    now_ms: u64,
}

impl Owned<'_> {
    fn credentials(&self) -> auth::Credentials<'_> {
        auth::Credentials {
            config: self.config,
            resource: &self.resource,
            authorization: self.authorization.as_deref(),
            query_token: self.query_token,
            now_ms: self.now_ms,
        }
    }
}

enum Pending<'a> {
    /// Decided without looking at a token (no OAuth, another path, a
    /// static API token).
    Done(Result<Caller, McpError>),
    /// A bearer token (or none) to check against the OAuth configuration.
    Token(Owned<'a>),
}

fn credentials<'a>(server: &'a Server, req: &mut HttpRequest, now_ms: u64) -> Pending<'a> {
    // Only the pipeline sets it, when it forwards: whatever came with the
    // request goes.
    req.headers
        .retain(|(k, _)| !k.eq_ignore_ascii_case(CALLER_HEADER));
    let Some(oauth) = server.config.sign_in.oauth() else {
        return Pending::Done(Ok(Caller::default()));
    };
    // The metadata and CORS preflights are for anyone; other paths get
    // their 404 without a word about auth.
    if (req.path != "/mcp" && !super::page::is_page(server, &req.path)) || req.method == "OPTIONS" {
        return Pending::Done(Ok(Caller::default()));
    }
    // A browser following a page link carries no credentials: the page
    // decides (a link to exchange, a page pass), and admits no caller.
    if browsing(server, req) {
        return Pending::Done(Ok(Caller::default()));
    }
    let authorization = req.header("authorization");
    if let Some(name) =
        auth::authenticate_api_token(server.config.sign_in.api_tokens(), authorization)
    {
        return Pending::Done(Ok(Caller::api_token(name)));
    }
    Pending::Token(Owned {
        config: oauth,
        resource: auth::resource_uri(req.header("host")),
        authorization: authorization.map(str::to_string),
        query_token: req.header(QUERY_TOKEN_HEADER).is_some(),
        now_ms,
    })
}

/// A page request without `Authorization`: a browser's navigation or
/// form post (see [`super::page`]).
fn browsing(server: &Server, req: &HttpRequest) -> bool {
    req.path != "/mcp"
        && req.header("authorization").is_none()
        && super::page::is_page(server, &req.path)
}

/// The outcome for the request: a refusal answered, a caller admitted.
fn settle(server: &Server, req: &mut HttpRequest, r: Result<Caller, McpError>) -> Authenticated {
    match r {
        Ok(caller) => admit(server, req, caller, None),
        Err(e) => {
            let mut resp = refusal(server, req, &e);
            // The issuer is down: a 503 the client may retry, and when
            // (`error_response` says so already where it made the answer).
            if let Some(seconds) = auth::retry_after(&e) {
                if resp.header("retry-after").is_none() {
                    resp = resp.with_header("retry-after", seconds.to_string());
                }
            }
            Authenticated::No(Reply::new(resp))
        }
    }
}

/// A refusal, with the page headers on a page's path.
fn refusal(server: &Server, req: &HttpRequest, e: &McpError) -> crate::http::HttpResponse {
    if req.path != "/mcp" && super::page::is_page(server, &req.path) {
        super::page::page_error(e)
    } else {
        error_response(e, None)
    }
}

/// The server-wide scopes checked, the caller signed in (with `header`,
/// when it is already serialized).
fn admit(
    server: &Server,
    req: &mut HttpRequest,
    caller: Caller,
    header: Option<String>,
) -> Authenticated {
    if server.config.sign_in.oauth().is_none() {
        return Authenticated::Yes(None);
    }
    if (req.path != "/mcp" && !super::page::is_page(server, &req.path))
        || req.method == "OPTIONS"
        || browsing(server, req)
    {
        return Authenticated::Yes(None);
    }
    if let Err(e) = server.scopes().admit(&caller, req.header("host")) {
        return Authenticated::No(Reply::new(refusal(server, req, &e)));
    }
    Authenticated::Yes(Some(Signed { caller, header }))
}

/// The built-in authorization server's mode (`OAUTH_WRAPPER`):
/// `@cloudflare/workers-oauth-provider` in front of the Worker checked the
/// token and hands over what its login stored (`props`, as JSON); that is
/// the caller. A request without it (one that did not come through the
/// provider) is refused. Without that mode it does nothing.
pub(super) fn authenticate_props(
    server: &Server,
    req: &mut HttpRequest,
    props: Option<&str>,
) -> Result<Option<Signed>, Reply> {
    req.headers
        .retain(|(k, _)| !k.eq_ignore_ascii_case(CALLER_HEADER));
    if !matches!(server.config.sign_in, auth::SignIn::Wrapper) {
        // A wrapper hands over a caller this server would ignore: every
        // user would look the same. Refused, as any misconfiguration is.
        // (The runtime's own `ctx.props` is an empty object: no caller.)
        if props.and_then(Caller::from_props).is_some() {
            return Err(Reply::new(error_response(
                &McpError::internal(
                    "Internal error: the server is misconfigured (a wrapper hands it a \
                     signed-in caller, ctx.props, but OAUTH_WRAPPER is not set)",
                ),
                None,
            )));
        }
        return Ok(None);
    }
    if (req.path != "/mcp" && !super::page::is_page(server, &req.path)) || req.method == "OPTIONS" {
        return Ok(None);
    }
    // The same refusal the server makes for a request with no caller.
    let caller = props.and_then(Caller::from_props);
    let Some(caller) = caller else {
        let e = server
            .caller_of(req, None)
            .err()
            .unwrap_or_else(|| McpError::internal("no caller"));
        return Err(Reply::new(error_response(&e, None)));
    };
    Ok(Some(Signed {
        caller,
        header: None,
    }))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::app::Registry;
    use crate::auth::{Jwt, KeyError, KeyVerifier, OAuthConfig, VerifyFuture};
    use crate::testing::{test_token, TestServer};

    /// An issuer whose keys cannot be read.
    struct Down;

    impl KeyVerifier for Down {
        fn verify<'a>(&'a self, _: &'a OAuthConfig, _: &'a Jwt, _: u64) -> VerifyFuture<'a> {
            Box::pin(std::future::ready(Err(KeyError::Unavailable {
                why: "https://id.example/jwks answered 503".into(),
                retry_after_s: 7,
            })))
        }
    }

    #[test]
    fn while_the_issuers_keys_cannot_be_read_a_request_gets_503_with_retry_after() {
        let mut h = TestServer::with_config(Registry::default(), |c| {
            c.sign_in = crate::auth::SignIn::from(OAuthConfig {
                issuer: "https://id.example".into(),
                ..OAuthConfig::default()
            });
        });
        h.verifier = Box::new(Down);
        let now = h.now_ms / 1000;
        let claims = json!({"iss": "https://id.example", "sub": "ada",
            "aud": "http://127.0.0.1:8787/mcp", "exp": now + 300});
        let bearer = format!("Bearer {}", test_token("test-key", &claims));
        let r = h.request("tools/list", json!({}), |headers| {
            headers.push(("authorization".into(), bearer.clone()));
        });
        assert_eq!(r.status, 503, "{}", r.json);
        assert_eq!(r.header("retry-after"), Some("7"));
        let once = r
            .headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case("retry-after"));
        assert_eq!(once.count(), 1, "one Retry-After: {:?}", r.headers);
        assert_eq!(r.json["jsonrpc"], "2.0");
        assert_eq!(r.json["error"]["code"], -32603);
        assert_eq!(r.json["error"]["data"]["retryAfter"], 7);
        let message = r.json["error"]["message"].as_str().unwrap_or_default();
        assert!(message.starts_with("Service unavailable"), "{message}");
        assert!(r.header("www-authenticate").is_none(), "not a refusal");
        // A token the claims refuse never asks the issuer: a 401 as ever.
        let mut foreign = claims.clone();
        foreign["aud"] = json!("https://elsewhere.example/mcp");
        let bearer = format!("Bearer {}", test_token("test-key", &foreign));
        let r = h.request("tools/list", json!({}), |headers| {
            headers.push(("authorization".into(), bearer.clone()));
        });
        assert_eq!(r.status, 401, "{}", r.json);
        assert!(r.header("retry-after").is_none());
    }
}
