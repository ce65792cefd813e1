//! `worker::Request`/`Response` ⇄ the core's [`HttpRequest`]/[`HttpResponse`].

use futures_channel::mpsc::UnboundedReceiver;
use futures_util::stream;
use worker::{Headers, Method, Request, RequestInit, Response, Result};

use crate::http::{encode_all, Body, HttpRequest, HttpResponse, KEEPALIVE};

/// How often a held-open SSE stream sends `: keepalive`.
const KEEPALIVE_EVERY: std::time::Duration = std::time::Duration::from_secs(25);

/// Converts a request, reading at most `cap + 1` bytes of its body (none
/// when its `Content-Length` already says more): the core refuses a body
/// over `cap`, and this way the Worker never buffers one.
pub(crate) async fn to_http_request(mut req: Request, cap: usize) -> Result<HttpRequest> {
    use futures_util::StreamExt;
    let method = req.method().to_string().to_ascii_uppercase();
    let path = req.path();
    let headers: Vec<(String, String)> = req
        .headers()
        .entries()
        .map(|(k, v)| (k.to_ascii_lowercase(), v))
        .collect();
    let declared = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.trim().parse::<u64>().ok());
    let mut body = Vec::new();
    let readable = !(method == "GET" || method == "HEAD");
    if readable && declared.is_none_or(|n| n <= cap as u64) {
        let mut stream = req.stream()?;
        while let Some(chunk) = stream.next().await {
            body.extend_from_slice(&chunk?);
            if body.len() > cap {
                break;
            }
        }
    }
    Ok(HttpRequest {
        method,
        path,
        headers,
        body,
    })
}

/// The request sent to a Durable Object, exactly as the router built it.
pub(crate) fn to_object_request(http: &HttpRequest) -> Result<Request> {
    let headers = Headers::new();
    for (k, v) in &http.headers {
        headers.append(k, v)?;
    }
    let mut init = RequestInit::new();
    init.with_method(Method::from(http.method.clone()))
        .with_headers(headers);
    if !http.body.is_empty() {
        init.with_body(Some(js_sys::Uint8Array::from(http.body.as_slice()).into()));
    }
    Request::new_with_init("https://durable-mcp.internal/mcp", &init)
}

/// Converts a response. `live`: for a held-open stream, the channel later
/// events arrive on (the stream ends when its sender is dropped).
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
