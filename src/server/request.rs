//! What the method handlers share: a modern request's `_meta`, the shape of
//! a method's reply, and small parameter readers. A leaf: the wire modules
//! and the methods both use it, and it uses neither.

use serde_json::Value;

use crate::effects::{Effect, Listen};
use crate::protocol::versions::META_PROTOCOL_VERSION;
use crate::protocol::Request;

/// A request's body as the router in the Worker read it, handed on so it
/// is read once: the message, and where the tool a `tools/call` names is
/// in the registry's catalog (looked up once, there).
#[derive(Debug, Clone)]
pub(crate) struct Parsed {
    pub(crate) message: crate::protocol::Message,
    pub(crate) tool: Option<usize>,
}

/// What one modern request declared in `_meta`.
#[derive(Debug, Clone)]
pub(crate) struct RequestMeta {
    /// The client's capabilities for this request.
    pub(crate) capabilities: Value,
    /// The lowest log level wanted, if any.
    pub(crate) log_level: Option<String>,
    /// The progress token, if any.
    pub(crate) progress_token: Option<Value>,
}

/// The outcome of a method: a result object plus notifications to send first.
pub(crate) struct MethodReply {
    pub(crate) result: Value,
    pub(crate) notifications: Vec<Value>,
    /// A `subscriptions/listen` stream to keep open after these frames.
    pub(crate) listen: Option<Listen>,
    /// What the host does besides answering (a task's alarm).
    pub(crate) effects: Vec<Effect>,
}

impl MethodReply {
    pub(crate) fn plain(result: Value) -> Self {
        Self {
            result,
            notifications: Vec::new(),
            listen: None,
            effects: Vec::new(),
        }
    }
}

/// Whether a request carries the 2026 `_meta` protocol version.
pub(crate) fn has_modern_meta(request: &Request) -> bool {
    (request.meta.as_ref())
        .and_then(|m| m.get(META_PROTOCOL_VERSION))
        .is_some()
}
