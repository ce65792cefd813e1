//! Which requests the Worker hands to a Durable Object.
//!
//! - A 2025-11-25 session lives in the object named by its `Mcp-Session-Id`;
//!   a session-era `initialize` mints the id.
//! - Calls of durable tools live in an object named by their call id: a fresh
//!   id for a new call, or the id inside the (MAC-verified) state the client
//!   sent back.
//!
//! Everything else is served by the stateless Worker.

use serde_json::Value;

use super::{new_call_id, Env, Server};
use crate::http::HttpRequest;
use crate::protocol::versions::META_PROTOCOL_VERSION;
use crate::session::SESSION_HEADER;
use crate::token;

/// Where a request is served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// In the Worker, statelessly.
    Local,
    /// In the Durable Object named `name`, as call `call_id`.
    Object {
        /// The Durable Object's name (`call:<id>`).
        name: String,
        /// The call id it serves.
        call_id: String,
    },
    /// In the object that holds every `subscriptions/listen` stream (`hub`),
    /// so list changes can reach them all.
    Hub {
        /// The Durable Object's name.
        name: String,
    },
    /// In the 2025-11-25 session's Durable Object (`session:<id>`).
    Session {
        /// The Durable Object's name.
        name: String,
        /// The `Mcp-Session-Id`.
        session_id: String,
        /// True for an `initialize`: the id was just minted.
        new: bool,
    },
}

impl Server {
    /// Decides where `req` is served. Anything unusual (bad JSON, bad state,
    /// an unknown tool) stays `Local`, where it gets its proper error.
    pub fn route(&self, req: &HttpRequest, env: &Env) -> Route {
        // The objects trust the Worker's checks: anything that fails them
        // stays here and gets its error.
        if req.path != "/mcp" || self.precheck(req).is_err() {
            return Route::Local;
        }
        if let Some(id) = req.header(SESSION_HEADER) {
            let id = id.trim();
            // Ids we mint are hex; anything else cannot name a session.
            if id.is_empty() || id.len() > 64 || !id.bytes().all(|b| b.is_ascii_alphanumeric()) {
                return Route::Local;
            }
            return Route::Session {
                name: format!("session:{id}"),
                session_id: id.to_string(),
                new: false,
            };
        }
        if req.method != "POST" {
            return Route::Local;
        }
        let Ok(msg) = serde_json::from_slice::<Value>(&req.body) else {
            return Route::Local;
        };
        if msg["method"] == "subscriptions/listen" {
            return Route::Hub {
                name: "hub".to_string(),
            };
        }
        // A session-era `initialize` (no 2026 `_meta`) starts a session.
        let modern = msg["params"]["_meta"].get(META_PROTOCOL_VERSION).is_some();
        if msg["method"] == "initialize" && msg.get("id").is_some() && !modern {
            let session_id = new_call_id(env);
            return Route::Session {
                name: format!("session:{session_id}"),
                session_id,
                new: true,
            };
        }
        let params = &msg["params"];
        let state = |v: &Value| v.as_str().map(str::to_string);
        let (tool, state) = match msg["method"].as_str() {
            Some("tools/call") => (
                params["name"].as_str().map(str::to_string),
                state(&params["requestState"]).or_else(|| state(&msg["requestState"])),
            ),
            Some("tools/callSaga") => (params["name"].as_str().map(str::to_string), None),
            Some("tools/resumeSaga") => {
                let token = params["sagaToken"].as_str().unwrap_or_default();
                match token::open_unbound(&self.config.keys, token, env.now_ms) {
                    Ok(c) => (Some(c.target), Some(token.to_string())),
                    Err(_) => return Route::Local,
                }
            }
            _ => return Route::Local,
        };
        let durable = tool
            .and_then(|name| self.registry.find_tool(&name).map(|t| t.durable))
            .unwrap_or(false);
        if !durable {
            return Route::Local;
        }
        let call_id = match state {
            None => new_call_id(env),
            Some(s) => match token::open_unbound(&self.config.keys, &s, env.now_ms) {
                Ok(c) if c.durable => c.sid,
                _ => return Route::Local,
            },
        };
        Route::Object {
            name: format!("call:{call_id}"),
            call_id,
        }
    }
}
