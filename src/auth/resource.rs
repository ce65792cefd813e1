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
pub fn metadata(config: &OAuthConfig, resource: &str, scopes: &[String]) -> Value {
    json!({
        "resource": resource,
        "authorization_servers": [config.issuer],
        "scopes_supported": scopes,
        "bearer_methods_supported": ["header"],
        "resource_name": "MCP server",
    })
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
    /// The issuer's keys could not be fetched: not the client's fault.
    Unavailable(String),
}

/// A boxed future, as [`KeyVerifier`] returns.
pub type VerifyFuture<'a> = Pin<Box<dyn Future<Output = Result<(), KeyError>> + 'a>>;

/// Checks a token's signature with the issuer's keys. The Worker's twin
/// fetches the issuer's JWKS (cached per isolate, fetched again on an
/// unknown `kid` at a bounded rate) and verifies with WebCrypto; a native
/// test twin stands in for it.
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
/// its shape, its issuer, and whether it checked out lately
/// ([`SeenTokens`]: then it is that caller, untouched).
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
    // The issuer first: a token from anyone else never costs a key fetch.
    if jwt.claims.get("iss").and_then(Value::as_str) != Some(c.config.issuer.as_str()) {
        return Checked::Done(Err(invalid()));
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
        Err(KeyError::Unavailable(why)) => {
            return Err(McpError::internal(format!(
                "Internal error: the authorization server's keys could not be read ({why})"
            )))
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
