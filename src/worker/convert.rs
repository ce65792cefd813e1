//! `worker::Request`/`Response` ⇄ the core's [`HttpRequest`]/[`HttpResponse`].

use futures_channel::mpsc::UnboundedReceiver;
use futures_util::stream;
use wasm_bindgen_futures::JsFuture;
use worker::worker_sys::web_sys;
use worker::{Headers, IntoResponse, Request, Response, Result};

use super::js;
use crate::http::{encode_all, Body, HttpRequest, HttpResponse, KEEPALIVE};

/// How much of a body of unknown length past the cap is read and dropped
/// before the stream is cancelled.
const DRAIN_AFTER_CAP: usize = 4 << 20;

/// How often a held-open SSE stream sends `: keepalive`.
const KEEPALIVE_EVERY: std::time::Duration = std::time::Duration::from_secs(25);

/// Converts a request, reading at most `cap + 1` bytes of its body (none
/// when its `Content-Length` already says more): the core refuses a body
/// over `cap`, and this way the Worker never buffers one.
pub(crate) async fn to_http_request(
    req: &web_sys::Request,
    cap: usize,
    wanted: &js_sys::Array,
) -> Result<HttpRequest> {
    let mut http = to_http_head(req, wanted);
    read_body(req, &mut http, cap).await?;
    Ok(http)
}

/// A request's method, path and the headers the server reads, without its
/// body (which [`read_body`] adds, when routing needs it). One crossing
/// ([`js::request_head`]); `wanted` is the isolate's [`js::name_list`].
pub(crate) fn to_http_head(req: &web_sys::Request, wanted: &js_sys::Array) -> HttpRequest {
    parse_head(&js::request_head(req, wanted))
}

/// The caller's continent (`request.cf.continent`), when the runtime says
/// one.
pub(crate) fn continent_of(req: &web_sys::Request) -> Option<[u8; 2]> {
    let [_, _, a, b] = js::continent(req).to_be_bytes();
    crate::server::continent_code(&[a, b])
}

/// `METHOD \n URL (\n name \n value)*` (what [`js::request_head`]
/// returns) as a request without a body.
fn parse_head(head: &str) -> HttpRequest {
    let mut parts = head.split('\n');
    let method = parts.next().unwrap_or_default().to_ascii_uppercase();
    let url = parts.next().unwrap_or_default();
    let path = path_of(url);
    let mut headers = Vec::new();
    while let (Some(k), Some(v)) = (parts.next(), parts.next()) {
        headers.push((k.to_string(), v.to_string()));
    }
    HttpRequest {
        method,
        path,
        headers,
        body: Vec::new(),
    }
}

/// Reads the body of `req` into `http` (see [`to_http_request`]).
pub(crate) async fn read_body(
    req: &web_sys::Request,
    http: &mut HttpRequest,
    cap: usize,
) -> Result<()> {
    // A GET or HEAD has no body (asked for its stream, the runtime has
    // none to give).
    if http.method == "GET" || http.method == "HEAD" {
        return Ok(());
    }
    let declared = http
        .header("content-length")
        .and_then(|v| v.trim().parse::<u64>().ok());
    http.body = body_of(req, declared, cap).await?;
    Ok(())
}

/// The body of `req`: one read when its declared length is within `cap`,
/// nothing when it is over, else chunks keeping at most `cap + 1` bytes.
pub(crate) async fn body_of(
    req: &web_sys::Request,
    declared: Option<u64>,
    cap: usize,
) -> Result<Vec<u8>> {
    use futures_util::StreamExt;
    // A request with no body at all (`curl -X DELETE`, `fetch()` without
    // one) reads as empty: asked for its stream, the runtime has none to
    // give, and that failed the request with a 500.
    if req.body().is_none() {
        return Ok(Vec::new());
    }
    let mut body = Vec::new();
    match declared {
        // A declared length within the cap: one read of the whole body.
        Some(n) if n <= cap as u64 => {
            let buffer = JsFuture::from(req.array_buffer()?).await?;
            body = js_sys::Uint8Array::new(&buffer).to_vec();
        }
        Some(_) => {}
        // No declared length: read chunks, keeping no more than the cap.
        None => {
            let mut stream = Request::from(Clone::clone(req)).stream()?;
            let mut read = 0usize;
            while let Some(chunk) = stream.next().await {
                let chunk = chunk?;
                read += chunk.len();
                if body.len() <= cap {
                    body.extend_from_slice(&chunk);
                }
                // Past the cap the rest is read and dropped (up to a bound)
                // rather than the stream cancelled: cancelled mid-upload,
                // `wrangler dev`'s proxy took the broken upload for a
                // restart and failed the next request with a 503 (1 in 30).
                if read > cap.saturating_add(DRAIN_AFTER_CAP) {
                    break;
                }
            }
        }
    }
    Ok(body)
}

/// The path and query of a serialized URL (`https://host/mcp?x` →
/// `/mcp?x`). Which paths keep their query is the core's to decide
/// (`host::Inbound`).
fn path_of(url: &str) -> String {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    let rest = &url[after_scheme..];
    let path = rest.find('/').map_or("/", |i| &rest[i..]);
    path.split('#').next().unwrap_or(path).to_string()
}

/// The request sent to a Durable Object, exactly as the router built it,
/// made in one call ([`js::new_request`]; `worker::RequestInit` sets a
/// dozen fields and `worker::Request` reads the result back: a twentieth
/// of a session call, profiled).
/// `stream`: the client's body, unread, to send on instead of `http.body`
/// (a request routed by its head alone).
pub(crate) fn to_object_request(
    http: &HttpRequest,
    stream: Option<&web_sys::ReadableStream>,
) -> Result<web_sys::Request> {
    // A GET or HEAD goes on without a body: one sent with `Content-Length:
    // 0` still comes with an (empty) stream, and the runtime refuses a GET
    // that has a body (a 500 for a session's GET).
    let bodiless = http.method == "GET" || http.method == "HEAD";
    let stream = stream.filter(|_| !bodiless);
    let body = (stream.is_none() && !http.body.is_empty()).then_some(http.body.as_slice());
    // A page keeps its path and query (`host::page`); every other request
    // an object serves is /mcp's.
    let page_url;
    let url = if http.path == "/mcp" {
        "https://durable-mcp.internal/mcp"
    } else {
        page_url = format!("https://durable-mcp.internal{}", http.path);
        &page_url
    };
    Ok(js::new_request(
        url,
        &http.method,
        &js::join_headers(&http.headers),
        body,
        stream.cloned(),
    )?)
}

/// Converts a response for the runtime directly: status, headers and body
/// in one `new Response(…)` (the Worker's fetch entry). A held-open stream
/// goes through [`to_worker_response`].
pub(crate) fn to_web_response(resp: HttpResponse) -> Result<web_sys::Response> {
    let bytes = match resp.body {
        Body::Empty => None,
        Body::Bytes(b) => Some(b),
        Body::Sse(events) => Some(encode_all(&events).into_bytes()),
        Body::SseOpen(_) => {
            return to_worker_response(resp, None)?
                .into_raw()
                .map_err(|e| worker::Error::RustError(format!("{}", e.into())));
        }
    };
    let headers = js::join_headers(&resp.headers);
    Ok(js::new_response(resp.status, &headers, bytes.as_deref())?)
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
