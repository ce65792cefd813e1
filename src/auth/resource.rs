//! The OAuth 2.1 resource server: Protected Resource Metadata (RFC 9728),
//! the `WWW-Authenticate` challenges, and a bearer token checked into a
//! [`Caller`]. Which key signed a token is asked of a [`KeyVerifier`]; every
//! other decision is made here.

use std::future::Future;
use std::pin::Pin;

use serde_json::{json, Value};

use super::bearer;
use super::jwt::{Caller, Invalid, Jwt};
use super::oauth::{covers, is_loopback, OAuthConfig};
use super::seen::SeenTokens;
use crate::error::{ErrorKind, McpError};

/// The well-known path of the metadata; clients try it with the MCP
/// endpoint's path appended first (`…/mcp`), then bare.
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// Whether `path` is one of the two metadata documents.
pub fn is_metadata_path(path: &str) -> bool {
    path == METADATA_PATH || path.strip_prefix(METADATA_PATH) == Some("/mcp")
}

/// The canonical URI of the MCP endpoint as a client reaches it through
/// `host`: `https://<host>/mcp` (`http` on a loopback host, for local
/// development), no trailing slash — what clients ask tokens for.
pub fn resource_uri(host: Option<&str>) -> String {
    let host = host.unwrap_or("localhost").trim();
    let scheme = if is_loopback(host) { "http" } else { "https" };
    format!("{scheme}://{host}/mcp")
}

/// This server's origin as a request reached it (`http` on loopback, else
/// `https`): where its pages are, for a relative URL-elicitation URL.
pub fn origin_of(host: Option<&str>) -> String {
    let uri = resource_uri(host);
    uri.strip_suffix("/mcp").unwrap_or(&uri).to_string()
}

/// The metadata URL a challenge names: the path-suffixed form.
pub fn metadata_url(resource: &str) -> String {
    let origin = resource.strip_suffix("/mcp").unwrap_or(resource);
    format!("{origin}{METADATA_PATH}/mcp")
}

/// The Protected Resource Metadata document. `scopes`: every scope this
/// server asks for (`offline_access` is never among them).
///
/// With no scope configured `scopes_supported` is left out, never `[]`:
/// clients read an empty list as "ask for these" and end up asking for
/// nothing or for `" offline_access"` (the Python SDK), which authorization
/// servers refuse; without the field they fall back to the AS's own.
pub fn metadata(config: &OAuthConfig, resource: &str, scopes: &[String]) -> Value {
    let mut doc = json!({
        "resource": resource,
        "authorization_servers": [config.issuer],
        "bearer_methods_supported": ["header"],
        "resource_name": "MCP server",
    });
    if !scopes.is_empty() {
        doc["scopes_supported"] = json!(scopes);
    }
    doc
}

/// Why a request is refused, as its challenge says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// No credentials: a challenge without an `error` (RFC 6750 §3.1).
    Missing,
    /// A bad, expired or foreign token: `invalid_token`.
    InvalidToken,
    /// A token in the query string, or another malformed request.
    InvalidRequest,
}

/// The 401 for `refusal`, whose challenge names the metadata and the
/// scopes to ask for.
pub fn unauthorized(refusal: Refusal, resource: &str, scopes: &[String]) -> McpError {
    let mut challenge = format!("Bearer resource_metadata=\"{}\"", metadata_url(resource));
    if !scopes.is_empty() {
        challenge.push_str(&format!(", scope=\"{}\"", scopes.join(" ")));
    }
    let (error, message) = match refusal {
        Refusal::Missing => (
            None,
            "Unauthorized: sign in (a bearer access token is required)",
        ),
        Refusal::InvalidToken => (
            Some("invalid_token"),
            "Unauthorized: the access token is invalid or expired",
        ),
        Refusal::InvalidRequest => (
            Some("invalid_request"),
            "Unauthorized: send the access token in the Authorization header, never in the URL",
        ),
    };
    if let Some(e) = error {
        challenge.push_str(&format!(", error=\"{e}\""));
    }
    McpError::new(ErrorKind::Unauthorized, message).with_challenge(challenge)
}

