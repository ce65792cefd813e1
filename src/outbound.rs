//! Calling out from a tool: POST JSON to a URL and read the JSON answer.
//! In the Worker it uses `fetch`; natively there is no network and the call
//! fails with a tool error, so a tool's unit tests never reach the outside
//! world by accident.
//!
//! Wrap calls with side effects in [`Cx::once`](crate::Cx::once), so a
//! replay never repeats them.

use serde_json::Value;

use crate::engine::ToolError;

/// POSTs `body` as JSON to `url` with `headers` and returns the JSON
/// answer. A transport failure or a status of 300 and above is a tool
/// error naming the URL.
#[cfg(all(feature = "worker", target_arch = "wasm32"))]
pub async fn post_json(
    url: &str,
    body: &Value,
    headers: &[(&str, &str)],
) -> Result<Value, ToolError> {
    use worker::{Fetch, Headers, Method, Request, RequestInit};
    let fail = |e: worker::Error| ToolError::failed(format!("POST {url} failed: {e}"));
    let h = Headers::new();
    h.set("content-type", "application/json").map_err(fail)?;
    for (k, v) in headers {
        h.set(k, v).map_err(fail)?;
    }
    let mut init = RequestInit::new();
    init.with_method(Method::Post)
        .with_headers(h)
        .with_body(Some(body.to_string().into()));
    let req = Request::new_with_init(url, &init).map_err(fail)?;
    let mut resp = Fetch::Request(req).send().await.map_err(fail)?;
    if resp.status_code() >= 300 {
        return Err(ToolError::failed(format!(
            "POST {url} answered HTTP {}",
            resp.status_code()
        )));
    }
    resp.json::<Value>().await.map_err(fail)
}

/// Outside the Worker there is no network: the call fails.
#[cfg(not(all(feature = "worker", target_arch = "wasm32")))]
pub async fn post_json(
    url: &str,
    _body: &Value,
    _headers: &[(&str, &str)],
) -> Result<Value, ToolError> {
    Err(ToolError::failed(format!(
        "POST {url}: no network outside the Worker"
    )))
}
