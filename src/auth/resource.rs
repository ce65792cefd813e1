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

/// The caller of a request bearing `authorization`, as the token says once
/// its signature verifies; else the 401 to answer with. `query_token`: the
/// request carried a token in its URL (refused, whatever it holds).
pub async fn authenticate(
    config: &OAuthConfig,
    resource: &str,
    authorization: Option<&str>,
    query_token: bool,
    now_ms: u64,
    verifier: &dyn KeyVerifier,
    scopes: &[String],
) -> Result<Caller, McpError> {
    if query_token {
        return Err(unauthorized(Refusal::InvalidRequest, resource, scopes));
    }
    let Some(token) = bearer(authorization) else {
        return Err(unauthorized(Refusal::Missing, resource, scopes));
    };
    let invalid = |_: Invalid| unauthorized(Refusal::InvalidToken, resource, scopes);
    let jwt = Jwt::parse(token).map_err(invalid)?;
    // The issuer first: a token from anyone else never costs a key fetch.
    if jwt.claims.get("iss").and_then(Value::as_str) != Some(config.issuer.as_str()) {
        return Err(invalid(Invalid::Issuer));
    }
    match verifier.verify(config, &jwt, now_ms).await {
        Ok(()) => {}
        Err(KeyError::Invalid) => return Err(invalid(Invalid::Signature)),
        Err(KeyError::Unavailable(why)) => {
            return Err(McpError::internal(format!(
                "Internal error: the authorization server's keys could not be read ({why})"
            )))
        }
    }
    let audience = config.audience.as_deref().unwrap_or(resource);
    jwt.caller(config, audience, now_ms).map_err(invalid)
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
