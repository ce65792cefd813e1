//! Who is calling: the one place a request's credentials are read
//! (sans-IO). The server asks [`bearer`] for the token a request presents
//! and [`authenticate_api_token`] who it stands for; the Worker and every
//! Durable Object go through the same functions, so they cannot read one
//! header two ways.
//!
//! With OAuth on (`OAUTH_ISSUER`), this server is an OAuth 2.1 resource
//! server: it publishes its Protected Resource Metadata, answers with the
//! challenges clients act on, and takes a JWT access token (RFC 9068) for
//! a [`Caller`] once its issuer, signature, audience and lifetime check
//! out. Paused state is bound to the caller's principal (issuer, subject,
//! client), never to the token, so a refreshed token continues it.
//!
//! # Layout
//! - `mod.rs`: the bearer credential of a request.
//! - `api_tokens.rs`: `API_TOKENS`, the static-token mode: parsed strictly
//!   (a set but malformed value refuses to serve, never turns auth off).
//! - `oauth.rs`: the OAuth configuration; the scope hierarchy rule.
//! - `jwt.rs`: a JWT access token taken apart, its claims decided; [`Caller`].
//! - `keys.rs`: the issuer's key set: which key a token names.
//! - `refresh.rs`: when the key set is fetched, and what a request does
//!   while the issuer is down (one refresh at a time, a back-off after
//!   failures, stale keys for a while, else `503` with `Retry-After`).
//! - `resource.rs`: metadata, challenges, and a request's token checked
//!   (the signature by a [`KeyVerifier`]: WebCrypto in the Worker).
//! - `sign_in.rs`: the one sign-in mode a server runs ([`SignIn`]: open,
//!   `API_TOKENS`, OAuth, or a wrapping authorization server), and who a
//!   request is from once the host checked what it could.
//! - `scopes.rs`: which scopes a request and a call need ([`ScopePolicy`]).
//! - `seen.rs`: tokens whose signature verified lately (by digest), so a
//!   repeated token is checked without waiting.

mod api_tokens;
mod jwt;
mod keys;
mod oauth;
mod refresh;
mod resource;
mod scopes;
mod seen;
mod sign_in;

pub use api_tokens::{authenticate_api_token, parse_api_tokens};
pub use jwt::{Caller, Invalid, Jwt, ALGORITHMS, PROPS_ISSUER};
pub use keys::{jwks_uri, KeySet, JWKS_REFETCH_MS};
pub use oauth::{covers, is_loopback, parse_scopes, OAuthConfig, JWKS_MAX_AGE_MS, SKEW_MS};
pub use refresh::{
    backoff_ms, Answer, IssuerKeys, Plan, Refresh, BACKOFF_MAX_MS, BACKOFF_MIN_MS,
    FETCH_TIMEOUT_MS, REFRESH_LOST_MS, STALE_MS,
};
pub use resource::{
    authenticate, check, finish, insufficient_scope, is_metadata_path, metadata, metadata_url,
    origin_of, require, resource_uri, retry_after, unauthorized, unavailable, Checked, Credentials,
    KeyError, KeyVerifier, Refusal, VerifyFuture, METADATA_PATH,
};
pub use scopes::ScopePolicy;
pub use seen::SeenTokens;
pub use sign_in::SignIn;

/// The internal header that carries a verified [`Caller`] from the Worker
/// to the server and to objects. The Worker never copies a client's, and
/// sets it only after the credential checked out.
pub const CALLER_HEADER: &str = "x-durable-mcp-caller";

/// The internal header a host sets when the request's URL carried an
/// `access_token` query parameter (RFC 6750 §2.3), which is refused: a
/// token in a URL ends up in logs and browser history.
pub const QUERY_TOKEN_HEADER: &str = "x-durable-mcp-query-token";

/// The token of an `Authorization: Bearer <token>` header (RFC 6750 §2.1):
/// the scheme is case-insensitive, one or more spaces follow it, and the
/// token is non-empty and made of the token68 characters only. Anything
/// else (another scheme, an empty token, a token with spaces or commas in
/// it) presents no bearer token at all.
pub fn bearer(authorization: Option<&str>) -> Option<&str> {
    let value = authorization?.trim();
    let (scheme, rest) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let token = rest.trim_start_matches(' ');
    let token68 = |b: u8| b.is_ascii_alphanumeric() || b"-._~+/=".contains(&b);
    (!token.is_empty() && token.bytes().all(token68)).then_some(token)
}

/// Constant-time byte comparison (the length is not secret).
pub(crate) fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::bearer;

    #[test]
    fn a_bearer_token_is_read_one_way_and_an_empty_one_is_none() {
        assert_eq!(bearer(Some("Bearer abc.def-1")), Some("abc.def-1"));
        assert_eq!(bearer(Some("bearer abc")), Some("abc"));
        assert_eq!(bearer(Some("BEARER   abc  ")), Some("abc"));
        assert_eq!(bearer(Some("Bearer ")), None);
        assert_eq!(bearer(Some("Bearer")), None);
        assert_eq!(bearer(Some("Bearer  ")), None);
        assert_eq!(bearer(Some("Basic abc")), None);
        assert_eq!(bearer(Some("Bearer a b")), None);
        assert_eq!(bearer(Some("Bearer a,b")), None);
        assert_eq!(bearer(Some("Bearerabc")), None);
        assert_eq!(bearer(None), None);
    }
}
