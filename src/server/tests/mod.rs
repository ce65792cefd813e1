//! The server end to end on the host: a `Harness` owns a server with a fake
//! clock and speaks JSON-RPC over plain `HttpRequest`s.
//!
//! - `modern.rs`: the 2026-07-28 rules, results and MRTR.
//! - `wires.rs`: the saga methods and the streamless sketch.
//! - `durable.rs`: durable mode (compare-and-set, rebuild, rotation).
//! - `session.rs`: the 2025-11-25 session wire.

mod durable;
mod modern;
mod session;
mod wires;

use serde_json::{json, Value};

use super::*;
use crate::engine::block_on;
use crate::http::{AllowList, Body, HttpRequest};
use crate::protocol::versions::{META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, MODERN};
use crate::token::KeyRing;

/// Owns a server and, like the Worker, sends durable calls to per-call
/// stores (standing in for their Durable Objects).
pub(super) struct Harness {
    pub(super) server: Server,
    pub(super) now_ms: u64,
    next_random: u8,
    pub(super) objects: std::collections::HashMap<String, crate::store::MemoryStore>,
    pub(super) sessions: std::collections::HashMap<String, crate::session::MemorySessionStore>,
    /// What session requests pushed to held-open streams, in order.
    pub(super) pushes: Vec<crate::session::Push>,
    /// The live stream the last session reply asked to hold open.
    pub(super) live: Option<String>,
    /// `subscriptions/listen` streams registered with the hub.
    pub(super) listeners: Vec<crate::http::Listen>,
    /// Frames the hub delivered to them.
    pub(super) hub_frames: Vec<Value>,
}

pub(super) struct Reply {
    pub(super) status: u16,
    pub(super) headers: Vec<(String, String)>,
    /// The JSON-RPC response (the last SSE message when streamed).
    pub(super) json: Value,
    /// Every SSE message, when streamed.
    pub(super) events: Vec<Value>,
}

impl Harness {
    pub(super) fn new() -> Self {
        Self::with_config(|_| {})
    }

    pub(super) fn with_config(f: impl FnOnce(&mut Config)) -> Self {
        let mut config = Config {
            keys: KeyRing::parse("test:0123456789abcdef0123456789").expect("key"),
            allowed_hosts: AllowList::loopback(),
            allowed_origins: AllowList::loopback(),
            fixtures: true,
            ..Config::default()
        };
        f(&mut config);
        Self {
            server: Server::new(config.clone(), crate::tools::registry(config.fixtures)),
            now_ms: 1_800_000_000_000,
            next_random: 0,
            objects: Default::default(),
            sessions: Default::default(),
            pushes: Vec::new(),
            live: None,
            listeners: Vec::new(),
            hub_frames: Vec::new(),
        }
    }

    pub(super) fn send(&mut self, req: HttpRequest) -> Reply {
        self.next_random = self.next_random.wrapping_add(1);
        let env = Env {
            now_ms: self.now_ms,
            random: [self.next_random; 16],
        };
        let resp = match self.server.route(&req, &env) {
            Route::Local => block_on(self.server.handle(&req, &env)),
            Route::Object { name, call_id } => {
                let store = self.objects.entry(name).or_default();
                let durable = Durable { call_id, store };
                block_on(self.server.handle_durable(&req, &env, &durable))
            }
            Route::Hub { .. } => {
                let resp = block_on(self.server.handle_forwarded(&req, &env));
                self.listeners.extend(resp.listen.clone());
                resp
            }
            Route::Session {
                name,
                session_id,
                new,
            } => {
                let store = self.sessions.entry(name).or_default();
                let reply = block_on(crate::session::handle(
                    &self.server,
                    &req,
                    &env,
                    store,
                    &session_id,
                    new,
                ));
                self.pushes.extend(reply.pushes);
                self.live = reply.live;
                reply.response
            }
        };
        // What the glue does with list changes: tell every listener.
        for kind in &resp.list_changed {
            let frames: Vec<Value> = self
                .listeners
                .iter()
                .filter_map(|l| l.frame_for(kind))
                .collect();
            self.hub_frames.extend(frames);
        }
        let (json, events) = match &resp.body {
            Body::Bytes(b) => (serde_json::from_slice(b).unwrap_or(Value::Null), vec![]),
            Body::Sse(ev) | Body::SseOpen(ev) => {
                let msgs: Vec<Value> = ev
                    .iter()
                    .filter_map(|e| serde_json::from_str(&e.data).ok())
                    .collect();
                (msgs.last().cloned().unwrap_or(Value::Null), msgs)
            }
            Body::Empty => (Value::Null, vec![]),
        };
        Reply {
            status: resp.status,
            headers: resp.headers,
            json,
            events,
        }
    }

    /// A well-formed modern request with `params` (its `_meta` added) and
    /// the mirrored headers, then `edit` applied to headers.
    pub(super) fn request(
        &mut self,
        method: &str,
        mut params: Value,
        edit: impl FnOnce(&mut Vec<(String, String)>),
    ) -> Reply {
        if params.get("_meta").is_none() {
            params["_meta"] = json!({
                META_PROTOCOL_VERSION: MODERN,
                META_CLIENT_CAPABILITIES: {"elicitation": {}, "sampling": {}, "roots": {}},
            });
        }
        let mut headers = vec![
            ("host".to_string(), "127.0.0.1:8787".to_string()),
            ("content-type".to_string(), "application/json".to_string()),
            (
                "accept".to_string(),
                "application/json, text/event-stream".to_string(),
            ),
            ("mcp-protocol-version".to_string(), MODERN.to_string()),
            ("mcp-method".to_string(), method.to_string()),
        ];
        if let Some(name) = params
            .get("name")
            .or_else(|| params.get("uri"))
            .and_then(Value::as_str)
        {
            headers.push((
                "mcp-name".to_string(),
                crate::http::encode_header_value(name),
            ));
        }
        edit(&mut headers);
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
        self.send(HttpRequest {
            method: "POST".into(),
            path: "/mcp".into(),
            headers,
            body: body.to_string().into_bytes(),
        })
    }

    pub(super) fn call(&mut self, method: &str, params: Value) -> Reply {
        self.request(method, params, |_| {})
    }

    pub(super) fn raw(&mut self, method: &str, headers: &[(&str, &str)], body: &str) -> Reply {
        let mut h: Vec<(String, String)> = vec![("host".into(), "localhost:8787".into())];
        h.extend(headers.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        self.send(HttpRequest {
            method: method.into(),
            path: "/mcp".into(),
            headers: h,
            body: body.as_bytes().to_vec(),
        })
    }
}

pub(super) fn set(headers: &mut Vec<(String, String)>, name: &str, value: Option<&str>) {
    headers.retain(|(k, _)| k != name);
    if let Some(v) = value {
        headers.push((name.to_string(), v.to_string()));
    }
}

pub(super) fn assert_error(r: &Reply, status: u16, code: i64) {
    assert_eq!(r.status, status, "status; body {}", r.json);
    assert_eq!(r.json["error"]["code"], code, "code; body {}", r.json);
}
