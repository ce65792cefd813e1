//! The 2025-11-25 session wire, sans-IO: one session per Durable Object.
//!
//! Calls run on the same replay engine as every other wire. When a tool
//! suspends, its input requests go out as JSON-RPC requests on the call's
//! SSE stream; every message is written to the session's event log before it
//! is sent, so a client can resume with `Last-Event-ID` (or, having declared
//! `resumableRequests`, with `requests/resume`) after a dropped connection, a
//! restart or an eviction. The answers arrive as separate POSTs; the last
//! answer of a round runs the next one.
//!
//! What the host does with a reply is in its effects: hold the response
//! open for a stream, push events to streams held open, arm the alarm,
//! delete the session.
//!
//! # Layout
//! - `store.rs`: the session's storage trait and an in-memory store.
//! - `events.rs`: SSE event ids, logging, the shape of stream replies.
//! - `calls.rs`: running a call's rounds and turning them into messages.
//! - `streams.rs`: `GET`: replay after `Last-Event-ID`, the standalone stream.
//! - `resume.rs`: resumable requests (SEP-975) and the alarm.

mod calls;
mod events;
mod resume;
mod store;
mod streams;

pub(crate) use calls::{take_outside, Refused, Turn};
pub(crate) use events::logged_push;
pub(crate) use resume::on_alarm;
pub use store::{seed_status, MemorySessionStore, SessionCall, SessionMeta, SessionStore};

use serde_json::{json, Map, Value};

use crate::effects::{Effect, Reply};
use crate::error::{ErrorKind, McpError};
use crate::http::{HttpRequest, HttpResponse};
use crate::protocol::method::Era;
use crate::protocol::versions::{SESSION, SESSION_HEADER, SESSION_OLDER};
use crate::protocol::{parse_message, ClientRequest, Message, Method, Request};
use crate::server::{error_response, result_reply, Env, Server};

/// Handles one request to session `session_id`. `new` is set when the Worker
/// minted the id for an `initialize`. An unknown session gets 404 and
/// nothing is written; a deleted one asks for its storage to go.
pub(crate) async fn handle(
    server: &Server,
    req: &HttpRequest,
    env: &Env,
    store: &dyn SessionStore,
    session_id: &str,
    new: bool,
) -> Reply {
    let meta = match store.meta() {
        Ok(m) => m,
        Err(e) => return Reply::new(error_response(&e, None)),
    };
    // A session without resumable calls must wake by its idle deadline,
    // which only moves later; once an alarm is armed (it fires no later
    // than that) there is nothing to re-arm, and nothing to read again.
    let armed = meta
        .as_ref()
        .is_some_and(|m| m.alarm_at_ms.is_some() && !resumable(m));
    let reply = match handle_inner(server, req, env, store, meta, session_id, new).await {
        Ok(r) => r,
        Err((e, id)) => Reply::new(error_response(&e, id.as_ref())),
    };
    if armed || reply.effects.contains(&Effect::DeleteStorage) {
        return reply;
    }
    match resume::arm(server, store) {
        Ok(Some(at)) => reply.with(Effect::WakeAt(at)),
        _ => reply,
    }
}

type Rejection = (McpError, Option<Value>);

/// The error for an unknown, expired or deleted session.
pub fn not_found() -> McpError {
    McpError::new(
        ErrorKind::SessionNotFound,
        "Session not found: initialize a new session",
    )
}

async fn handle_inner(
    server: &Server,
    req: &HttpRequest,
    env: &Env,
    store: &dyn SessionStore,
    meta: Option<SessionMeta>,
    session_id: &str,
    new: bool,
) -> Result<Reply, Rejection> {
    if new {
        return initialize(server, req, env, store, session_id).map_err(|e| (e, None));
    }
    let Some(mut meta) = meta else {
        return Err((not_found(), None));
    };
    let turn = turn_of(server, req, &meta).map_err(|e| (e, None))?;
    check_version(req).map_err(|e| (e, None))?;
    seen(server, env, store, &mut meta).map_err(|e| (e, None))?;
    match req.method.as_str() {
        "GET" => streams::get(server, req, env, store, &meta, &turn)
            .await
            .map_err(|e| (e, None)),
        "DELETE" => {
            // Its paused calls go with it: no longer held.
            for c in store.calls().map_err(|e| (e, None))? {
                if !c.state.is_final() {
                    crate::server::round::let_go(server, &meta.principal, &c.call_id);
                }
            }
            Ok(Reply::new(HttpResponse::empty(204)).with(Effect::DeleteStorage))
        }
        "POST" => post(server, req, env, store, meta, &turn).await,
        _ => Err((
            McpError::new(ErrorKind::MethodNotAllowed, "Method not allowed"),
            None,
        )),
    }
}

