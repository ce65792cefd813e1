//! The crossings every request makes, written in JS so each is one call.
//!
//! Every call from wasm into the runtime costs a crossing, and every string
//! a conversion. Profiled under load, reading a request's method, URL and
//! headers from Rust (`method()`, `url()`, `headers()`, then the headers
//! joined by `Array.from`, `flat`, `join`) was a tenth of a stateless call,
//! and building a response (`new Headers`, one `append` per header, a
//! `ResponseInit`, a `Uint8Array`, `new Response`) nearly as much. Here
//! each is one call: the request's head comes back as one string holding
//! only the headers the server reads, and a response (or a request to an
//! object) goes out as its status, its headers joined in one string, and a
//! view of its body.
//! (wasm-bindgen bundles this snippet with the generated JS; `worker-build`
//! passes it to esbuild with the rest.)

use wasm_bindgen::prelude::wasm_bindgen;
use worker::worker_sys::web_sys;

#[wasm_bindgen(inline_js = r#"
import * as workers from "cloudflare:workers";

// `task(env)` once the module has loaded, with the Worker's bindings as
// `cloudflare:workers` exports them (nothing where the runtime exports
// none). In a promise's callback: what it throws (a Rust panic included)
// rejects that promise, caught here, and cannot fail the module's load.
export function at_start(task) {
  const env = workers.env;
  if (env === undefined || env === null) return;
  Promise.resolve(env).then(task).catch(() => {});
}

export function request_head(req, wanted) {
  const headers = req.headers;
  let out = req.method + "\n" + req.url;
  for (const name of wanted) {
    const value = headers.get(name);
    if (value !== null) out += "\n" + name + "\n" + value;
  }
  return out;
}

function header_list(joined) {
  const list = new Headers();
  if (joined.length > 0) {
    const parts = joined.split("\n");
    for (let i = 0; i + 1 < parts.length; i += 2) list.append(parts[i], parts[i + 1]);
  }
  return list;
}

// `body` is a view of wasm memory: it is copied before the next allocation
// can move it.
export function new_response(status, headers, body) {
  return new Response(body === undefined ? null : body.slice(), { status, headers: header_list(headers) });
}

// The whole body, then `then(env, head, body)` (or `then(env, head, why)`
// when the read fails), whose answer is the response or a promise of one.
export function after_body(req, env, head, then) {
  return req.arrayBuffer().then((b) => then(env, head, b), (e) => then(env, head, e));
}

// `ctx.props` as JSON when it holds anything (a wrapper's signed-in
// caller), else undefined: the runtime's own is an empty object.
export function props_json(ctx) {
  const props = ctx && ctx.props;
  if (props === null || typeof props !== "object") return undefined;
  for (const _ in props) return JSON.stringify(props);
  return undefined;
}

// `answer` (a response, or a promise of one) with `headers` set: a copy,
// as a response from an object or a fetch has immutable headers; the body
// streams through.
export function with_headers(answer, headers) {
  const add = (res) => {
    if (!(res instanceof Response)) return res;
    const out = new Response(res.body, res);
    const parts = headers.split("\n");
    for (let i = 0; i + 1 < parts.length; i += 2) out.headers.set(parts[i], parts[i + 1]);
    return out;
  };
  return answer instanceof Promise ? answer.then(add) : add(answer);
}

// The caller's continent (`request.cf.continent`: two letters) as a
// number, 0 where the runtime gives none (local development).
export function continent(req) {
  const c = req.cf && req.cf.continent;
  return typeof c === "string" && c.length === 2 ? (c.charCodeAt(0) << 8) | c.charCodeAt(1) : 0;
}

// The stub of the object called `name`, opened as the core says
// (`host::placement`): in `jurisdiction`'s namespace, with `hint` as its
// location hint, when given.
export function object_stub(env, binding, name, hint, jurisdiction) {
  let ns = env[binding];
  if (jurisdiction !== undefined) ns = ns.jurisdiction(jurisdiction);
  const id = ns.idFromName(name);
  return hint === undefined ? ns.get(id) : ns.get(id, { locationHint: hint });
}

