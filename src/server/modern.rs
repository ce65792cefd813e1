//! The 2026-07-28 stateless wire: header and `_meta` rules, then dispatch.
//!
//! Order of checks, each with its own error (PROTOCOL.md, SEP-2575):
//! `_meta` shape (`-32602`) → `MCP-Protocol-Version` equals `_meta`
//! (`-32020`) → version supported (`-32022`) → `Mcp-Method` / `Mcp-Name`
//! equal the body (`-32020`) → method exists (`-32601`, 404).

use serde_json::{json, Map, Value};

use super::{methods, Ctx, Server};
use crate::error::{ErrorKind, McpError};
use crate::http::{decode_header_value, HttpRequest, HttpResponse, SseEvent};
use crate::protocol::versions::{
    META_CLIENT_CAPABILITIES, META_LOG_LEVEL, META_PROTOCOL_VERSION, MODERN_VERSIONS,
};
use crate::protocol::{result_response, Message, Request};

/// Methods of the session era that 2026-07-28 removed.
const REMOVED: [&str; 5] = [
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

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
pub(crate) struct Reply {
    pub(crate) result: Value,
    pub(crate) notifications: Vec<Value>,
    /// A `subscriptions/listen` stream: keep it open after these frames.
    pub(crate) hold_open: bool,
    /// The listener to register, for `subscriptions/listen`.
    pub(crate) listen: Option<crate::http::Listen>,
}

impl Reply {
    pub(crate) fn plain(result: Value) -> Self {
        Self {
            result,
            notifications: Vec::new(),
            hold_open: false,
            listen: None,
        }
    }
}

type Rejection = (McpError, Option<Value>);

pub(super) async fn handle(
    server: &Server,
    req: &HttpRequest,
    message: Message,
    ctx: &Ctx<'_>,
) -> Result<HttpResponse, Rejection> {
    check_content_headers(req)?;
    let request = match message {
        // Notifications and stray responses need no answer on this wire.
        Message::Notification(_) | Message::Response(_) => return Ok(HttpResponse::empty(202)),
        Message::Request(r) => r,
    };
    let id = Some(request.id.clone());
    let meta = validate(req, &request).map_err(|e| (e, id.clone()))?;
    let reply = methods::dispatch(server, &request, &meta, ctx)
        .await
        .map_err(|e| (e, id.clone()))?;
    Ok(respond(&request.id, reply))
}

/// `Accept` must admit JSON and SSE (`*/*` counts); `Content-Type` must be JSON.
fn check_content_headers(req: &HttpRequest) -> Result<(), Rejection> {
    if let Some(accept) = req.header("accept") {
        let a = accept.to_ascii_lowercase();
        let any = a.contains("*/*");
        if !(any || (a.contains("application/json") && a.contains("text/event-stream"))) {
            return Err((
                McpError::new(
                    ErrorKind::NotAcceptable,
                    "Not Acceptable: Accept must list application/json and text/event-stream",
                ),
                None,
            ));
        }
    }
    if let Some(ct) = req.header("content-type") {
        if !ct.to_ascii_lowercase().starts_with("application/json") {
            return Err((
                McpError::new(
                    ErrorKind::UnsupportedMediaType,
                    "Unsupported Media Type: Content-Type must be application/json",
                ),
                None,
            ));
        }
    }
    Ok(())
}

/// Checks `_meta` and the mirrored headers of one request.
pub(crate) fn validate(req: &HttpRequest, request: &Request) -> Result<RequestMeta, McpError> {
    let meta = match request.params.get("_meta") {
        Some(Value::Object(m)) => m,
        Some(_) => {
            return Err(McpError::invalid_params(
                "Invalid params: _meta must be an object",
            ))
        }
        None => {
            return Err(McpError::invalid_params(
                "Invalid params: _meta is required",
            ))
        }
    };
    let version = meta
        .get(META_PROTOCOL_VERSION)
        .and_then(Value::as_str)
        .ok_or_else(|| {
            McpError::invalid_params(format!(
                "Invalid params: _meta[\"{META_PROTOCOL_VERSION}\"] is required"
            ))
        })?;
    let capabilities = match meta.get(META_CLIENT_CAPABILITIES) {
        Some(c @ Value::Object(_)) => c.clone(),
        _ => {
            return Err(McpError::invalid_params(format!(
                "Invalid params: _meta[\"{META_CLIENT_CAPABILITIES}\"] must be an object"
            )))
        }
    };

    let header_version = req.header("mcp-protocol-version").map(str::trim);
    if header_version != Some(version) {
        return Err(McpError::new(
            ErrorKind::HeaderMismatch,
            format!(
                "Header mismatch: MCP-Protocol-Version is {} but _meta names {version}",
                header_version.map_or("missing".to_string(), |h| format!("{h:?}"))
            ),
        ));
    }
    if !MODERN_VERSIONS.contains(&version) {
        return Err(McpError::new(
            ErrorKind::UnsupportedVersion,
            format!("Unsupported protocol version: {version}"),
        )
        .with_data(json!({"supported": MODERN_VERSIONS, "requested": version})));
    }
    check_mirrored(req, "mcp-method", "Mcp-Method", Some(&request.method))?;
    let name_field = match request.method.as_str() {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        _ => None,
    };
    if let Some(field) = name_field {
        let body_value = request.params.get(field).and_then(Value::as_str);
        check_mirrored(req, "mcp-name", "Mcp-Name", body_value)?;
    }

    let log_level = meta
        .get(META_LOG_LEVEL)
        .and_then(Value::as_str)
        .map(str::to_string);
    Ok(RequestMeta {
        capabilities,
        log_level,
        progress_token: meta.get("progressToken").cloned(),
    })
}

/// A header that mirrors a body field must be present and equal to it.
fn check_mirrored(
    req: &HttpRequest,
    header: &str,
    display: &str,
    body: Option<&str>,
) -> Result<(), McpError> {
    let Some(body) = body else {
        // The body field itself is missing: the method's own validation reports it.
        return Ok(());
    };
    let raw = req.header(header);
    let decoded = raw.map(decode_header_value);
    match decoded {
        Some(Some(v)) if v == body => Ok(()),
        Some(None) => Err(McpError::new(
            ErrorKind::HeaderMismatch,
            format!("Header mismatch: {display} is not valid =?base64?…?= encoding"),
        )),
        Some(Some(_)) => Err(McpError::new(
            ErrorKind::HeaderMismatch,
            format!("Header mismatch: {display} does not match the request body"),
        )),
        None => Err(McpError::new(
            ErrorKind::HeaderMismatch,
            format!("Header mismatch: {display} header is required"),
        )),
    }
}

/// Builds the HTTP reply: JSON, or SSE when notifications precede the result.
fn respond(id: &Value, reply: Reply) -> HttpResponse {
    let response = result_response(id, reply.result);
    // List changes go to the listen streams, not to this request's stream.
    let (changes, notifications): (Vec<Value>, Vec<Value>) =
        reply.notifications.into_iter().partition(|n| {
            n["method"]
                .as_str()
                .is_some_and(|m| m.ends_with("/list_changed"))
        });
    let list_changed = changes
        .iter()
        .filter_map(|n| {
            n["method"]
                .as_str()?
                .strip_prefix("notifications/")?
                .strip_suffix("/list_changed")
        })
        .map(str::to_string)
        .collect();
    let mut resp = if reply.hold_open {
        let events = notifications.iter().map(SseEvent::message).collect();
        HttpResponse::sse(events, true)
    } else if notifications.is_empty() {
        HttpResponse::json(200, &response)
    } else {
        let mut events: Vec<SseEvent> = notifications.iter().map(SseEvent::message).collect();
        events.push(SseEvent::message(&response));
        HttpResponse::sse(events, false)
    };
    resp.list_changed = list_changed;
    resp.listen = reply.listen;
    resp
}

/// Whether a request carries the 2026 `_meta` protocol version.
pub(crate) fn has_modern_meta(request: &Request) -> bool {
    request
        .params
        .get("_meta")
        .and_then(|m| m.get(META_PROTOCOL_VERSION))
        .is_some()
}

/// Whether `method` was removed in 2026-07-28.
pub(crate) fn is_removed(method: &str) -> bool {
    REMOVED.contains(&method)
}

/// Reads `params[key]` as an object (absent: empty).
pub(crate) fn object_param(
    params: &Map<String, Value>,
    key: &str,
) -> Result<Map<String, Value>, McpError> {
    match params.get(key) {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(m)) => Ok(m.clone()),
        Some(_) => Err(McpError::invalid_params(format!(
            "Invalid params: {key} must be an object"
        ))),
    }
}
