//! The Cloudflare glue (wasm32 only): translation, no protocol decisions.
//!
//! `fetch` turns a `worker::Request` into an [`HttpRequest`], builds the
//! server from the Worker's vars and secrets, asks it where the request is
//! served ([`Route`]), and either serves it here or forwards it to a Durable
//! Object, then turns the [`HttpResponse`] back.
//!
//! # Layout
//! - `mod.rs`: the fetch entry and request/response conversion.
//! - `object.rs`: the `McpObject` Durable Object class (a call or a session).
//! - `call_store.rs`, `session_store.rs`: their SQLite storage.

mod call_store;
mod object;
mod session_store;

use futures_channel::mpsc::UnboundedReceiver;
use futures_util::stream;
use worker::{event, Context, Env, Headers, Method, Request, RequestInit, Response, Result};

use crate::http::{encode_all, Body, HttpRequest, HttpResponse, KEEPALIVE};
use crate::server::{Config, Route, Server};

/// How often a held-open SSE stream sends `: keepalive`.
const KEEPALIVE_EVERY: std::time::Duration = std::time::Duration::from_secs(25);

/// The header that carries the call id from the Worker to the call's object.
pub(crate) const CALL_ID_HEADER: &str = "x-durable-mcp-call-id";
/// The header that carries the session id from the Worker to the session's object.
pub(crate) const SESSION_ID_HEADER: &str = "x-durable-mcp-session-id";
/// Set by the Worker when it minted the session id for an `initialize`.
pub(crate) const SESSION_NEW_HEADER: &str = "x-durable-mcp-session-new";
/// Set on requests to the listen hub: `listen` or `broadcast`.
pub(crate) const HUB_HEADER: &str = "x-durable-mcp-hub";
/// Internal headers: set by the Worker only, dropped when a client sends them.
const INTERNAL_HEADERS: [&str; 4] = [
    CALL_ID_HEADER,
    SESSION_ID_HEADER,
    SESSION_NEW_HEADER,
    HUB_HEADER,
];
/// The name of the object holding every `subscriptions/listen` stream.
const HUB: &str = "hub";

#[event(start)]
fn start() {
    // Panics are bugs; at least make them readable in `wrangler tail`.
    console_error_panic_hook::set_once();
}

#[event(fetch)]
async fn fetch(req: Request, env: Env, _ctx: Context) -> Result<Response> {
    let http = match to_http_request(req).await {
        Ok(r) => r,
        Err(e) => return Response::error(format!("unreadable request: {e}"), 400),
    };
    let config = match config_from_env(&env) {
        Ok(c) => c,
        Err(e) => {
            worker::console_error!("configuration error: {e}");
            let err = crate::error::McpError::internal(format!("server misconfigured: {e}"));
            return to_worker_response(crate::server::error_response(&err, None), None);
        }
    };
    let server = Server::new(config.clone(), crate::tools::registry(config.fixtures));
    let env_now = request_env();
    let (name, internal) = match server.route(&http, &env_now) {
        Route::Local => {
            let resp = server.handle(&http, &env_now).await;
            broadcast(&env, &resp.list_changed).await;
            return to_worker_response(resp, None);
        }
        Route::Object { name, call_id } => (name, vec![(CALL_ID_HEADER, call_id)]),
        Route::Hub { name } => (name, vec![(HUB_HEADER, "listen".to_string())]),
        Route::Session {
            name,
            session_id,
            new,
        } => {
            let mut h = vec![(SESSION_ID_HEADER, session_id)];
            if new {
                h.push((SESSION_NEW_HEADER, "1".to_string()));
            }
            (name, h)
        }
    };
    let stub = env
        .durable_object("MCP_OBJECTS")?
        .id_from_name(&name)?
        .get_stub()?;
    stub.fetch_with_request(to_object_request(&http, &internal)?)
        .await
}

/// Tells the listen hub which lists changed (a no-op when none did). A
/// failure is logged, not returned: the request itself succeeded.
pub(crate) async fn broadcast(env: &Env, kinds: &[String]) {
    if kinds.is_empty() {
        return;
    }
    let send = async {
        let http = HttpRequest {
            method: "POST".into(),
            path: "/mcp".into(),
            headers: Vec::new(),
            body: serde_json::to_vec(kinds).unwrap_or_default(),
        };
        let req = to_object_request(&http, &[(HUB_HEADER, "broadcast".to_string())])?;
        let stub = env
            .durable_object("MCP_OBJECTS")?
            .id_from_name(HUB)?
            .get_stub()?;
        stub.fetch_with_request(req).await.map(|_| ())
    };
    if let Err(e) = send.await {
        worker::console_error!("list-changed broadcast failed: {e}");
    }
}

