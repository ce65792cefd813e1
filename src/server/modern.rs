//! The 2026-07-28 stateless wire: header and `_meta` rules, then dispatch.
//!
//! Order of checks, each with its own error (PROTOCOL.md, SEP-2575):
//! `_meta` shape (`-32602`) → `MCP-Protocol-Version` equals `_meta`
//! (`-32020`) → version supported (`-32022`) → `Mcp-Method` / `Mcp-Name`
//! equal the body (`-32020`) → method exists (`-32601`, 404).

use serde_json::{json, Value};

use super::request::{MethodReply, RequestMeta};
use super::{methods, Ctx, Server};
use crate::effects::{Effect, Reply};
use crate::error::{ErrorKind, McpError};
use crate::http::{decode_header_value, HttpRequest, HttpResponse, SseEvent};
use crate::protocol::versions::{
    META_CLIENT_CAPABILITIES, META_LOG_LEVEL, META_PROTOCOL_VERSION, MODERN_VERSIONS,
};
use crate::protocol::{result_response, ListKind, Message, Method, Request};

type Rejection = (McpError, Option<Value>);

pub(super) async fn handle(
    server: &Server,
    req: &HttpRequest,
    message: Message,
    tool: Option<usize>,
    ctx: &Ctx<'_>,
) -> Result<Reply, Rejection> {
    check_content_headers(req)?;
    let request = match message {
        // Notifications and stray responses need no answer on this wire.
        Message::Notification(_) | Message::Response(_) => {
            return Ok(Reply::new(HttpResponse::empty(202)))
        }
        Message::Request(r) => r,
    };
    let id = Some(request.id.clone());
    let meta = validate(req, &request).map_err(|e| (e, id.clone()))?;
    // The tool a `tools/call` names, looked up once: by the router when
    // it read the body, else here.
    let tool = match request.kind {
        Some(Method::ToolsCall) => tool.or_else(|| {
            let name = request.params.as_call().ok()?.name.as_str();
            server.registry.tool_index(name)
        }),
        _ => None,
    };
    check_param_headers(server, req, &request, tool).map_err(|e| (e, id.clone()))?;
    let reply = methods::dispatch(server, &request, &meta, tool, ctx)
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
        // The media type itself, parameters (`; charset=utf-8`) aside.
        let media = ct.split(';').next().unwrap_or("").trim();
        if !media.eq_ignore_ascii_case("application/json") {
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
    let meta = match &request.meta {
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
    if request.kind.and_then(Method::mirrored).is_some() {
        check_mirrored(req, "mcp-name", "Mcp-Name", request.params.mirrored())?;
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

/// SEP-2243 custom headers: a tool argument whose schema names a header
/// (`"x-mcp-header": "Region"`) is mirrored in `Mcp-Param-Region`, so an
/// intermediary can route on it. When the body has the argument, the
/// header must be there and equal to it (`=?base64?…?=` decoded strictly;
/// anything else is taken literally).
fn check_param_headers(
    server: &Server,
    req: &HttpRequest,
    request: &Request,
    tool: Option<usize>,
) -> Result<(), McpError> {
    let Some(tool) = tool.and_then(|i| server.registry.tools.get(i)) else {
        return Ok(());
    };
    let Some(props) = tool
        .input_schema_json()
        .get("properties")
        .and_then(Value::as_object)
    else {
        return Ok(());
    };
    let args = request
        .params
        .as_call()
        .ok()
        .and_then(|p| p.arguments.as_ref());
    for (param, schema) in props {
        let Some(header) = schema.get("x-mcp-header").and_then(Value::as_str) else {
            continue;
        };
        let body = match args.and_then(|a| a.get(param)) {
            None | Some(Value::Null) => continue,
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
        };
        let name = format!("mcp-param-{}", header.to_ascii_lowercase());
        let display = format!("Mcp-Param-{header}");
        check_mirrored(req, &name, &display, Some(&body))?;
    }
    Ok(())
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

/// Builds the reply: JSON, or SSE when notifications precede the result. List
/// changes are not sent on this request's stream: they become effects, for
/// every listen stream.
fn respond(id: &Value, reply: MethodReply) -> Reply {
    let mut changed = Vec::new();
    let mut notifications = Vec::new();
    for n in reply.notifications {
        match n["method"].as_str().and_then(ListKind::from_notification) {
            Some(kind) => changed.push(Effect::ListChanged(kind)),
            None => notifications.push(n),
        }
    }
    let events = || -> Vec<SseEvent> { notifications.iter().map(SseEvent::message).collect() };
    let out = if let Some(listen) = reply.listen {
        Reply::new(HttpResponse::sse(events(), true)).with(Effect::Listen(listen))
    } else if notifications.is_empty() {
        Reply::new(super::result_reply(id, &reply.result))
    } else {
        let mut all = events();
        all.push(SseEvent::message(&result_response(id, reply.result)));
        Reply::new(HttpResponse::sse(all, false))
    };
    out.with_all(changed).with_all(reply.effects)
}
