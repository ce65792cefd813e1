//! A real side effect for the examples: POST JSON to a URL and read the JSON
//! answer. In the Worker it uses `fetch`; natively there is no network.

use serde_json::Value;

use crate::engine::ToolError;

/// POSTs `body` to `url` and returns the JSON answer.
#[cfg(target_arch = "wasm32")]
pub(crate) async fn post_json(url: &str, body: &Value) -> Result<Value, ToolError> {
    use worker::{Fetch, Headers, Method, Request, RequestInit};
    let fail = |e: worker::Error| ToolError::failed(format!("webhook {url} failed: {e}"));
    let headers = Headers::new();
    headers
        .set("content-type", "application/json")
        .map_err(fail)?;
    let mut init = RequestInit::new();
    init.with_method(Method::Post)
        .with_headers(headers)
        .with_body(Some(body.to_string().into()));
    let req = Request::new_with_init(url, &init).map_err(fail)?;
    let mut resp = Fetch::Request(req).send().await.map_err(fail)?;
    if resp.status_code() >= 300 {
        return Err(ToolError::failed(format!(
            "webhook {url} answered HTTP {}",
            resp.status_code()
        )));
    }
    resp.json::<Value>().await.map_err(fail)
}

/// Natively there is no network: the call fails (unit tests do not use it).
#[cfg(not(target_arch = "wasm32"))]
pub(crate) async fn post_json(url: &str, _body: &Value) -> Result<Value, ToolError> {
    Err(ToolError::failed(format!(
        "webhook {url}: no network outside the Worker"
    )))
}
