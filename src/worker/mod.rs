//! The Cloudflare glue (wasm32 only): translation, no protocol decisions.
//!
//! `fetch` turns a `worker::Request` into an [`HttpRequest`], builds the
//! server from the Worker's vars and secrets, runs it, and turns the
//! [`HttpResponse`] back. Durable Objects live in `object.rs`.
//!
//! # Layout
//! - `mod.rs`: the fetch entry and request/response conversion.
//! - `object.rs`: the `McpObject` Durable Object class and its SQLite store.

mod object;

use futures_util::stream;
use worker::{event, Context, Env, Headers, Method, Request, RequestInit, Response, Result};

use crate::http::{encode_all, Body, HttpRequest, HttpResponse, KEEPALIVE};
use crate::server::{Config, Route, Server};

/// The header that carries the call id from the Worker to the call's object.
/// Set by the Worker only; the stateless path ignores it.
pub(crate) const CALL_ID_HEADER: &str = "x-durable-mcp-call-id";

/// How often a held-open SSE stream sends `: keepalive`.
const KEEPALIVE_EVERY: std::time::Duration = std::time::Duration::from_secs(25);

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
            return to_worker_response(crate::server::error_response(&err, None));
        }
    };
    let server = Server::new(config.clone(), crate::tools::registry(config.fixtures));
    let env_now = request_env();
    match server.route(&http, &env_now) {
        Route::Local => to_worker_response(server.handle(&http, &env_now).await),
        Route::Object { name, call_id } => {
            let stub = env
                .durable_object("MCP_OBJECTS")?
                .id_from_name(&name)?
                .get_stub()?;
            stub.fetch_with_request(to_object_request(&http, &call_id)?)
                .await
        }
    }
}

/// The request forwarded to a call's Durable Object: the original plus the
/// call id header (any such header from the client is replaced).
fn to_object_request(http: &HttpRequest, call_id: &str) -> Result<Request> {
    let headers = Headers::new();
    for (k, v) in &http.headers {
        if k != CALL_ID_HEADER {
            headers.append(k, v)?;
        }
    }
    headers.set(CALL_ID_HEADER, call_id)?;
    let mut init = RequestInit::new();
    init.with_method(Method::Post)
        .with_headers(headers)
        .with_body(Some(js_sys::Uint8Array::from(http.body.as_slice()).into()));
    Request::new_with_init("https://durable-mcp.internal/mcp", &init)
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

pub(crate) fn to_worker_response(resp: HttpResponse) -> Result<Response> {
    let headers = Headers::new();
    for (k, v) in &resp.headers {
        headers.append(k, v)?;
    }
    let out = match resp.body {
        Body::Empty => Response::empty()?,
        Body::Bytes(b) => Response::from_bytes(b)?,
        Body::Sse(events) => Response::from_bytes(encode_all(&events).into_bytes())?,
        Body::SseOpen(events) => {
            let first = encode_all(&events).into_bytes();
            // The first chunk, then a keepalive comment every 25 s until the
            // client goes away (the runtime cancels the stream then).
            let s = stream::unfold(Some(first), |pending| async move {
                match pending {
                    Some(bytes) => Some((Ok::<Vec<u8>, worker::Error>(bytes), None)),
                    None => {
                        worker::Delay::from(KEEPALIVE_EVERY).await;
                        Some((Ok(KEEPALIVE.as_bytes().to_vec()), None))
                    }
                }
            });
            Response::from_stream(s)?
        }
    };
    Ok(out.with_status(resp.status).with_headers(headers))
}