/// The 403 for a valid token without every scope in `needed` (the whole
/// list the operation needs, in one challenge, so the client asks once).
pub fn insufficient_scope(resource: &str, needed: &[String]) -> McpError {
    let challenge = format!(
        "Bearer error=\"insufficient_scope\", scope=\"{}\", resource_metadata=\"{}\"",
        needed.join(" "),
        metadata_url(resource)
    );
    McpError::new(
        ErrorKind::InsufficientScope,
        format!(
            "Forbidden: this needs the scopes {}; sign in again granting them",
            needed.join(" ")
        ),
    )
    .with_challenge(challenge)
}

/// Whether `caller` has every scope in `needed`; if not, the 403.
/// Scopes limit OAuth callers only: a static `API_TOKENS` caller (or
/// nobody, with auth off) has no issuer and passes.
pub fn require(caller: &Caller, resource: &str, needed: &[String]) -> Result<(), McpError> {
    if caller.issuer.is_empty() || needed.iter().all(|s| covers(&caller.scopes, s)) {
        Ok(())
    } else {
        Err(insufficient_scope(resource, needed))
    }
}

/// Why a signature could not be accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyError {
    /// It does not verify, or the issuer has no key of that id.
    Invalid,
    /// The issuer's keys cannot be read now: not the client's fault, and
    /// worth a retry after `retry_after_s` seconds (`503`).
    Unavailable {
        /// What failed.
        why: String,
        /// When to try again, in seconds.
        retry_after_s: u64,
    },
}

/// A boxed future, as [`KeyVerifier`] returns.
pub type VerifyFuture<'a> = Pin<Box<dyn Future<Output = Result<(), KeyError>> + 'a>>;

/// Checks a token's signature with the issuer's keys. The Worker's twin
/// fetches the issuer's JWKS as [`IssuerKeys`](super::IssuerKeys) plans
/// (cached per isolate, one refresh at a time, a back-off after failures)
/// and verifies with WebCrypto; a native test twin stands in for it.
pub trait KeyVerifier {
    /// Whether `jwt`'s signature verifies with the issuer's key `jwt.kid`.
    fn verify<'a>(&'a self, config: &'a OAuthConfig, jwt: &'a Jwt, now_ms: u64)
        -> VerifyFuture<'a>;
}

/// One request's credentials, as [`check`] and [`authenticate`] read them.
#[derive(Debug, Clone, Copy)]
pub struct Credentials<'a> {
    /// The OAuth configuration.
    pub config: &'a OAuthConfig,
    /// This server's resource URI as the request reached it.
    pub resource: &'a str,
    /// The `Authorization` header.
    pub authorization: Option<&'a str>,
    /// The URL carried an `access_token` (refused).
    pub query_token: bool,
    /// The request's clock.
    pub now_ms: u64,
}

/// What [`check`] could decide without waiting.
#[derive(Debug)]
pub enum Checked {
    /// Decided: the caller, or the refusal.
    Done(Result<Caller, McpError>),
    /// A token that checked out lately: its caller, and that caller as the
    /// internal header carries it.
    Known(Caller, String),
    /// The token's signature must be checked first (its key fetched, a
    /// WebCrypto call): then [`finish`].
    Verify(Box<Jwt>),
}

/// Everything about a request's token that needs no wait: its absence,
/// its shape, its claims (issuer, audience, lifetime, subject), and
/// whether it checked out lately ([`SeenTokens`]: then it is that caller,
/// untouched). Only a token that could be good is left for its signature:
/// a made-up one for another issuer or audience, or an expired one, never
/// costs a key fetch.
pub fn check(c: Credentials<'_>, seen: &SeenTokens) -> Checked {
    let scopes = &c.config.scopes;
    if c.query_token {
        return Checked::Done(Err(unauthorized(
            Refusal::InvalidRequest,
            c.resource,
            scopes,
        )));
    }
    let Some(token) = bearer(c.authorization) else {
        return Checked::Done(Err(unauthorized(Refusal::Missing, c.resource, scopes)));
    };
    if let Some((caller, header)) = seen.get(token, c.now_ms) {
        return Checked::Known(caller.clone(), header.to_string());
    }
    let invalid = || unauthorized(Refusal::InvalidToken, c.resource, scopes);
    let Ok(jwt) = Jwt::parse(token) else {
        return Checked::Done(Err(invalid()));
    };
    // The claims first: a token that would be refused anyway never costs
    // a key fetch (nor, while the issuer is down, a 503).
    if let Err(e) = claims(c, &jwt) {
        return Checked::Done(Err(e));
    }
    Checked::Verify(Box::new(jwt))
}

