//! The Cloudflare glue (wasm32 only): translation, no protocol decisions.
//!
//! [`crate::entry!`] expands, in the user's crate, to the `fetch` event and
//! the `McpObject` Durable Object class; both call in here. The server is
//! built once per isolate (configuration from the Worker's vars and
//! secrets, tools from the user's entry function), then every request is
//! converted, handed to [`crate::host`], and the reply's effects applied.
//!
//! # Layout
//! - `mod.rs`: the server built once per isolate, forwarding to an object.
//! - `fetch.rs`: the fetch entry (synchronous unless something waits).
//! - `convert.rs`: `worker::Request`/`Response` ⇄ [`HttpRequest`]/[`HttpResponse`];
//!   `js.rs`: the conversions every request makes (its head, a response, a
//!   request to an object), each one call into JS.
//! - `keys.rs`: OAuth signing keys: the issuer's JWKS cached per isolate,
//!   signatures verified with WebCrypto.
//! - `object.rs`: the Durable Object: stores, open streams, applying effects.
//! - `call_store.rs`, `session_store.rs`, `task_store.rs`, `index_store.rs`
//!   (the hub's admin index): SQLite storage;
//!   `sql.rs`: what they share (a missing table reads as empty).

mod call_store;
mod convert;
mod fetch;
mod index_store;
mod js;
mod keys;
mod log_rows;
#[cfg(feature = "limits")]
mod meter_store;
mod object;
mod session_store;
mod sql;
mod tally;
mod task_store;

use std::cell::RefCell;
use std::rc::Rc;

use worker::worker_sys::web_sys;
use worker::{Env, Result};

pub use fetch::fetch;
pub use object::Object;

use crate::app::{Bindings, Registry};
use crate::effects::Effect;
use crate::error::McpError;
use crate::host;
use crate::http::HttpRequest;
use crate::server::{Config, Server};
use convert::to_object_request;

/// The user's entry function, as the macro passes it.
pub type Build = fn(&Bindings) -> std::result::Result<Registry, String>;

thread_local! {
    /// The server of this isolate: built on the first request, then shared
    /// by every request and object in it (vars and secrets do not change
    /// within an isolate; a deploy starts new isolates).
    static SERVER: RefCell<Option<Rc<Isolate>>> = const { RefCell::new(None) };
}

/// What an isolate builds once: the server, and the request headers it
/// reads, the only ones copied out of a request (as JS arrays): from a
/// client's at the Worker ([`host::client_headers`]), from a forwarded one
/// in an object ([`host::object_headers`]).
pub(crate) struct Isolate {
    pub(crate) server: Server,
    pub(crate) client_headers: js_sys::Array,
    pub(crate) object_headers: js_sys::Array,
}

/// The isolate's server, if it is built.
pub(crate) fn built() -> Option<Rc<Isolate>> {
    SERVER.with(|s| s.borrow().clone())
}

/// The isolate's server, built on first use.
pub(crate) fn server(env: &Env, build: Build) -> std::result::Result<Rc<Isolate>, McpError> {
    if let Some(s) = built() {
        return Ok(s);
    }
    // Panics are bugs; at least make them readable in `wrangler tail`.
    console_error_panic_hook::set_once();
    let bindings = Bindings::from_env(env.clone());
    // Refused, not served open: the reason goes to the log (it may name a
    // principal), the client hears only that the server is misconfigured.
    let misconfigured = |why: String| {
        worker::console_error!("durable-mcp: the server is misconfigured: {why}");
        McpError::internal("Internal error: the server is misconfigured (its log says why)")
    };
    let mut config = Config::from_lookup(|name| bindings.var(name)).map_err(misconfigured)?;
    // Recorded with each round of a paused call (`[version_metadata]`).
    if let Ok(meta) = env.get_binding::<worker::WorkerVersionMetadata>("CF_VERSION_METADATA") {
        config.worker_version = meta.id();
    }
    let registry =
        build(&bindings).map_err(|e| misconfigured(format!("the entry function failed: {e}")))?;
    let server = Server::new(config, registry);
    let client_headers = js::name_list(&host::client_headers(&server));
    let object_headers = js::name_list(&host::object_headers(&server));
    let isolate = Rc::new(Isolate {
        server,
        client_headers,
        object_headers,
    });
    SERVER.with(|s| *s.borrow_mut() = Some(isolate.clone()));
    Ok(isolate)
}

