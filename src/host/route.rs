//! Which requests the Worker hands to a Durable Object.
//!
//! - A 2025-11-25 session lives in the object named by its `Mcp-Session-Id`;
//!   a session-era `initialize` mints the id.
//! - Calls of durable tools live in the object their call id names: a new
//!   call gets a fresh id, led by a shard of its caller's region drawn at
//!   random (`calls:<place><n>`, or `calls:<n>` for no region, holds that
//!   shard's calls: `place.rs`; unsharded, `call:<id>` holds one); a retry
//!   carries the id inside the (MAC-verified) state.
//! - A task lives in an object named by its task id: `tasks/*` go there by
//!   `taskId`; a `tools/call` of a task tool that declares the tasks
//!   extension goes to a fresh one (the body decides whether it becomes a
//!   task there).
//! - `subscriptions/listen` streams live in the hub.
//!
//! Everything else is served by the stateless Worker. The body is parsed
//! once, here, and handed on with [`Route::Local`].

use serde_json::Value;

use crate::auth::Caller;
use crate::effects::Reply;
use crate::http::HttpRequest;
use crate::protocol::params::State;
use crate::protocol::versions::{
    is_session_id, META_CLIENT_CAPABILITIES, SESSION_HEADER, TASKS_EXTENSION,
};
use crate::protocol::{parse_message, ClientRequest, Message, Method, Request};
use crate::server::Parsed;
use crate::server::{new_call_id, Env, Place, Server};

use super::place::{call_object_name, new_durable_call_id};
use crate::token;

/// The name prefix of the objects holding the `subscriptions/listen`
/// streams: `hub` (one shard) or `hub:<n>` ([`hub_name`]).
pub const HUB: &str = "hub";

/// The name of listen-hub shard `shard` of `shards`. With one shard (the
/// default) it is plain `hub`, as before sharding existed.
pub fn hub_name(shard: u32, shards: u32) -> String {
    if shards <= 1 {
        HUB.to_string()
    } else {
        format!("{HUB}:{shard}")
    }
}

/// Internal headers: set on requests forwarded to an object, dropped when a
/// client sends them. The object's code trusts them because only the
/// Worker can reach an object.
pub(super) const CALL_ID_HEADER: &str = "x-durable-mcp-call-id";
pub(super) const SESSION_ID_HEADER: &str = "x-durable-mcp-session-id";
/// The task id, on requests to a task's object.
pub(super) const TASK_ID_HEADER: &str = "x-durable-mcp-task-id";
/// Set on a page request the Worker sends to the object that keeps the
/// call its (verified) `elicitationId` names.
pub(super) const ELICITATION_HEADER: &str = "x-durable-mcp-elicitation";
/// Set when the Worker minted the session id for an `initialize`.
pub(super) const SESSION_NEW_HEADER: &str = "x-durable-mcp-session-new";
/// On a request telling a task which hub listens for it: the hub's name.
pub(super) const WATCH_HEADER: &str = "x-durable-mcp-watch";
/// `listen <the hub's name>` or `broadcast`, on requests to a hub.
pub(super) const HUB_HEADER: &str = "x-durable-mcp-hub";
const INTERNAL_HEADERS: [&str; 12] = [
    super::admin::object::ADMIN_HEADER,
    super::meter::METER_HEADER,
    super::meter::LEASE_HEADER,
    super::meter::LIMITED_HEADER,
    ELICITATION_HEADER,
    CALL_ID_HEADER,
    SESSION_ID_HEADER,
    SESSION_NEW_HEADER,
    HUB_HEADER,
    TASK_ID_HEADER,
    WATCH_HEADER,
    crate::auth::CALLER_HEADER,
];

/// The request headers the server reads from a client (lower case), so
/// the Worker copies only these out of the runtime's request: the fixed
/// ones and `mcp-param-<name>` for each tool argument that declares
/// `x-mcp-header`. The internal headers are not among them: a client's are
/// never read at all (each `get` is a call into the runtime, on every
/// request). The test server passes only these on too, so a header the code
/// reads but this list misses fails the tests.
pub fn client_headers(server: &Server) -> Vec<String> {
    const FIXED: [&str; 14] = [
        "accept",
        "authorization",
        "content-length",
        "content-type",
        // Read on page paths only: a page pass, a page's own cookies.
        "cookie",
        "host",
        "last-event-id",
        "mcp-dependent-requests",
        "mcp-method",
        "mcp-name",
        "mcp-protocol-version",
        SESSION_HEADER,
        "origin",
        // Read on page paths only: a page's own form post.
        "sec-fetch-site",
    ];
    let mut names: Vec<String> = FIXED.iter().map(|s| s.to_string()).collect();
    for tool in &server.registry.tools {
        let props = tool
            .input_schema_json()
            .get("properties")
            .and_then(Value::as_object);
        for schema in props.into_iter().flat_map(|p| p.values()) {
            if let Some(h) = schema.get("x-mcp-header").and_then(Value::as_str) {
                names.push(format!("mcp-param-{}", h.to_ascii_lowercase()));
            }
        }
    }
    names.sort();
    names.dedup();
    names
}