/// The rest of [`check`] once the signature was checked: on success the
/// token is remembered in `seen` and its claims decide.
pub fn finish(
    c: Credentials<'_>,
    jwt: &Jwt,
    verified: Result<(), KeyError>,
    seen: &mut SeenTokens,
) -> Result<Caller, McpError> {
    match verified {
        Ok(()) => {}
        Err(KeyError::Invalid) => {
            return Err(unauthorized(
                Refusal::InvalidToken,
                c.resource,
                &c.config.scopes,
            ))
        }
        Err(KeyError::Unavailable { why, retry_after_s }) => {
            return Err(unavailable(&why, retry_after_s));
        }
    }
    let caller = claims(c, jwt)?;
    if let Some(token) = bearer(c.authorization) {
        let exp_ms = jwt
            .claims
            .get("exp")
            .and_then(Value::as_f64)
            .map_or(0, |s| (s * 1000.0) as u64);
        let until = exp_ms.min(c.now_ms.saturating_add(c.config.jwks_max_age_ms));
        seen.remember(token, caller.clone(), until, c.now_ms);
    }
    Ok(caller)
}

/// The `503` while the issuer's keys cannot be read: retry after
/// `retry_after_s` seconds (the `Retry-After` header the host sets, and
/// `data.retryAfter`).
pub fn unavailable(why: &str, retry_after_s: u64) -> McpError {
    McpError::new(
        ErrorKind::Unavailable,
        format!(
            "Service unavailable: the authorization server's keys cannot be read \
             ({why}); retry after {retry_after_s} s"
        ),
    )
    .with_data(json!({"retryAfter": retry_after_s}))
}

/// The `Retry-After` seconds of an error, if it has them.
pub fn retry_after(e: &McpError) -> Option<u64> {
    if e.kind != ErrorKind::Unavailable {
        return None;
    }
    e.data.as_ref()?.get("retryAfter")?.as_u64()
}

fn claims(c: Credentials<'_>, jwt: &Jwt) -> Result<Caller, McpError> {
    let audience = c.config.audience.as_deref().unwrap_or(c.resource);
    jwt.caller(c.config, audience, c.now_ms)
        .map_err(|_: Invalid| unauthorized(Refusal::InvalidToken, c.resource, &c.config.scopes))
}