export function new_request(url, method, headers, body, stream) {
  // An object's redirect (a page pass's 303) is the client's to follow.
  const init = { method, headers: header_list(headers), redirect: "manual" };
  if (stream !== undefined) init.body = stream;
  else if (body !== undefined) init.body = body.slice();
  return new Request(url, init);
}
"#)]
extern "C" {
    /// Calls `task` with the Worker's bindings once the module has loaded
    /// (see [`super::at_start`]).
    pub(crate) fn at_start(task: wasm_bindgen::JsValue);

    /// `METHOD \n URL (\n name \n value)*`, only the headers in `wanted`
    /// (names as the runtime gives them: lower case; no header holds a
    /// newline).
    pub(crate) fn request_head(req: &web_sys::Request, wanted: &js_sys::Array) -> String;

    /// A response: `headers` is `name \n value (\n name \n value)*` (or
    /// empty); `body` is copied.
    #[wasm_bindgen(catch)]
    pub(crate) fn new_response(
        status: u16,
        headers: &str,
        body: Option<&[u8]>,
    ) -> Result<web_sys::Response, wasm_bindgen::JsValue>;

    /// Reads `req`'s whole body, then calls `then` with `env`, `head` and
    /// the body's `ArrayBuffer` (or the read's error); a promise of what
    /// `then` answers.
    pub(crate) fn after_body(
        req: &web_sys::Request,
        env: &wasm_bindgen::JsValue,
        head: &wasm_bindgen::JsValue,
        then: &Then,
    ) -> wasm_bindgen::JsValue;

    /// `ctx.props` as JSON, or `None` when it is absent or empty (one
    /// crossing: asked on every request).
    pub(crate) fn props_json(ctx: &wasm_bindgen::JsValue) -> Option<String>;

    /// `answer` (a `Response` or a promise of one) with `headers` (as for
    /// [`new_response`]) set on it.
    pub(crate) fn with_headers(
        answer: &wasm_bindgen::JsValue,
        headers: &str,
    ) -> wasm_bindgen::JsValue;

    /// `request.cf.continent`'s two letters (first in the high byte), or
    /// 0 when there is none (one crossing, no string).
    pub(crate) fn continent(req: &web_sys::Request) -> u32;

    /// The stub of object `name` in namespace `binding`, opened in
    /// `jurisdiction`'s namespace and with location hint `hint` when
    /// given (one crossing).
    #[wasm_bindgen(catch)]
    pub(crate) fn object_stub(
        env: &wasm_bindgen::JsValue,
        binding: &str,
        name: &str,
        hint: Option<&str>,
        jurisdiction: Option<&str>,
    ) -> Result<js_sys::Object, wasm_bindgen::JsValue>;

    /// A request to an object: `headers` as for [`new_response`]; the
    /// body is `stream` when given, else a copy of `body`.
    #[wasm_bindgen(catch)]
    pub(crate) fn new_request(
        url: &str,
        method: &str,
        headers: &str,
        body: Option<&[u8]>,
        stream: Option<web_sys::ReadableStream>,
    ) -> Result<web_sys::Request, wasm_bindgen::JsValue>;
}

/// The callback [`after_body`] continues in: `(env, head, body)` to a
/// `Response`, or a promise of one.
pub(crate) type Then = wasm_bindgen::closure::Closure<
    dyn Fn(
        wasm_bindgen::JsValue,
        wasm_bindgen::JsValue,
        wasm_bindgen::JsValue,
    ) -> wasm_bindgen::JsValue,
>;

/// `headers` joined as [`new_response`] and [`new_request`] take them.
pub(crate) fn join_headers(headers: &[(String, String)]) -> String {
    let mut joined = String::new();
    for (k, v) in headers {
        if !joined.is_empty() {
            joined.push('\n');
        }
        joined.push_str(k);
        joined.push('\n');
        joined.push_str(v);
    }
    joined
}

/// `names` as a JS array, built once per isolate for [`request_head`].
pub(crate) fn name_list(names: &[String]) -> js_sys::Array {
    names.iter().map(wasm_bindgen::JsValue::from).collect()
}