/// Reads the configuration from vars (wrangler.toml) and secrets (`.dev.vars`
/// locally, `wrangler secret put` when deployed).
pub(crate) fn config_from_env(env: &Env) -> std::result::Result<Config, String> {
    Config::from_lookup(|name| {
        env.secret(name)
            .map(|s| s.to_string())
            .or_else(|_| env.var(name).map(|v| v.to_string()))
            .ok()
            .filter(|s| !s.is_empty())
    })
}

/// The clock and fresh randomness for one request.
pub(crate) fn request_env() -> crate::server::Env {
    let mut random = [0u8; 16];
    // getrandom's "js" backend uses crypto.getRandomValues, which does not fail
    // in Workers; a zeroed buffer would only weaken ids, never break a call.
    let _ = getrandom::getrandom(&mut random);
    crate::server::Env {
        now_ms: worker::Date::now().as_millis(),
        random,
    }
}

pub(crate) async fn to_http_request(mut req: Request) -> Result<HttpRequest> {
    let method = req.method().to_string().to_ascii_uppercase();
    let path = req.path();
    let headers = req
        .headers()
        .entries()
        .map(|(k, v)| (k.to_ascii_lowercase(), v))
        .collect();
    let body = if method == "GET" || method == "HEAD" {
        Vec::new()
    } else {
        req.bytes().await?
    };
    Ok(HttpRequest {
        method,
        path,
        headers,
        body,
    })
}

/// The request forwarded to a Durable Object: the original plus the internal
/// headers (any such header from the client is dropped).
fn to_object_request(http: &HttpRequest, internal: &[(&str, String)]) -> Result<Request> {
    let headers = Headers::new();
    for (k, v) in &http.headers {
        if !INTERNAL_HEADERS.contains(&k.as_str()) {
            headers.append(k, v)?;
        }
    }
    for (k, v) in internal {
        headers.set(k, v)?;
    }
    let method = match http.method.as_str() {
        "GET" => Method::Get,
        "DELETE" => Method::Delete,
        _ => Method::Post,
    };
    let mut init = RequestInit::new();
    init.with_method(method).with_headers(headers);
    if !http.body.is_empty() {
        init.with_body(Some(js_sys::Uint8Array::from(http.body.as_slice()).into()));
    }
    Request::new_with_init("https://durable-mcp.internal/mcp", &init)
}

/// Converts a response. `live`: for a held-open session stream, the channel
/// later events arrive on (the stream ends when its sender is dropped).
pub(crate) fn to_worker_response(
    resp: HttpResponse,
    live: Option<UnboundedReceiver<Vec<u8>>>,
) -> Result<Response> {
    let headers = Headers::new();
    for (k, v) in &resp.headers {
        headers.append(k, v)?;
    }
    let out = match resp.body {
        Body::Empty => Response::empty()?,
        Body::Bytes(b) => Response::from_bytes(b)?,
        Body::Sse(events) => Response::from_bytes(encode_all(&events).into_bytes())?,
        Body::SseOpen(events) => {
            Response::from_stream(held_open(encode_all(&events).into_bytes(), live))?
        }
    };
    Ok(out.with_status(resp.status).with_headers(headers))
}

/// A held-open SSE stream: the first bytes, then whatever arrives on `live`,
/// with a keepalive comment after 25 s of silence. It ends when the sender is
/// dropped (the call finished, or the stream was closed); without `live` it
/// runs until the client goes away (the runtime cancels it then).
fn held_open(
    first: Vec<u8>,
    live: Option<UnboundedReceiver<Vec<u8>>>,
) -> impl futures_util::Stream<Item = Result<Vec<u8>>> {
    use futures_util::future::{select, Either};
    use futures_util::StreamExt;
    stream::unfold((Some(first), live), |(first, live)| async move {
        if let Some(bytes) = first {
            return Some((Ok(bytes), (None, live)));
        }
        let tick = worker::Delay::from(KEEPALIVE_EVERY);
        let Some(mut rx) = live else {
            tick.await;
            return Some((Ok(KEEPALIVE.as_bytes().to_vec()), (None, None)));
        };
        match select(rx.next(), tick).await {
            Either::Left((Some(bytes), _)) => Some((Ok(bytes), (None, Some(rx)))),
            Either::Left((None, _)) => None,
            Either::Right(_) => Some((Ok(KEEPALIVE.as_bytes().to_vec()), (None, Some(rx)))),
        }
    })
}
