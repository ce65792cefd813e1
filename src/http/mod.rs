//! Streamable HTTP framing as plain data and pure functions.
//!
//! The Worker glue turns a `worker::Request` into an [`HttpRequest`], hands it
//! to the sans-IO server, and turns the [`HttpResponse`] it gets back into a
//! `worker::Response`. Nothing here does IO, so every header rule is testable
//! on the host.
//!
//! # Layout
//! - `headers.rs`: header lookup and the `=?base64?…?=` value form.
//! - `guard.rs`: Origin / Host allow-lists and the body size limit.
//! - `sse.rs`: Server-Sent Events encoding.

mod guard;
mod headers;
mod sse;

pub use guard::{check_origin_and_host, AllowList, GuardRejection};
pub use headers::{decode_header_value, encode_header_value};
pub use sse::{encode_all, SseEvent, KEEPALIVE};

/// An HTTP request as the server sees it: header names are lower-cased.
#[derive(Debug, Clone, Default)]
pub struct HttpRequest {
    /// `GET`, `POST`, `DELETE`, … (upper case).
    pub method: String,
    /// The URL path, without the query string.
    pub path: String,
    /// Header names lower-cased; values as received.
    pub headers: Vec<(String, String)>,
    /// The raw body.
    pub body: Vec<u8>,
}

impl HttpRequest {
    /// A POST to `path` with a JSON body and the given headers.
    pub fn post(path: &str, headers: &[(&str, &str)], body: impl Into<Vec<u8>>) -> Self {
        Self {
            method: "POST".into(),
            path: path.into(),
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_ascii_lowercase(), (*v).to_string()))
                .collect(),
            body: body.into(),
        }
    }

    /// The first value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What the server wants sent back.
#[derive(Debug, Clone)]
pub struct HttpResponse {
    /// HTTP status code.
    pub status: u16,
    /// Headers to set (content type included).
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Body,
}

/// A response body.
#[derive(Debug, Clone)]
pub enum Body {
    /// No body (202, 204, 405 …).
    Empty,
    /// A complete body, already encoded (JSON or plain text).
    Bytes(Vec<u8>),
    /// An SSE stream whose events are all known now; the glue writes them and
    /// closes the stream.
    Sse(Vec<SseEvent>),
    /// An SSE stream that starts with these events and then stays open, sending
    /// `: keepalive` comments, until the client goes away (`subscriptions/listen`).
    SseOpen(Vec<SseEvent>),
}

impl HttpResponse {
    /// A JSON response with `status`.
    pub fn json(status: u16, value: &serde_json::Value) -> Self {
        Self::json_bytes(status, serde_json::to_vec(value).unwrap_or_default())
    }

    /// A JSON response whose body is already serialized.
    pub fn json_bytes(status: u16, body: Vec<u8>) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: Body::Bytes(body),
        }
    }

    /// A response with no body.
    pub fn empty(status: u16) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: Body::Empty,
        }
    }

    /// An SSE response carrying `events`, closed after the last one unless `open`.
    pub fn sse(events: Vec<SseEvent>, open: bool) -> Self {
        Self {
            status: 200,
            headers: vec![
                ("content-type".into(), "text/event-stream".into()),
                ("cache-control".into(), "no-cache".into()),
                ("x-accel-buffering".into(), "no".into()),
            ],
            body: if open {
                Body::SseOpen(events)
            } else {
                Body::Sse(events)
            },
        }
    }

    /// Adds a header.
    pub fn with_header(mut self, name: &str, value: impl Into<String>) -> Self {
        self.headers.push((name.to_ascii_lowercase(), value.into()));
        self
    }

    /// The first value of header `name`.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON, when it is a complete JSON body (tests and glue use it).
    pub fn json_body(&self) -> Option<serde_json::Value> {
        match &self.body {
            Body::Bytes(b) => serde_json::from_slice(b).ok(),
            _ => None,
        }
    }
}
