//! Who is calling, decided before a request is routed: with OAuth on, the
//! bearer token is checked here once (its signature by the host's
//! [`KeyVerifier`]) and the verified [`Caller`] rides with the request, to
//! the server and to whichever object serves it, in an internal header.

use crate::auth::{self, Caller, KeyVerifier, CALLER_HEADER, QUERY_TOKEN_HEADER};
use crate::effects::Reply;
use crate::http::HttpRequest;
use crate::server::{error_response, Server};

/// Checks `req`'s credentials (OAuth mode) and, when they hold, adds the
/// caller to it; otherwise the reply to answer with (401, or 403 for a
/// token without the server-wide scopes). Without OAuth it does nothing:
/// `API_TOKENS` are checked by the server, synchronously, where they were.
/// A static `API_TOKENS` entry is accepted beside OAuth (checked first).
pub async fn authenticate(
    server: &Server,
    req: &mut HttpRequest,
    now_ms: u64,
    verifier: &dyn KeyVerifier,
) -> Result<(), Reply> {
    // Only this function (or `authenticate_props`, in that mode) sets it:
    // whatever came with the request goes.
    if !server.config.oauth_props {
        req.headers
            .retain(|(k, _)| !k.eq_ignore_ascii_case(CALLER_HEADER));
    }
    let query_token = req.header(QUERY_TOKEN_HEADER).is_some();
    let Some(oauth) = &server.config.oauth else {
        return Ok(());
    };
    // The metadata and CORS preflights are for anyone; other paths get
    // their 404 without a word about auth.
    if req.path != "/mcp" || req.method == "OPTIONS" {
        return Ok(());
    }
    let resource = auth::resource_uri(req.header("host"));
    let refuse = |e| Reply::new(error_response(&e, None));
    let authorization = req.header("authorization");
    let caller = match auth::authenticate_api_token(&server.config.api_tokens, authorization) {
        Some(name) => Caller::api_token(name),
        None => auth::authenticate(
            oauth,
            &resource,
            authorization,
            query_token,
            now_ms,
            verifier,
            &oauth.scopes,
        )
        .await
        .map_err(refuse)?,
    };
    auth::require(&caller, &resource, &oauth.scopes).map_err(refuse)?;
    let json = serde_json::to_string(&caller).unwrap_or_default();
    req.headers.push((CALLER_HEADER.to_string(), json));
    Ok(())
}

/// The built-in authorization server's mode (`OAUTH_PROVIDER`):
/// `@cloudflare/workers-oauth-provider` in front of the Worker checked the
/// token and hands over what its login stored (`props`, as JSON); that is
/// the caller. A request without it (one that did not come through the
/// provider) is refused. Without that mode it does nothing.
pub fn authenticate_props(
    server: &Server,
    req: &mut HttpRequest,
    props: Option<&str>,
) -> Result<(), Reply> {
    req.headers
        .retain(|(k, _)| !k.eq_ignore_ascii_case(CALLER_HEADER));
    if !server.config.oauth_props || req.path != "/mcp" || req.method == "OPTIONS" {
        return Ok(());
    }
    // The same refusal the server makes for a request with no caller.
    let caller = props.and_then(Caller::from_props);
    let Some(caller) = caller else {
        let e = server
            .authenticate(req)
            .err()
            .unwrap_or_else(|| crate::error::McpError::internal("no caller"));
        return Err(Reply::new(error_response(&e, None)));
    };
    let json = serde_json::to_string(&caller).unwrap_or_default();
    req.headers.push((CALLER_HEADER.to_string(), json));
    Ok(())
}
