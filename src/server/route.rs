//! Which requests the Worker hands to a call's Durable Object.
//!
//! Calls of durable tools live in a Durable Object named by their call id:
//! a fresh id for a new call, or the id inside the (MAC-verified) state the
//! client sent back. Everything else is served by the stateless Worker.

use serde_json::Value;

use super::{new_call_id, Env, Server};
use crate::http::HttpRequest;
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
}

impl Server {
    /// Decides where `req` is served. Anything unusual (bad JSON, bad state,
    /// an unknown tool) stays `Local`, where it gets its proper error.
    pub fn route(&self, req: &HttpRequest, env: &Env) -> Route {
        if req.method != "POST" || req.path != "/mcp" || req.body.len() > self.config.max_body_bytes
        {
            return Route::Local;
        }
        let Ok(msg) = serde_json::from_slice::<Value>(&req.body) else {
            return Route::Local;
        };
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