/// The request headers an object reads from a request the Worker
/// forwarded: the client's ([`client_headers`]) and the internal ones.
pub fn object_headers(server: &Server) -> Vec<String> {
    let mut names = client_headers(server);
    names.extend(INTERNAL_HEADERS.iter().map(|s| s.to_string()));
    names
}

/// Where a request is served.
#[derive(Debug, Clone)]
pub(super) enum Route {
    /// Here, statelessly: pass it to [`serve_local`].
    Local(Local),
    /// In the Durable Object named `name`: send it `request`.
    Object {
        /// The object's name (`calls:<n>`, `call:<id>`, `task:<id>`,
        /// `session:<id>`, `hub`).
        name: String,
        /// The request to forward (the internal headers set).
        request: HttpRequest,
    },
}

/// A request to serve in the Worker, with what routing already learned:
/// the body parsed once (`None`: not a POST to `/mcp`, or a body that is
/// no message: the server says why), the tool it calls looked up once.
#[derive(Debug, Clone)]
pub(super) struct Local {
    parsed: Option<Parsed>,
}

/// Serves a [`Route::Local`] request.
pub(super) async fn serve_local(
    server: &Server,
    req: &HttpRequest,
    env: &Env,
    local: Local,
    caller: Option<Caller>,
) -> Reply {
    if super::page::is_page(server, &req.path) {
        return super::page::serve(server, req, env, super::page::Keeper::Worker).await;
    }
    server
        .serve(req, env, Place::Worker, caller, local.parsed)
        .await
}

/// Decides where `req` is served. Anything unusual (bad JSON, bad state, an
/// unknown tool, an HTTP method no object serves) stays local, where it gets
/// its proper error.
pub(super) fn route(
    server: &Server,
    req: &HttpRequest,
    env: &Env,
) -> (Route, Option<super::meter::Metered>) {
    // A session's requests are routed by their header alone, and their body
    // is read in the session's object (or, for a malformed id, never) —
    // unless limits are on: then a session's calls ask their meter too.
    let parse = req.header(SESSION_HEADER).is_none() || server.limits.any();
    let message = if req.method == "POST" && parse {
        parse_message(&req.body).ok()
    } else {
        None
    };
    let request = match &message {
        Some(Message::Request(r)) => Some(r),
        _ => None,
    };
    // The tool a `tools/call` names: looked up here, once, and carried on.
    let tool = request
        .filter(|r| r.kind == Some(Method::ToolsCall))
        .and_then(|r| r.params.as_call().ok())
        .and_then(|p| server.registry.tool_index(&p.name));
    let object = object_for(server, req, env, request, tool);
    let metered = request.and_then(|r| {
        let name = object.as_ref().map(|(n, _)| n.as_str());
        super::meter::metered(server, r, tool, name, env.now_ms)
    });
    let route = match object {
        Some((name, internal)) => Route::Object {
            name,
            request: forwarded(req, &internal),
        },
        None => Route::Local(Local {
            parsed: message.map(|message| Parsed { message, tool }),
        }),
    };
    (route, metered)
}

/// Routes a request by its head (method, path, headers; `head.body` is
/// empty) when that is all routing needs: a request naming a session, whose
/// body only the session's object reads. The object then gets the client's
/// body as it came, unread by the Worker. A POST must declare its length
/// (an undeclared body has to be read to be held to the limit). `None`:
/// read the body and call [`route`], which decides everything else.
pub(super) fn route_head(server: &Server, head: &HttpRequest, env: &Env) -> Option<Route> {
    head.header(SESSION_HEADER)?;
    // With limits on, a session's calls are read to be metered.
    let read = head.header("content-length").is_none() || server.limits.any();
    if head.method == "POST" && read {
        return None;
    }
    let (route, _) = route(server, head, env);
    matches!(route, Route::Object { .. }).then_some(route)
}