/// Builds the server while the isolate starts, before its first request,
/// and serves it one rehearsal ([`host::rehearse`]): the entry's start
/// function (`entry!`) calls this as the module loads.
///
/// What a first request paid above a plain workers-rs worker's was mostly
/// this: the server, its registry and the ~25 vars read, and the serve
/// path, each by code running for the first time (V8 compiles a wasm
/// function when it is first called). At the module's top level it runs
/// before the Worker listens; on Cloudflare, while the TLS handshake that
/// brought the first request is still under way. It runs in a promise's
/// callback, so a failure here cannot stop the module from loading: an
/// error is logged and the first request builds the server again (and
/// answers it), a panic marks the instance for the same rebuild a
/// panicking request causes.
pub fn at_start(build: Build) {
    let task = wasm_bindgen::closure::Closure::once_into_js(move |env: wasm_bindgen::JsValue| {
        if let Ok(isolate) = server(&wasm_bindgen::JsCast::unchecked_into::<Env>(env), build) {
            host::rehearse(&isolate.server, js_sys::Date::now() as u64);
        }
    });
    js::at_start(task);
}

/// Sends a request to the object called `name` (opened as
/// [`host::placement`] says) and returns its response as the runtime gave
/// it. The stub is called directly: `Stub::fetch_with_request` wraps the
/// response in a `worker::Response`, which the fetch entry then had to
/// rebuild into a new runtime response.
///
/// `stream`: the client's body, unread, for a request routed by its head.
pub(crate) async fn forward(
    env: &Env,
    name: &str,
    req: &HttpRequest,
    stream: Option<&web_sys::ReadableStream>,
) -> Result<web_sys::Response> {
    use wasm_bindgen::JsCast;
    // Opened as the core says for this name: a regional call shard with
    // its location hint, in its jurisdiction's namespace.
    let place = host::placement(name);
    let stub = js::object_stub(
        env.as_ref(),
        object::BINDING,
        name,
        place.hint,
        place.jurisdiction,
    )?;
    let fetch: js_sys::Function = js_sys::Reflect::get(&stub, &"fetch".into())?
        .dyn_into()
        .map_err(|_| worker::Error::RustError("a stub without fetch".into()))?;
    let request: wasm_bindgen::JsValue = to_object_request(req, stream)?.into();
    let promise: js_sys::Promise = fetch.call1(&stub, &request)?.unchecked_into();
    wasm_bindgen_futures::JsFuture::from(promise)
        .await?
        .dyn_into()
        .map_err(|_| worker::Error::RustError("an object answered with no Response".into()))
}

/// Applies `ListChanged`, `TaskChanged` and `Indexed` effects: tells the
/// hubs that hear of them (`watchers`: the hubs listening for this
/// object's task). A failure is logged, not returned: the request itself
/// succeeded.
pub(crate) async fn broadcast(server: &Server, env: &Env, effects: &[Effect], watchers: &[String]) {
    let changes = crate::effects::Changes::of(effects);
    if changes.is_empty() {
        return;
    }
    for (name, req) in host::announce(server, &changes, watchers) {
        if let Err(e) = forward(env, &name, &req, None).await {
            worker::console_error!("broadcast to {name} failed: {e}");
        }
    }
}

/// Sends the notes rounds queued for their principals' meters (a lease
/// released, a call held or let go), before the response goes: the next
/// request then finds the counts as they are. A failure is logged: the
/// meter's rows run out on their own. `None` when there are none (nothing
/// to wait for); boxed, so that the four places that send them share one
/// copy of its future rather than each inlining it.
pub(crate) fn send_notes(
    server: &Server,
    env: &Env,
) -> Option<std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>> {
    if !cfg!(any(feature = "limits", not(target_arch = "wasm32"))) {
        return None;
    }
    let notes = server.take_notes();
    if notes.is_empty() {
        return None;
    }
    let env = env.clone();
    Some(Box::pin(async move {
        for (name, req) in host::meter_notes(notes) {
            if let Err(e) = forward(&env, &name, &req, None).await {
                worker::console_error!("notes to {name} failed: {e}");
            }
        }
    }))
}