/// The caller of a request, as its token says once its signature verifies
/// ([`check`], then the `verifier`, then [`finish`]); else the refusal.
pub async fn authenticate(
    c: Credentials<'_>,
    verifier: &dyn KeyVerifier,
    seen: &std::cell::RefCell<SeenTokens>,
) -> Result<Caller, McpError> {
    // No borrow of `seen` is held across the wait.
    let checked = check(c, &seen.borrow());
    match checked {
        Checked::Done(r) => r,
        Checked::Known(caller, _) => Ok(caller),
        Checked::Verify(jwt) => {
            let verified = verifier.verify(c.config, &jwt, c.now_ms).await;
            finish(c, &jwt, verified, &mut seen.borrow_mut())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::{Answer, IssuerKeys, Plan};
    use std::cell::{Cell, RefCell};
    use std::rc::Rc;

    /// The Worker's verifier natively: [`IssuerKeys`] driven as
    /// `worker/keys.rs` drives it, against an issuer answering `answer`
    /// (counting its GETs); a signature verifies when it is `sig:<kid>`.
    struct Driven {
        keys: RefCell<IssuerKeys>,
        answer: Box<dyn Fn(&str) -> Answer>,
        gets: Cell<usize>,
    }

    impl Driven {
        fn new(answer: impl Fn(&str) -> Answer + 'static) -> Self {
            Self {
                keys: RefCell::default(),
                answer: Box::new(answer),
                gets: Cell::new(0),
            }
        }
    }

    impl KeyVerifier for Driven {
        fn verify<'a>(
            &'a self,
            config: &'a OAuthConfig,
            jwt: &'a Jwt,
            now: u64,
        ) -> VerifyFuture<'a> {
            let kid = jwt.kid.as_deref();
            for _ in 0..3 {
                let plan = self.keys.borrow().plan(config, &jwt.alg, kid, now);
                match plan {
                    Plan::Verify(jwk) => {
                        let ok = jwk["kid"].as_str().map(|k| format!("sig:{k}"))
                            == String::from_utf8(jwt.signature.clone()).ok();
                        return Box::pin(std::future::ready(if ok {
                            Ok(())
                        } else {
                            Err(KeyError::Invalid)
                        }));
                    }
                    Plan::Invalid => return Box::pin(std::future::ready(Err(KeyError::Invalid))),
                    Plan::Unavailable { why, retry_after_s } => {
                        let e = KeyError::Unavailable { why, retry_after_s };
                        return Box::pin(std::future::ready(Err(e)));
                    }
                    // Natively a refresh ends before anything else runs.
                    Plan::Wait => unreachable!("no refresh outlives a request here"),
                    Plan::Fetch => {
                        let mut next = self.keys.borrow_mut().begin(config, now);
                        while let Some(r) = next {
                            self.gets.set(self.gets.get() + 1);
                            let answer = (self.answer)(&r.url);
                            next = self.keys.borrow_mut().answered(config, r, answer, now);
                        }
                    }
                }
            }
            unreachable!("a refresh ended and the plan is to fetch again")
        }
    }

    const ISSUER: &str = "https://id.example";
    const RESOURCE: &str = "https://m.example/mcp";
    const NOW: u64 = 1_800_000_000_000;

    fn oauth() -> OAuthConfig {
        OAuthConfig {
            issuer: ISSUER.into(),
            ..OAuthConfig::default()
        }
    }

    fn token(kid: &str, claims: Value) -> String {
        use base64::engine::general_purpose::URL_SAFE_NO_PAD;
        use base64::Engine;
        let part = |v: &Value| URL_SAFE_NO_PAD.encode(v.to_string());
        let header = json!({"alg": "ES256", "typ": "at+jwt", "kid": kid});
        let sig = URL_SAFE_NO_PAD.encode(format!("sig:{kid}"));
        format!("{}.{}.{sig}", part(&header), part(&claims))
    }

    fn good_claims() -> Value {
        json!({"iss": ISSUER, "aud": RESOURCE, "sub": "ada", "exp": NOW / 1000 + 300})
    }

    fn up(url: &str) -> Answer {
        if url.ends_with("/jwks") {
            let key = json!({"kid": "k1", "kty": "EC", "crv": "P-256", "x": "a", "y": "b"});
            Answer::Body(json!({"keys": [key]}).to_string())
        } else {
            Answer::Body(
                json!({"issuer": ISSUER, "jwks_uri": format!("{ISSUER}/jwks")}).to_string(),
            )
        }
    }

    fn run(config: &OAuthConfig, v: &Driven, token: &str, now: u64) -> Result<Caller, McpError> {
        let seen = RefCell::new(SeenTokens::default());
        let authorization = format!("Bearer {token}");
        let c = Credentials {
            config,
            resource: RESOURCE,
            authorization: Some(&authorization),
            query_token: false,
            now_ms: now,
        };
        crate::engine::block_on(authenticate(c, v, &seen))
    }

    #[test]
    fn a_token_whose_claims_are_wrong_starts_no_fetch_while_a_plausible_one_gets_503() {
        let config = oauth();
        let v = Driven::new(|_| Answer::Status(503));
        let mut wrong = Vec::new();
        for (k, bad) in [
            ("iss", json!("https://other.example")),
            ("aud", json!("https://elsewhere.example/mcp")),
            ("exp", json!(NOW / 1000 - 3600)),
            ("sub", json!("")),
        ] {
            let mut claims = good_claims();
            claims[k] = bad;
            wrong.push(token("k1", claims));
        }
        let mut no_exp = good_claims();
        no_exp.as_object_mut().map(|c| c.remove("exp"));
        wrong.push(token("k1", no_exp));
        for t in &wrong {
            let e = run(&config, &v, t, NOW).expect_err("refused");
            assert_eq!(e.http_status(), 401, "{e}");
            assert!(e
                .challenge
                .as_deref()
                .is_some_and(|c| c.contains("invalid_token")));
        }
        assert_eq!(
            v.gets.get(),
            0,
            "no fetch for a token refused by its claims"
        );
        // Thirty made-up tokens with the public iss and aud: one GET, then
        // each is answered 503 with when to retry, as a JSON-RPC error.
        for i in 0..30 {
            let t = token(&format!("made-up-{i}"), good_claims());
            let e = run(&config, &v, &t, NOW + i).expect_err("unavailable");
            assert_eq!((e.http_status(), e.code()), (503, -32603), "{e}");
            assert_eq!(retry_after(&e), Some(2), "{e}");
            let body = e.to_response(None);
            assert_eq!(body["error"]["data"]["retryAfter"], 2);
            assert!(body["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("answered 503")));
        }
        assert_eq!(v.gets.get(), 1, "one GET for thirty requests");
    }

    #[test]
    fn keys_read_before_an_outage_keep_verifying_past_their_ttl() {
        let config = OAuthConfig {
            jwks_max_age_ms: 2_000,
            ..oauth()
        };
        let down = Rc::new(Cell::new(false));
        let flag = down.clone();
        let v = Driven::new(move |url| {
            if flag.get() {
                Answer::Status(503)
            } else {
                up(url)
            }
        });
        let mut long = good_claims();
        long["exp"] = json!(NOW / 1000 + 3 * 3600);
        let good = token("k1", long);
        assert!(run(&config, &v, &good, NOW).is_ok());
        assert_eq!(v.gets.get(), 2, "the metadata, the keys");
        down.set(true);
        // Past the TTL: one failed refresh, and the key still verifies;
        // a forged signature is still refused.
        let later = NOW + 10_000;
        assert!(run(&config, &v, &good, later).is_ok());
        assert!(run(&config, &v, &good, later + 1).is_ok());
        assert_eq!(v.gets.get(), 3);
        let mut bad = token("k1", good_claims());
        bad.push_str("AA");
        assert_eq!(
            run(&config, &v, &bad, later).map_err(|e| e.http_status()),
            Err(401)
        );
        // Past the bound, the answer is 503.
        let much_later = later + crate::auth::STALE_MS;
        let e = run(&config, &v, &good, much_later).expect_err("stale past the bound");
        assert_eq!(e.http_status(), 503);
    }

    #[test]
    fn the_resource_is_the_endpoint_as_reached_and_its_metadata_is_path_suffixed() {
        assert_eq!(
            resource_uri(Some("mcp.example.com")),
            "https://mcp.example.com/mcp"
        );
        assert_eq!(
            resource_uri(Some("127.0.0.1:8787")),
            "http://127.0.0.1:8787/mcp"
        );
        assert_eq!(
            metadata_url("https://mcp.example.com/mcp"),
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert!(is_metadata_path("/.well-known/oauth-protected-resource"));
        assert!(is_metadata_path(
            "/.well-known/oauth-protected-resource/mcp"
        ));
        assert!(!is_metadata_path(
            "/.well-known/oauth-protected-resource/other"
        ));
    }

    #[test]
    fn scopes_supported_is_left_out_when_no_scope_is_configured() {
        let config = OAuthConfig {
            issuer: "https://as.example".to_string(),
            ..OAuthConfig::default()
        };
        let r = "https://m.example/mcp";
        let doc = metadata(&config, r, &[]);
        assert!(doc.get("scopes_supported").is_none(), "{doc}");
        assert_eq!(doc["authorization_servers"], json!(["https://as.example"]));
        let doc = metadata(&config, r, &["mcp:read".to_string()]);
        assert_eq!(doc["scopes_supported"], json!(["mcp:read"]));
        // Nor does a challenge name an empty scope.
        let c = unauthorized(Refusal::Missing, r, &[]).challenge.expect("c");
        assert!(!c.contains("scope="), "{c}");
    }

    #[test]
    fn challenges_name_the_metadata_and_scopes_and_an_error_only_when_credentials_came() {
        let r = "https://m.example/mcp";
        let scopes = vec!["mcp:read".to_string()];
        let missing = unauthorized(Refusal::Missing, r, &scopes);
        assert_eq!(missing.http_status(), 401);
        let c = missing.challenge.expect("challenge");
        assert_eq!(
            c,
            "Bearer resource_metadata=\"https://m.example/.well-known/oauth-protected-resource/mcp\", scope=\"mcp:read\""
        );
        let bad = unauthorized(Refusal::InvalidToken, r, &scopes)
            .challenge
            .expect("c");
        assert!(bad.ends_with(", error=\"invalid_token\""), "{bad}");
        let more = vec!["mcp:read".to_string(), "deploy:write".to_string()];
        let e = insufficient_scope(r, &more);
        assert_eq!(e.http_status(), 403);
        let c = e.challenge.expect("challenge");
        assert!(c.contains("error=\"insufficient_scope\""), "{c}");
        assert!(c.contains("scope=\"mcp:read deploy:write\""), "{c}");
        assert!(c.contains("resource_metadata="), "{c}");
    }
}