/// Who this request is, for every round it runs (read once). A session
/// belongs to whoever opened it: to anyone else it does not exist (the
/// same answer as an unknown id, so ids cannot be probed).
fn turn_of(
    server: &Server,
    req: &HttpRequest,
    meta: &SessionMeta,
) -> Result<calls::Turn, McpError> {
    let caller = server.authenticate(req)?;
    if caller.principal != meta.principal {
        return Err(not_found());
    }
    Ok(calls::Turn {
        caller,
        resource: server.resource_of(req),
        // Pages are named under the session's own origin (in its meta);
        // only a session older than that field needs this request's.
        origin: if meta.origin.is_empty() {
            crate::auth::origin_of(req.header("host"))
        } else {
            String::new()
        },
    })
}

/// Refuses a request whose `MCP-Protocol-Version` this wire does not
/// speak.
fn check_version(req: &HttpRequest) -> Result<(), McpError> {
    match req.header("mcp-protocol-version") {
        Some(v) if !is_session_version(v.trim()) => Err(McpError::invalid_request(format!(
            "Unsupported MCP-Protocol-Version: {v}"
        ))),
        _ => Ok(()),
    }
}

/// The idle TTL runs from the last request; storing that on every
/// request would be a write per request, so it is stored when it moved
/// by more than the slack (a request that writes the session anyway, a
/// call, stores it exactly). The alarm adds the slack back.
fn seen(
    server: &Server,
    env: &Env,
    store: &dyn SessionStore,
    meta: &mut SessionMeta,
) -> Result<(), McpError> {
    let stale = env.now_ms.saturating_sub(meta.last_seen_ms) >= last_seen_slack(server);
    meta.last_seen_ms = env.now_ms;
    if stale {
        store.put_meta(meta)?;
    }
    Ok(())
}

fn is_session_version(v: &str) -> bool {
    v == SESSION || SESSION_OLDER.contains(&v)
}

/// `initialize`: creates the session and answers with its id.
fn initialize(
    server: &Server,
    req: &HttpRequest,
    env: &Env,
    store: &dyn SessionStore,
    session_id: &str,
) -> Result<Reply, McpError> {
    let (r, version, capabilities) = initialize_request(req)?;
    store.put_meta(&SessionMeta {
        id: session_id.to_string(),
        protocol_version: version.clone(),
        client_capabilities: capabilities,
        log_level: None,
        subscriptions: Vec::new(),
        next_stream: 1,
        last_seen_ms: env.now_ms,
        principal: server.authenticate(req)?.principal,
        alarm_at_ms: None,
        origin: crate::auth::origin_of(req.header("host")),
    })?;
    let mut result = json!({
        "protocolVersion": version,
        "capabilities": session_capabilities(server),
        "serverInfo": {"name": server.config.name, "version": server.config.version},
    });
    if let Some(i) = &server.config.instructions {
        result["instructions"] = json!(i);
    }
    let response = result_reply(&r.id, &result).with_header(SESSION_HEADER, session_id);
    Ok(Reply::new(response))
}

/// The `initialize` request, the version the session speaks (the
/// client's when this wire speaks it, else the latest) and the client's
/// capabilities.
fn initialize_request(req: &HttpRequest) -> Result<(Request, String, Value), McpError> {
    let expected = || McpError::invalid_request("Invalid Request: expected initialize");
    let Message::Request(r) = parse_message(&req.body).map_err(|(e, _)| e)? else {
        return Err(expected());
    };
    if r.kind != Some(Method::Initialize) {
        return Err(expected());
    }
    let (requested, capabilities) = match &r.params {
        ClientRequest::Initialize(p) => (p.protocol_version.as_deref(), p.capabilities.clone()),
        _ => (None, None),
    };
    let version = match requested {
        Some(v) if is_session_version(v) => v.to_string(),
        _ => SESSION.to_string(),
    };
    Ok((r, version, capabilities.unwrap_or_else(|| json!({}))))
}

/// What the server declares to a session's client. List changes are
/// announced on a call's own stream here (there is no standalone stream
/// in polling mode), so no listChanged is promised.
fn session_capabilities(server: &Server) -> Value {
    let mut capabilities = crate::server::capabilities();
    capabilities["tools"] = json!({});
    capabilities["prompts"] = json!({});
    capabilities["resources"] = json!({"subscribe": true});
    if server.registry.has_views() {
        crate::app::declare_ui_extension(&mut capabilities);
    }
    crate::server::declare_skills(&server.registry, &mut capabilities);
    capabilities
}

async fn post(
    server: &Server,
    req: &HttpRequest,
    env: &Env,
    store: &dyn SessionStore,
    mut meta: SessionMeta,
    turn: &calls::Turn,
) -> Result<Reply, Rejection> {
    let message = parse_message(&req.body)?;
    let accepted = |pushes: Vec<crate::effects::Push>| {
        Reply::new(HttpResponse::empty(202)).with_all(pushes.into_iter().map(Effect::Push))
    };
    match message {
        Message::Response(r) => {
            let pushes = calls::answer(server, turn, env, store, &meta, &r.id, r.outcome)
                .await
                .map_err(|e| (e, None))?;
            Ok(accepted(pushes))
        }
        Message::Notification(n) => {
            let mut pushes = Vec::new();
            if n.method == "notifications/cancelled" {
                if let Some(id) = n.params.get("requestId") {
                    pushes = calls::cancel(server, store, &meta, id).map_err(|e| (e, None))?;
                }
            }
            Ok(accepted(pushes))
        }
        Message::Request(r) => {
            let reply = request(server, env, store, &mut meta, &r, turn).await;
            respond(&r, reply)
        }
    }
}