/// Writes the log lines the server queued (each round's line and span) to
/// the console, where `wrangler tail`, Workers Logs and Logpush read them.
pub(crate) fn write_logs(server: &Server) {
    for line in server.take_logs() {
        web_sys::console::log_1(&line.into());
    }
}

/// An object's answer as the core reads it (the admin path's fan-out).
pub(crate) async fn read_response(resp: web_sys::Response) -> crate::http::HttpResponse {
    let status = resp.status();
    let body = match resp.array_buffer() {
        Ok(p) => match wasm_bindgen_futures::JsFuture::from(p).await {
            Ok(buf) => js_sys::Uint8Array::new(&buf).to_vec(),
            Err(_) => Vec::new(),
        },
        Err(_) => Vec::new(),
    };
    crate::http::HttpResponse {
        status,
        headers: Vec::new(),
        body: crate::http::Body::Bytes(body),
    }
}

/// Reads the paused tools from the hub when this isolate's copy is due
/// ([`host::admin::refresh`]), without holding up the request in hand. In
/// the Worker, `ctx.waitUntil` keeps the read alive past the response (a
/// promise left behind is cancelled when the request ends); an object
/// lives on past its response, so there (`ctx` is `None`) it just runs.
pub(crate) fn refresh_paused(
    isolate: &Rc<Isolate>,
    env: &Env,
    now_ms: u64,
    ctx: Option<&wasm_bindgen::JsValue>,
) {
    let Some((name, req)) = host::admin::refresh(&isolate.server, now_ms) else {
        return;
    };
    let isolate = isolate.clone();
    let env = env.clone();
    let read = async move {
        match forward(&env, &name, &req, None).await {
            Ok(resp) => {
                let resp = read_response(resp).await;
                host::admin::refreshed(&isolate.server, &resp, now_ms);
            }
            Err(e) => worker::console_error!("reading the paused tools failed: {e}"),
        }
        Ok(wasm_bindgen::JsValue::UNDEFINED)
    };
    match ctx {
        Some(ctx) => {
            let promise = wasm_bindgen_futures::future_to_promise(read);
            let wait_until = js_sys::Reflect::get(ctx, &"waitUntil".into())
                .ok()
                .and_then(|f| wasm_bindgen::JsCast::dyn_into::<js_sys::Function>(f).ok());
            if let Some(f) = wait_until {
                let _ = f.call1(ctx, &promise);
            }
        }
        None => wasm_bindgen_futures::spawn_local(async move {
            let _ = read.await;
        }),
    }
}

/// Random bytes drawn from the runtime at a time (see [`request_env`]).
const RANDOM_POOL: usize = 1024;

thread_local! {
    /// Bytes from `crypto.getRandomValues` not handed out yet, and how many
    /// of the pool's are used.
    static RANDOM: RefCell<([u8; RANDOM_POOL], usize)> = const { RefCell::new(([0; RANDOM_POOL], RANDOM_POOL)) };
}

/// The clock and fresh randomness for one request. The bytes come from the
/// runtime's CSPRNG 1 KiB at a time, each handed out once: drawn per request,
/// getrandom's three crossings into JS (a view, `getRandomValues`, a copy
/// back) were 2–3 % of a stateless call's CPU.
pub(crate) fn request_env() -> crate::server::Env {
    let random = RANDOM.with(|pool| {
        let (bytes, used) = &mut *pool.borrow_mut();
        if *used + 16 > RANDOM_POOL {
            // getrandom's "js" backend uses crypto.getRandomValues, which does
            // not fail in Workers; zeroed bytes would only weaken ids, never
            // break a call.
            if getrandom::getrandom(bytes).is_err() {
                bytes.fill(0);
            }
            *used = 0;
        }
        let mut out = [0u8; 16];
        out.copy_from_slice(&bytes[*used..*used + 16]);
        // Handed out once: overwritten so no later reader sees them.
        bytes[*used..*used + 16].fill(0);
        *used += 16;
        out
    });
    crate::server::Env {
        // `Date.now()`: one crossing (worker's `Date::now` makes a `Date`
        // object and asks it for the time, two).
        now_ms: js_sys::Date::now() as u64,
        random,
        // The Worker's fetch entry sets it from `request.cf`.
        continent: None,
    }
}
