//! The sans-IO server: an [`HttpRequest`] in, an [`HttpResponse`] out.
//!
//! Every request is checked the same way first (path, Origin/Host, auth,
//! size, JSON), then classified once by protocol era and handed to that era's
//! code path. No clock, randomness or storage is read here: they come in
//! through [`Env`].
//!
//! # Layout
//! - `config.rs`: configuration from Worker vars and secrets.
//! - `registry.rs`: tools, resources, templates, prompts.
//! - `modern.rs`: the 2026-07-28 stateless wire: headers, `_meta`, dispatch.
//! - `methods.rs`: the method handlers both eras share (lists, reads, calls).
//! - `mrtr.rs`: running a call through the engine and sealing its state.

mod config;
mod methods;
mod modern;
mod mrtr;
pub mod registry;

pub use config::Config;
pub use registry::{content, text, CallToolResult, Prompt, Registry, Resource, ResourceTemplate, Tool};

use serde_json::Value;

use crate::error::{ErrorKind, McpError};
use crate::http::{check_origin_and_host, HttpRequest, HttpResponse};
use crate::protocol::{parse_message, versions};

/// What the outside world supplies for one request.
#[derive(Debug, Clone, Default)]
pub struct Env {
    /// Milliseconds since the Unix epoch.
    pub now_ms: u64,
    /// 16 fresh random bytes (call ids, session ids).
    pub random: [u8; 16],
}

/// An MCP server: configuration plus what it offers.
pub struct Server {
    /// The configuration.
    pub config: Config,
    /// Tools, resources, prompts.
    pub registry: Registry,
}

/// Who is calling, once authenticated (`""` when auth is off).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Principal(pub String);

impl Server {
    /// A server with `config` offering `registry`.
    pub fn new(config: Config, registry: Registry) -> Self {
        Self { config, registry }
    }

    /// Handles one HTTP request.
    pub async fn handle(&self, req: &HttpRequest, env: &Env) -> HttpResponse {
        match self.handle_inner(req, env).await {
            Ok(resp) => resp,
            Err((e, id)) => error_response(&e, id.as_ref()),
        }
    }

    async fn handle_inner(&self, req: &HttpRequest, env: &Env) -> Result<HttpResponse, (McpError, Option<Value>)> {
        if req.path != "/mcp" {
            return Ok(HttpResponse::json(404, &serde_json::json!({"error": "not found; the MCP endpoint is /mcp"})));
        }
        check_origin_and_host(
            req.header("origin"),
            req.header("host"),
            &self.config.allowed_origins,
            &self.config.allowed_hosts,
        )
        .map_err(|why| {
            let what = match why {
                crate::http::GuardRejection::Origin => "Origin",
                crate::http::GuardRejection::Host => "Host",
            };
            (McpError::new(ErrorKind::Forbidden, format!("Forbidden: {what} not allowed")), None)
        })?;
        let principal = self.authenticate(req).map_err(|e| (e, None))?;
        match req.method.as_str() {
            "POST" => {}
            "OPTIONS" => return Ok(HttpResponse::empty(204).with_header("allow", "POST")),
            // GET opens a 2025 standalone stream and DELETE ends a 2025
            // session; neither exists on the stateless wire.
            _ => {
                return Err((
                    McpError::new(ErrorKind::MethodNotAllowed, "Method not allowed: use POST"),
                    None,
                ))
            }
        }
        if req.body.len() > self.config.max_body_bytes {
            return Err((
                McpError::new(
                    ErrorKind::TooLarge,
                    format!("Request body is larger than {} bytes", self.config.max_body_bytes),
                ),
                None,
            ));
        }
        let message = parse_message(&req.body)?;
        modern::handle(self, req, message, &principal, env).await
    }

    /// Checks `Authorization: Bearer` when API tokens are configured.
    fn authenticate(&self, req: &HttpRequest) -> Result<Principal, McpError> {
        if self.config.api_tokens.is_empty() {
            return Ok(Principal::default());
        }
        let presented = req
            .header("authorization")
            .and_then(|h| h.strip_prefix("Bearer ").or_else(|| h.strip_prefix("bearer ")))
            .map(str::trim);
        let found = presented.and_then(|p| {
            // Compare every token in constant time so timing does not reveal a prefix.
            self.config
                .api_tokens
                .iter()
                .fold(None, |hit, (tok, who)| if ct_eq(tok.as_bytes(), p.as_bytes()) { Some(who) } else { hit })
        });
        found
            .map(|who| Principal(who.clone()))
            .ok_or_else(|| McpError::new(ErrorKind::Unauthorized, "Unauthorized: a valid bearer token is required"))
    }
}

/// Constant-time byte comparison.
fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The one place an error becomes an HTTP response.
pub fn error_response(e: &McpError, id: Option<&Value>) -> HttpResponse {
    let mut resp = HttpResponse::json(e.http_status(), &e.to_response(id));
    match e.kind {
        ErrorKind::Unauthorized => {
            resp = resp.with_header("www-authenticate", "Bearer realm=\"mcp\"");
        }
        ErrorKind::MethodNotAllowed => {
            resp = resp.with_header("allow", "POST");
        }
        _ => {}
    }
    resp
}

/// The versions this server speaks, newest first.
pub fn supported_versions() -> Vec<&'static str> {
    versions::MODERN_VERSIONS.to_vec()
}

#[cfg(test)]
mod tests;