/// What a request's client gets when its method failed.
fn respond(r: &Request, reply: Result<Reply, McpError>) -> Result<Reply, Rejection> {
    match reply {
        Ok(reply) => Ok(reply),
        // A missing scope is the transport's: a 403 with its challenge,
        // which the client acts on (signs in again, then retries).
        Err(e) if e.challenge.is_some() => Err((e, Some(r.id.clone()))),
        // A method's error is a JSON-RPC response like any other; HTTP
        // error statuses are for the transport (session, headers, body).
        Err(e) => Ok(Reply::new(HttpResponse::json(
            200,
            &e.to_response(Some(&r.id)),
        ))),
    }
}

async fn request(
    server: &Server,
    env: &Env,
    store: &dyn SessionStore,
    meta: &mut SessionMeta,
    r: &Request,
    turn: &calls::Turn,
) -> Result<Reply, McpError> {
    let ok = |result: Value| Reply::new(result_reply(&r.id, &result));
    let Some(method) = r.kind else {
        return Err(McpError::method_not_found(&r.method));
    };
    match method {
        Method::Initialize => Err(McpError::invalid_request(
            "Invalid Request: the session is already initialized",
        )),
        Method::Ping => Ok(ok(json!({}))),
        Method::LoggingSetLevel | Method::ResourcesSubscribe | Method::ResourcesUnsubscribe => {
            keep_for_client(store, meta, method, r)?;
            Ok(ok(json!({})))
        }
        m if m.is_call() => calls::start(server, turn, env, store, meta, r).await,
        Method::RequestsGetStatus => Ok(ok(resume::get_status(store, env, r)?)),
        Method::RequestsResume => resume::resume(server, env, store, r),
        m if m.era() == Era::Modern => Err(McpError::method_not_found(m.name())),
        m => match crate::server::stateless_method(server, m, &r.params) {
            Some(result) => Ok(ok(session_shape(result?))),
            None => Err(McpError::method_not_found(&r.method)),
        },
    }
}

/// `logging/setLevel`, `resources/subscribe`, `resources/unsubscribe`:
/// what the session keeps for its client (its log level, the resources it
/// hears of), stored.
fn keep_for_client(
    store: &dyn SessionStore,
    meta: &mut SessionMeta,
    method: Method,
    r: &Request,
) -> Result<(), McpError> {
    if method == Method::LoggingSetLevel {
        let ClientRequest::SetLevel(p) = &r.params else {
            return Err(r.params.unusable());
        };
        meta.log_level = Some(p.level.as_str().to_string());
    } else {
        let uri = r.params.uri()?;
        meta.subscriptions.retain(|u| u != uri);
        if method == Method::ResourcesSubscribe {
            meta.subscriptions.push(uri.to_string());
        }
    }
    store.put_meta(meta)
}

/// Drops the fields 2026-07-28 added to results (`resultType`, `ttlMs`,
/// `cacheScope`): a 2025-11-25 client has no use for them.
pub(crate) fn session_shape(mut result: Value) -> Value {
    if let Value::Object(m) = &mut result {
        for k in ["resultType", "ttlMs", "cacheScope"] {
            m.remove(k);
        }
    }
    result
}

/// Reads `params._meta.progressToken`.
fn progress_token(params: &Value) -> Option<Value> {
    params
        .get("_meta")
        .and_then(|m| m.get("progressToken"))
        .cloned()
}

/// Whether the client declared resumable requests: its calls get a resume
/// token and a `maxWait` (fixed at `initialize`, like every capability).
fn resumable(meta: &SessionMeta) -> bool {
    meta.client_capabilities
        .get("resumableRequests")
        .is_some_and(|v| !v.is_null())
}

/// The client's capabilities as an object (for `ClientCaps::from_json`).
fn caps_of(meta: &SessionMeta) -> Map<String, Value> {
    meta.client_capabilities
        .as_object()
        .cloned()
        .unwrap_or_default()
}

/// How far the stored last-seen time of a session may lag behind its last
/// request: a tenth of the idle TTL, at most a minute.
pub(crate) fn last_seen_slack(server: &Server) -> u64 {
    (server.config.session_ttl_ms / 10).min(60_000)
}

/// When an idle session may be deleted: its TTL after it was last seen,
/// plus the slack the stored time may lag by, so never earlier than its TTL
/// after its last request.
pub(crate) fn idle_deadline(server: &Server, meta: &SessionMeta) -> u64 {
    meta.last_seen_ms
        .saturating_add(server.config.session_ttl_ms)
        .saturating_add(last_seen_slack(server))
}
