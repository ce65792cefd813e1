//! The admin API and console (`/admin`), sans-IO: who may use them
//! ([`operator`], [`verify`]), and what a request needs done ([`start`]:
//! a [`Job`] that asks objects for what they keep and answers from their
//! answers). The Worker and `TestServer` only send what a job asks and
//! hand the answers back ([`Job::resume`]).
//!
//! Without a credential for them the admin paths answer exactly as a path
//! that does not exist (404); a signed-in user without the admin scope
//! gets 403. See `docs/OPERATE.md`.
//!
//! # Layout
//! - `request.rs`: what an admin request asks for, and its filter.
//! - `job.rs`: the API's operations as a state machine over object answers.
//! - `object.rs`: an operation inside an object (a shard, a session, a
//!   task, the hub).
//! - `hold.rs`: pausing and resuming one call, in the object keeping it.
//! - `paging.rs`: a listing's page and counts from each keeper's, and its
//!   cursor.
//! - `each.rs`: an operation on named calls, each in its keeper (the one
//!   place an admin id is told apart by keeper).
//! - `pass.rs`: the console's sign-in link and cookie, and its form token.
//! - `pages.rs`: the console's requests, rendered by `admin::console`.

mod each;
mod hold;
mod job;
// Unused in a Worker built without the `admin` feature (host/object.rs).
#[cfg_attr(all(target_arch = "wasm32", not(feature = "admin")), allow(dead_code))]
pub(crate) mod object;
mod outside;
mod pages;
mod paging;
mod pass;
mod request;

use std::cell::RefCell;

pub use job::{start, Job, Step};

use crate::auth::{self, Caller, KeyVerifier, SeenTokens};
use crate::effects::Reply;
use crate::error::{ErrorKind, McpError};
use crate::http::{HttpRequest, HttpResponse};
use crate::server::{error_response, Server};

/// Whether `path` (its query kept) is under `/admin`.
pub fn is_admin_path(path: &str) -> bool {
    let bare = path.split('?').next().unwrap_or(path);
    bare == "/admin" || bare.starts_with("/admin/")
}

/// Who an admin request comes from, as far as it can be told at once.
pub enum Operator {
    /// An operator, by name.
    Yes(String),
    /// An OAuth access token: [`verify`] it (it may wait for the issuer's
    /// keys).
    Verify,
    /// Not an operator: the answer (a 404, as for any unknown path).
    No(Reply),
}

/// The answer to an admin request without a valid credential: the very
/// answer a path that does not exist gets.
pub fn not_there(req: &HttpRequest) -> Reply {
    unknown(&req.path)
}

/// [`not_there`] for the request at `path`.
fn unknown(path: &str) -> Reply {
    Reply::new(error_response(&McpError::unknown_path(path), None))
}

/// Who sends `req`, by what it carries: an `ADMIN_TOKENS` bearer token, the
/// console's cookie, or an OAuth token to verify.
pub fn operator(server: &Server, req: &HttpRequest, now_ms: u64) -> Operator {
    let config = &server.config;
    if !config.admin_enabled() {
        return Operator::No(not_there(req));
    }
    let authorization = req.header("authorization");
    if let Some(name) = auth::authenticate_api_token(&config.admin_tokens, authorization) {
        return Operator::Yes(name.to_string());
    }
    // The console's cookie signs in its pages (never the API: a page on
    // another site could make a browser send the API a post with it).
    let path = req.path.split('?').next().unwrap_or(&req.path);
    if authorization.is_none() && !path.starts_with("/admin/api") {
        if let Some(name) = pass::from_cookie(server, req, now_ms) {
            return Operator::Yes(name);
        }
        // A sign-in link is its own credential (`pages::enter` checks it),
        // opened by a browser's GET; any other request there is refused
        // as any path without a credential is.
        if path == "/admin/enter" && req.method == "GET" {
            return Operator::Yes(String::new());
        }
    }
    if config.sign_in.oauth().is_some() && authorization.is_some_and(|a| a.len() > 7) {
        return Operator::Verify;
    }
    Operator::No(not_there(req))
}

/// [`Operator::Verify`]: the OAuth token checked as any request's is (a
/// verified token is remembered in `seen`); its caller is an operator if
/// its scopes hold `ADMIN_SCOPE`. A bad token gets the 404 any admin path
/// gets without a credential; a good one without the scope, 403.
pub async fn verify(
    server: &Server,
    req: &HttpRequest,
    now_ms: u64,
    verifier: &dyn KeyVerifier,
    seen: &RefCell<SeenTokens>,
) -> Result<String, Reply> {
    let Some(oauth) = server.config.sign_in.oauth() else {
        return Err(not_there(req));
    };
    let resource = auth::resource_uri(req.header("host"));
    let credentials = auth::Credentials {
        config: oauth,
        resource: &resource,
        authorization: req.header("authorization"),
        query_token: false,
        now_ms,
    };
    let caller = auth::authenticate(credentials, verifier, seen).await;
    admitted(server, req, caller)
}

/// An OAuth caller as an operator: the admin scope, or 403.
fn admitted(
    server: &Server,
    req: &HttpRequest,
    caller: Result<Caller, McpError>,
) -> Result<String, Reply> {
    match caller {
        Ok(c) if c.scopes.contains(&server.config.admin_scope) => Ok(c.principal),
        Ok(_) => {
            let e = McpError::new(
                ErrorKind::Forbidden,
                format!(
                    "Forbidden: the admin API needs the scope {:?}",
                    server.config.admin_scope
                ),
            );
            Err(Reply::new(error_response(&e, None)))
        }
        Err(_) => Err(not_there(req)),
    }
}

/// When this isolate's copy of the paused tools is due for a read (every
/// [`PAUSED_REFRESH_MS`](crate::index::PAUSED_REFRESH_MS), on a
/// server where operators exist): the request to send the hub. The
/// request in hand does not wait for it; [`refreshed`] takes the answer.
pub fn refresh(server: &Server, now_ms: u64) -> Option<(String, HttpRequest)> {
    if !server.config.admin_enabled() || !server.paused.due(now_ms) {
        return None;
    }
    let hub = crate::host::hub_name(0, server.config.listen_shards.max(1));
    Some((
        hub,
        object::request(object::Ask::Paused, &object::Body::default()),
    ))
}

/// The hub's answer to [`refresh`]'s request.
pub fn refreshed(server: &Server, response: &HttpResponse, now_ms: u64) {
    if let (200, crate::http::Body::Bytes(b)) = (response.status, &response.body) {
        if let Ok(tools) = crate::json::from_slice::<Vec<String>>(b) {
            server.paused.set(tools, now_ms);
        }
    }
}

/// A JSON answer of the admin API.
fn json(status: u16, v: &serde_json::Value) -> HttpResponse {
    HttpResponse::json(status, v).with_header("cache-control", "no-store")
}