/// The object and its internal headers, or `None` to serve locally.
fn object_for(
    server: &Server,
    req: &HttpRequest,
    env: &Env,
    msg: Option<&Request>,
    tool: Option<usize>,
) -> Option<(String, Vec<(&'static str, String)>)> {
    if super::page::is_page(server, &req.path) {
        return page_object(server, req, env.now_ms);
    }
    // The objects trust the Worker's prechecks (`Inbound`), passed by
    // the time a request is routed. Objects serve GET, POST and DELETE
    // only; anything else is refused here (405).
    if req.path != "/mcp" || !matches!(req.method.as_str(), "GET" | "POST" | "DELETE") {
        return None;
    }
    if let Some(id) = req.header(SESSION_HEADER) {
        let id = id.trim();
        // Anything else cannot name a session: served here, it gets 404.
        if !is_session_id(id) {
            return None;
        }
        return Some((
            format!("session:{id}"),
            vec![(SESSION_ID_HEADER, id.to_string())],
        ));
    }
    let msg = msg?;
    let method = msg.kind?;
    if method == Method::SubscriptionsListen {
        // Streams spread over the shards; a list's change goes to every
        // shard, a task's only to the shards whose streams named it.
        let shards = server.config.listen_shards.max(1);
        let shard =
            u32::from_le_bytes([env.random[0], env.random[1], env.random[2], env.random[3]])
                % shards;
        let hub = hub_name(shard, shards);
        // The hub learns its own name: the tasks a stream names are told it.
        let value = format!("listen {hub}");
        return Some((hub, vec![(HUB_HEADER, value)]));
    }
    // A session-era `initialize` (no 2026 `_meta`) starts a session.
    let modern = crate::server::has_modern_meta(msg);
    if method == Method::Initialize && !modern {
        let session_id = new_call_id(env);
        return Some((
            format!("session:{session_id}"),
            vec![
                (SESSION_ID_HEADER, session_id),
                (SESSION_NEW_HEADER, "1".to_string()),
            ],
        ));
    }
    let tool = tool.and_then(|i| server.registry.tools.get(i));
    if let Some(task) = task_object(method, msg, tool, env) {
        return Some(task);
    }
    let durable = |name: &str| server.registry.find_tool(name).is_some_and(|t| t.durable);
    let state = match (method, &msg.params) {
        (Method::ToolsCall, ClientRequest::Call(p)) if tool.is_none_or(|t| t.durable) => {
            let state = match &p.request_state {
                Some(State::Token(s)) => Some(s.as_str()),
                _ => msg.raw.get("requestState").and_then(Value::as_str),
            };
            // A paused call of a tool this deploy does not serve goes to
            // the object its token names, if durable (its row says what it
            // is); a new call of an unknown tool is answered here.
            if tool.is_none() && state.is_none() {
                return None;
            }
            state
        }
        (Method::ToolsCallSaga, ClientRequest::Call(p)) if durable(&p.name) => None,
        (Method::ToolsResumeSaga, ClientRequest::ResumeSaga(p)) => {
            let token = p.saga_token.as_str();
            let claims = token::open_unbound(&server.config.keys, token, env.now_ms).ok()?;
            if !durable(&claims.target) {
                return None;
            }
            Some(token)
        }
        _ => return None,
    };
    // Only a token whose MAC verifies names an object: a forged one is
    // served here, where it gets its error, and opens none. (The call's
    // object opens it again, in full, with its binding.)
    let call_id = match state {
        None => new_durable_call_id(&server.config, env),
        Some(s) => token::durable_call_id(&server.config.keys, s, env.now_ms)?,
    };
    Some((call_object_name(&call_id), vec![(CALL_ID_HEADER, call_id)]))
}

/// The object keeping the call a page request's `elicitationId` names —
/// only for an id this server issued, to the caller making the request.
fn page_object(
    server: &Server,
    req: &HttpRequest,
    now_ms: u64,
) -> Option<(String, Vec<(&'static str, String)>)> {
    if !matches!(req.method.as_str(), "GET" | "POST") {
        return None;
    }
    let (id, claims) = super::page::routed_elicitation(server, req, now_ms)?;
    use crate::elicitation::Home;
    let mut internal = vec![(ELICITATION_HEADER, id)];
    let name = match claims.home {
        Home::Call(call_id) => {
            let name = call_object_name(&call_id);
            internal.push((CALL_ID_HEADER, call_id));
            name
        }
        Home::Session(session_id, _) => {
            let name = format!("session:{session_id}");
            internal.push((SESSION_ID_HEADER, session_id));
            name
        }
        Home::Task(task_id) => {
            let name = format!("task:{task_id}");
            internal.push((TASK_ID_HEADER, task_id));
            name
        }
    };
    Some((name, internal))
}

/// The task object of a task method (by its `taskId`, when it can name a
/// task), or a fresh one for a call of a task tool from a client that
/// declared the tasks extension.
fn task_object(
    method: Method,
    msg: &Request,
    tool: Option<&crate::app::Tool>,
    env: &Env,
) -> Option<(String, Vec<(&'static str, String)>)> {
    let id = match (method, &msg.params) {
        // (Only the task methods' params are this variant.)
        (_, ClientRequest::Task(p)) => {
            let id = p.task_id.as_str();
            crate::server::task::is_task_id(id).then(|| id.to_string())?
        }
        (Method::ToolsCall, _) => {
            let tool = tool?;
            let declared = msg.meta.as_ref().is_some_and(|m| {
                m[META_CLIENT_CAPABILITIES]["extensions"]
                    .get(TASKS_EXTENSION)
                    .is_some_and(|v| !v.is_null())
            });
            (tool.task.is_some() && declared).then(|| new_call_id(env))?
        }
        _ => return None,
    };
    Some((format!("task:{id}"), vec![(TASK_ID_HEADER, id)]))
}

/// The request an object gets: the client's, less any internal header it
/// sent, plus the Worker's.
fn forwarded(req: &HttpRequest, internal: &[(&str, String)]) -> HttpRequest {
    // The caller the Worker verified goes on; any other internal header
    // (a client's, were one ever copied) does not.
    let mut headers: Vec<(String, String)> = req
        .headers
        .iter()
        .filter(|(k, _)| k == crate::auth::CALLER_HEADER || !INTERNAL_HEADERS.contains(&k.as_str()))
        .cloned()
        .collect();
    headers.extend(internal.iter().map(|(k, v)| (k.to_string(), v.clone())));
    // A page keeps its path (and query); everything else is /mcp.
    let path = if internal.iter().any(|(k, _)| *k == ELICITATION_HEADER) {
        req.path.clone()
    } else {
        "/mcp".into()
    };
    HttpRequest {
        method: req.method.clone(),
        path,
        headers,
        body: req.body.clone(),
    }
}

/// A client cannot reach an object with headers it made up.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::Registry;
    use crate::server::Config;

    #[test]
    fn internal_headers_from_a_client_are_dropped_and_odd_methods_stay_local() {
        let server = Server::new(Config::default(), Registry::new());
        let env = Env::default();
        let mut req = HttpRequest::post(
            "/mcp",
            &[
                ("mcp-session-id", "abc123"),
                (CALL_ID_HEADER, "forged"),
                (SESSION_NEW_HEADER, "1"),
            ],
            "{}",
        );
        match route(&server, &req, &env).0 {
            Route::Object { name, request } => {
                assert_eq!(name, "session:abc123");
                assert_eq!(request.header(CALL_ID_HEADER), None);
                assert_eq!(request.header(SESSION_NEW_HEADER), None);
                assert_eq!(request.header(SESSION_ID_HEADER), Some("abc123"));
            }
            Route::Local(_) => panic!("a session request goes to its object"),
        }
        for method in ["PUT", "PATCH", "HEAD", "OPTIONS"] {
            req.method = method.into();
            assert!(
                matches!(route(&server, &req, &env).0, Route::Local(_)),
                "{method} must not reach a session object"
            );
        }
    }

    #[test]
    fn only_a_session_request_of_declared_length_is_routed_by_its_head() {
        let server = Server::new(Config::default(), Registry::new());
        let env = Env::default();
        let head = |headers: &[(&str, &str)]| HttpRequest::post("/mcp", headers, "");
        let by_head = |req: &HttpRequest| match route_head(&server, req, &env) {
            Some(Route::Object { name, .. }) => Some(name),
            _ => None,
        };
        let sid = ("mcp-session-id", "abc123");
        assert_eq!(
            by_head(&head(&[sid, ("content-length", "12")])).as_deref(),
            Some("session:abc123")
        );
        // An undeclared length must be read to be held to the limit (a
        // declared one over it never gets here: `Inbound`'s prechecks).
        assert_eq!(by_head(&head(&[sid])), None);
        // Everything else needs the body to be routed.
        assert_eq!(by_head(&head(&[("content-length", "12")])), None);
        let mut get = head(&[sid]);
        get.method = "GET".into();
        assert_eq!(by_head(&get).as_deref(), Some("session:abc123"));
    }
}
