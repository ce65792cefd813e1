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

use super::convert::{body_of, to_http_head, to_web_response};
use super::keys::WebCrypto;
use super::{
    broadcast, built, forward, js, read_response, refresh_paused, request_env, server, Build,
    Isolate,
};
use crate::auth::SeenTokens;
use crate::error::McpError;
use crate::host::{Inbound, Step};
use crate::http::{HttpRequest, HttpResponse};
use crate::server::error_response;

thread_local! {
    /// The callback every whole-body read continues in (one per isolate:
    /// making a wasm-bindgen closure per request costs a JS function and a
    /// finalizer registration each time).
    static AFTER_BODY: js::Then = Closure::new(after_body as fn(JsValue, JsValue, JsValue) -> JsValue);
    /// The requests whose body is being read, each taken out by its
    /// callback: the callback gets the key, not the head written out as a
    /// string and parsed again (two passes over every header, two percent
    /// of an MRTR round). Both outcomes of the read call back, so an entry
    /// outlives its request only if the runtime drops the read unsettled,
    /// and then holds one small head until the isolate goes.
    static HEADS: RefCell<Slab<Inbound>> = const { RefCell::new(Slab::new()) };
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
    let mut now = request_env();
    now.continent = super::convert::continent_of(&req);
    refresh_paused(&isolate, &env, now.now_ms, Some(&ctx));
    // What a wrapping authorization server hands over (`OAUTH_WRAPPER`).
    let props = js::props_json(&ctx);
    let (mut inbound, step) = SEEN
        .with(|seen| Inbound::start(&isolate.server, http, now, props.as_deref(), &seen.borrow()));
    let cors = inbound.take_cors();
    let answer = drive(isolate, Some(req), env, inbound, step);
    if cors.is_empty() {
        answer
    } else {
        js::with_headers(&answer, &js::join_headers(&cors))
    }
}

/// Does what `step` asks, at once while nothing has to wait: an answer
/// without effects, a body of declared length (read in JS, continued in
/// [`after_body`]), a request served on the first poll of its future.
/// Anything else (a forward, a signature check, a tool that awaits) goes
/// on in an executor ([`run`]).
fn drive(
    isolate: Rc<Isolate>,
    req: Option<web_sys::Request>,
    env: Env,
    inbound: Inbound,
    step: Step,
) -> JsValue {
    match (step, &req) {
        (Step::Answer(reply), _) if reply.effects.is_empty() => {
            settle(to_web_response(reply.response))
        }
        (
            Step::ReadBody {
                declared: Some(_), ..
            },
            Some(r),
        ) => read_whole_body(r, &env, inbound),
        (Step::Serve, _) => serve_now(isolate, env, inbound),
        (step, _) => later(run(isolate, req, env, inbound, step)),
    }
}

/// The whole body in one read in JS, continued in [`after_body`] (the
/// request waits in [`HEADS`] meanwhile).
fn read_whole_body(req: &web_sys::Request, env: &Env, inbound: Inbound) -> JsValue {
    AFTER_BODY.with(|then| {
        let key = HEADS.with(|heads| heads.borrow_mut().insert(inbound));
        js::after_body(req, env.as_ref(), &JsValue::from(key as u32), then)
    })
}

/// Serves the request, answered at once when its future is ready on the
/// first poll (nothing inside waited), else by the executor.
fn serve_now(isolate: Rc<Isolate>, env: Env, mut inbound: Inbound) -> JsValue {
    let mut future = Box::pin(async move {
        let reply = inbound.serve(&isolate.server).await;
        // The only effect a request served here has: list changes.
        broadcast(&isolate.server, &env, &reply.effects, &[]).await;
        if let Some(sent) = super::send_notes(&isolate.server, &env) {
            sent.await;
        }
        to_web_response(reply.response)
    });
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(r) => settle(r),
        // Polled again by the executor with a real waker: every
        // future waiting inside registers that one on its next poll.
        Poll::Pending => later(future),
    }
}

/// [`drive`], for steps that wait: each satisfied in turn until the
/// request is answered or forwarded.
async fn run(
    isolate: Rc<Isolate>,
    req: Option<web_sys::Request>,
    env: Env,
    mut inbound: Inbound,
    mut step: Step,
) -> Result<web_sys::Response> {
    let server = &isolate.server;
    loop {
        step = match step {
            Step::Answer(reply) => {
                broadcast(server, &env, &reply.effects, &[]).await;
                return to_web_response(reply.response);
            }
            Step::Forward {
                name,
                request,
                unread,
            } => {
                let body = req.as_ref().filter(|_| unread).and_then(|r| r.body());
                return forward(&env, &name, &request, body.as_ref()).await;
            }
            Step::ReadBody { declared, limit } => {
                let body = read_body(req.as_ref(), declared, limit).await;
                inbound.body(server, body)
            }
            Step::Verify => {
                let seen = SEEN.with(|s| s.clone());
                inbound.verify(server, &WebCrypto, &seen).await
            }
            Step::Serve => {
                let reply = inbound.serve(server).await;
                broadcast(server, &env, &reply.effects, &[]).await;
                if let Some(sent) = super::send_notes(server, &env) {
                    sent.await;
                }
                return to_web_response(reply.response);
            }
            Step::Ask(asks) => inbound.answers(server, ask_each(&env, &asks).await),
        };
    }
}

/// The request's body as the executor reads it (no request: [`after_body`]
/// read it already, and an empty one is what follows).
async fn read_body(
    req: Option<&web_sys::Request>,
    declared: Option<u64>,
    limit: usize,
) -> std::result::Result<Vec<u8>, String> {
    match req {
        Some(r) => body_of(r, declared, limit).await.map_err(|e| e.to_string()),
        None => Ok(Vec::new()),
    }
}

/// Sends each request to the object named, all at once; the responses in
/// the same order.
async fn ask_each(env: &Env, asks: &[(String, HttpRequest)]) -> Vec<HttpResponse> {
    let sent = asks.iter().map(|(name, r)| async {
        match forward(env, name, r, None).await {
            Ok(resp) => read_response(resp).await,
            // An object that did not answer: the job reads a 502.
            Err(_) => HttpResponse::empty(502),
        }
    });
    futures_util::future::join_all(sent).await
}

/// The body-read callback: `head` is the request's key in [`HEADS`],
/// `body` the `ArrayBuffer`, or why the read failed.
fn after_body(env: JsValue, head: JsValue, body: JsValue) -> JsValue {
    let env: Env = env.unchecked_into();
    let key = head.as_f64().map(|k| k as usize);
    let inbound = key.and_then(|k| HEADS.with(|heads| heads.borrow_mut().try_remove(k)));
    let Some(mut inbound) = inbound else {
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
    let body = match body.dyn_ref::<js_sys::ArrayBuffer>() {
        Some(buffer) => Ok(js_sys::Uint8Array::new(buffer).to_vec()),
        None => Err(worker::Error::from(body).to_string()),
    };
    let step = inbound.body(&isolate.server, body);
    drive(isolate, None, env, inbound, step)
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
