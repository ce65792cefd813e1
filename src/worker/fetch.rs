//! The Worker's `fetch` event, answered without an executor when nothing
//! has to wait.
//!
//! An `async` export (what `#[worker::event(fetch)]` makes) runs every
//! request through wasm-bindgen's futures: a promise made around a new
//! closure, a task queued with `queueMicrotask`, two more closures to await
//! the body, and the task queued again when it arrives. Profiled under load
//! that machinery was about a tenth of an MRTR round's samples, half of it
//! `queueMicrotask` (workerd wraps each callback); without it a stateless
//! call costs a sixth less CPU (`docs/PERFORMANCE.md`). Here the export is
//! synchronous: the body is awaited in JS (`arrayBuffer().then` with one
//! callback made once per isolate), and the server's future is polled once
//! on the spot; only what really waits (a forwarded request, a tool that
//! awaits, a body of unknown length) goes to an executor, as before.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use worker::worker_sys::web_sys;
use worker::{Env, Result};

use slab::Slab;

use super::convert::{read_body, to_http_head, to_web_response};
use super::keys::WebCrypto;
use super::{broadcast, built, forward, js, refresh_paused, request_env, server, Build, Isolate};
use crate::auth::SeenTokens;
use crate::error::McpError;
use crate::host::{self, Authenticated, Cors, Route};
use crate::http::HttpRequest;
use crate::server::{error_response, Env as ServerEnv};

thread_local! {
    /// The callback every whole-body read continues in (one per isolate:
    /// making a wasm-bindgen closure per request costs a JS function and a
    /// finalizer registration each time).
    static AFTER_BODY: js::Then = Closure::new(after_body as fn(JsValue, JsValue, JsValue) -> JsValue);
    /// The heads of requests whose body is being read, each taken out by
    /// its callback: the callback gets the key, not the head written out
    /// as a string and parsed again (two passes over every header, two
    /// percent of an MRTR round). Both outcomes of the read call back, so
    /// an entry outlives its request only if the runtime drops the read
    /// unsettled, and then holds one small head until the isolate goes.
    static HEADS: RefCell<Slab<HttpRequest>> = const { RefCell::new(Slab::new()) };
    /// OAuth tokens whose signature verified lately, for every request of
    /// this isolate (shared with the futures that wait on a verify).
    static SEEN: Rc<RefCell<SeenTokens>> = Rc::new(RefCell::new(SeenTokens::default()));
}

/// The Worker's `fetch` event: a `Response`, or a `Promise` of one.
pub fn fetch(req: web_sys::Request, env: Env, ctx: JsValue, build: Build) -> JsValue {
    let isolate = match server(&env, build) {
        Ok(s) => s,
        // Logged where it was found (`server`).
        Err(e) => return settle(to_web_response(error_response(&e, None))),
    };
    let http = to_http_head(&req, &isolate.client_headers);
    // CORS first: a preflight is answered here; the headers an allowed
    // origin gets go on whatever the request is answered with.
    match host::cors(&isolate.server, &http) {
        Cors::Nothing => serve(isolate, req, env, ctx, http),
        Cors::Preflight(resp) => settle(to_web_response(resp)),
        Cors::Headers(headers) => js::with_headers(
            &serve(isolate, req, env, ctx, http),
            &js::join_headers(&headers),
        ),
    }
}

/// A request past CORS: signed in, routed, served here or in an object.
fn serve(
    isolate: Rc<Isolate>,
    req: web_sys::Request,
    env: Env,
    ctx: JsValue,
    mut http: HttpRequest,
) -> JsValue {
    let server = &isolate.server;
    let now = request_env();
    refresh_paused(&isolate, &env, now.now_ms, Some(&ctx));
    // An operator's request goes its own way (`host::admin`); without the
    // `admin` feature (about 120 KB of wasm) its paths are unknown paths.
    #[cfg(feature = "admin")]
    if host::admin::is_admin_path(&http.path) {
        return later(admin(isolate.clone(), env, req, http, now));
    }
    // The built-in authorization server in front checked the token; the
    // caller is what it hands over (`ctx.props`). Read on every request:
    // props arriving while that mode is off are refused, not ignored.
    let props = js::props_json(&ctx);
    if let Err(reply) = host::authenticate_props(server, &mut http, props.as_deref()) {
        return settle(to_web_response(reply.response));
    }
    // OAuth: the token is checked before the request is routed anywhere;
    // at once when its signature verified lately, else after a key fetch
    // and a WebCrypto verify (both wait).
    if server.config.oauth.is_some() {
        match SEEN
            .with(|seen| host::authenticate_now(server, &mut http, now.now_ms, &seen.borrow()))
        {
            Authenticated::Yes => {}
            Authenticated::No(reply) => return settle(to_web_response(reply.response)),
            Authenticated::Later => return later(signed_in(isolate.clone(), env, req, http, now)),
        }
    }
    // A session's request goes on by its head; its object reads the body.
    if let Some(Route::Object { name, request }) = host::route_head(server, &http, &now) {
        return later(async move { forward(&env, &name, &request, req.body().as_ref()).await });
    }
    if http.method == "GET" || http.method == "HEAD" {
        return answer(isolate, env, http, now);
    }
    let declared = http
        .header("content-length")
        .and_then(|v| v.trim().parse::<u64>().ok());
    match declared {
        // Over the cap: the core refuses it unread.
        Some(n) if n > server.config.max_body_bytes as u64 => answer(isolate, env, http, now),
        // The whole body in one read, continued in `after_body` (which
        // takes its own clock reading: this one is a moment old by then).
        Some(_) => AFTER_BODY.with(|then| {
            let key = HEADS.with(|heads| heads.borrow_mut().insert(http));
            js::after_body(&req, env.as_ref(), &JsValue::from(key as u32), then)
        }),
        // No declared length: read chunks up to the cap, in an executor.
        None => later(async move {
            let mut http = http;
            if let Err(e) = read_body(&req, &mut http, isolate.server.config.max_body_bytes).await {
                return unreadable(&e);
            }
            respond(&isolate, &env, http, now).await
        }),
    }
}

/// A request to a server with OAuth on: its caller checked first (the
/// reply to a bad token goes back at once), then routed and served as
/// every other request is.
async fn signed_in(
    isolate: Rc<Isolate>,
    env: Env,
    req: web_sys::Request,
    mut http: HttpRequest,
    now: ServerEnv,
) -> Result<web_sys::Response> {
    let server = &isolate.server;
    let seen = SEEN.with(|s| s.clone());
    let verdict = host::authenticate(server, &mut http, now.now_ms, &WebCrypto, &seen).await;
    if let Authenticated::No(reply) = verdict {
        return to_web_response(reply.response);
    }
    if let Some(Route::Object { name, request }) = host::route_head(server, &http, &now) {
        return forward(&env, &name, &request, req.body().as_ref()).await;
    }
    if let Err(e) = read_body(&req, &mut http, server.config.max_body_bytes).await {
        return unreadable(&e);
    }
    respond(&isolate, &env, http, now).await
}

/// An admin request: its operator found (an OAuth token verified first),
/// then each object the job asks sent its request, all of a step at once.
#[cfg(feature = "admin")]
async fn admin(
    isolate: Rc<Isolate>,
    env: Env,
    req: web_sys::Request,
    mut http: HttpRequest,
    now: ServerEnv,
) -> Result<web_sys::Response> {
    let server = &isolate.server;
    if let Err(e) = read_body(&req, &mut http, server.config.max_body_bytes).await {
        return unreadable(&e);
    }
    let name = match host::admin::operator(server, &http, now.now_ms) {
        host::admin::Operator::Yes(name) => name,
        host::admin::Operator::No(reply) => return to_web_response(reply.response),
        host::admin::Operator::Verify => {
            let seen = SEEN.with(|s| s.clone());
            match host::admin::verify(server, &http, now.now_ms, &WebCrypto, &seen).await {
                Ok(name) => name,
                Err(reply) => return to_web_response(reply.response),
            }
        }
    };
    let (mut job, mut step) = host::admin::start(server, &http, &name, &now);
    loop {
        match step {
            host::admin::Step::Answer(reply) => {
                broadcast(server, &env, &reply.effects).await;
                return to_web_response(reply.response);
            }
            host::admin::Step::Ask(asks) => {
                let sent = asks.iter().map(|(name, r)| async {
                    match forward(&env, name, r, None).await {
                        Ok(resp) => super::read_response(resp).await,
                        // An object that did not answer: the job reads a 502.
                        Err(_) => crate::http::HttpResponse::empty(502),
                    }
                });
                let answers = futures_util::future::join_all(sent).await;
                step = job.resume(server, answers);
            }
        }
    }
}

/// The body-read callback: `head` is the request's key in [`HEADS`],
/// `body` the `ArrayBuffer`, or why the read failed.
fn after_body(env: JsValue, head: JsValue, body: JsValue) -> JsValue {
    let env: Env = env.unchecked_into();
    let key = head.as_f64().map(|k| k as usize);
    let head = key.and_then(|k| HEADS.with(|heads| heads.borrow_mut().try_remove(k)));
    let Some(mut http) = head else {
        return settle(Err(worker::Error::RustError(
            "a body arrived for no request".into(),
        )));
    };
    // `fetch` built the isolate's server before it started the read.
    let Some(isolate) = built() else {
        return settle(Err(worker::Error::RustError(
            "the server was not built".into(),
        )));
    };
    let Some(buffer) = body.dyn_ref::<js_sys::ArrayBuffer>() else {
        let why = worker::Error::from(body);
        return settle(unreadable(&why));
    };
    http.body = js_sys::Uint8Array::new(buffer).to_vec();
    answer(isolate, env, http, request_env())
}

/// Serves a request whose body is read: at once when the server's future
/// completes on its first poll (a stateless call to a tool that does not
/// await), else in an executor.
fn answer(isolate: Rc<Isolate>, env: Env, http: HttpRequest, now: ServerEnv) -> JsValue {
    let mut future = Box::pin(async move { respond(&isolate, &env, http, now).await });
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(r) => settle(r),
        // Polled again by the executor with a real waker: every future
        // waiting inside registers that one on its next poll.
        Poll::Pending => later(future),
    }
}

/// The response to a request (body read): routed, served here or forwarded.
async fn respond(
    isolate: &Isolate,
    env: &Env,
    http: HttpRequest,
    now: ServerEnv,
) -> Result<web_sys::Response> {
    let server = &isolate.server;
    match host::route(server, &http, &now) {
        Route::Local(local) => {
            let reply = host::serve_local(server, &http, &now, local).await;
            // The only effect a stateless request has: list changes.
            broadcast(server, env, &reply.effects).await;
            to_web_response(reply.response)
        }
        Route::Object { name, request } => forward(env, &name, &request, None).await,
    }
}

/// A 400 for a body the runtime could not read.
fn unreadable(e: &worker::Error) -> Result<web_sys::Response> {
    let e = McpError::invalid_request(format!("Invalid Request: unreadable request: {e}"));
    to_web_response(error_response(&e, None))
}

/// A future's response, as a promise the runtime awaits.
fn later(future: impl Future<Output = Result<web_sys::Response>> + 'static) -> JsValue {
    promise(Box::pin(future))
}

/// [`later`], not generic: one executor glue for every caller (a generic
/// async block is compiled once per caller's type; the glue is big).
fn promise(future: Pin<Box<dyn Future<Output = Result<web_sys::Response>>>>) -> JsValue {
    wasm_bindgen_futures::future_to_promise(async move { Ok(settle(future.await)) }).into()
}

/// A response as the runtime takes it; an error (a failed JS call, never a
/// protocol error: those are responses) is logged and answered with a 500.
fn settle(response: Result<web_sys::Response>) -> JsValue {
    // Every response passes here: the log lines its rounds queued go out.
    if let Some(isolate) = built() {
        super::write_logs(&isolate.server);
    }
    match response {
        Ok(r) => r.into(),
        Err(e) => {
            worker::console_error!("{e}");
            let e = McpError::internal("internal error");
            match to_web_response(error_response(&e, None)) {
                Ok(r) => r.into(),
                Err(e) => e.into(),
            }
        }
    }
}
