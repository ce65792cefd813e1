//! The client against a tiny HTTP server: each connection on a thread of
//! its own, one request per connection (`Connection: close`), answered by
//! a closure that sees every request the server got so far.

// Test code: a broken test server or a poisoned lock is a failed test.
#![allow(clippy::unwrap_used)]

mod modern;
mod session;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use crate::Handler;

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) method: String,
    /// Header names lower-cased.
    pub(crate) headers: BTreeMap<String, String>,
    pub(crate) body: Value,
}

/// A reply: status, content type, body; or, for a stream, the events
/// written before the connection closes.
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) content_type: &'static str,
    pub(crate) body: String,
    /// More headers (`Mcp-Session-Id`).
    pub(crate) headers: Vec<(&'static str, String)>,
    /// For a stream whose events come later: polled (every 10 ms, for up
    /// to 5 s) after the headers are sent, until it has the body.
    pub(crate) later: Option<Later>,
}

/// The body of a stream that comes after its headers.
pub(crate) type Later = Box<dyn Fn() -> Option<String> + Send>;

impl Reply {
    pub(crate) fn json(status: u16, body: Value) -> Self {
        Self {
            status,
            content_type: "application/json",
            body: body.to_string(),
            headers: Vec::new(),
            later: None,
        }
    }
    pub(crate) fn sse(events: &str) -> Self {
        Self {
            status: 200,
            content_type: "text/event-stream",
            body: events.to_string(),
            headers: Vec::new(),
            later: None,
        }
    }
    pub(crate) fn accepted() -> Self {
        Self {
            status: 202,
            content_type: "application/json",
            body: String::new(),
            headers: Vec::new(),
            later: None,
        }
    }
    /// An SSE stream whose headers go at once and whose body `later` gives.
    pub(crate) fn sse_later(later: impl Fn() -> Option<String> + Send + 'static) -> Self {
        let mut reply = Self::sse("");
        reply.later = Some(Box::new(later));
        reply
    }
    pub(crate) fn with(mut self, name: &'static str, value: &str) -> Self {
        self.headers.push((name, value.to_string()));
        self
    }
}

type Respond = dyn Fn(&Seen, &[Seen]) -> Reply + Send + Sync;

/// Serves `respond` on a free port; returns the endpoint URL and the log.
pub(crate) fn serve(
    respond: impl Fn(&Seen, &[Seen]) -> Reply + Send + Sync + 'static,
) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let log: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let respond: Arc<Respond> = Arc::new(respond);
    let shared = log.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let (log, respond) = (shared.clone(), respond.clone());
            std::thread::spawn(move || one(conn, &log, &*respond));
        }
    });
    (url, log)
}

fn one(conn: TcpStream, log: &Mutex<Vec<Seen>>, respond: &Respond) {
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let method = line.split(' ').next().unwrap_or_default().to_string();
    let mut headers = BTreeMap::new();
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).unwrap();
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    let len: usize = headers
        .get("content-length")
        .and_then(|l| l.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    reader.read_exact(&mut body).unwrap();
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let seen = Seen {
        method,
        headers,
        body,
    };
    let earlier = {
        let mut log = log.lock().unwrap();
        log.push(seen.clone());
        log.clone()
    };
    let reply = respond(&seen, &earlier);
    let mut conn = conn;
    let mut head = format!(
        "HTTP/1.1 {} X\r\ncontent-type: {}\r\nconnection: close\r\n",
        reply.status, reply.content_type
    );
    if reply.later.is_none() {
        head.push_str(&format!("content-length: {}\r\n", reply.body.len()));
    }
    for (k, v) in &reply.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let _ = conn.write_all(head.as_bytes());
    let _ = conn.flush();
    let body = match &reply.later {
        None => reply.body,
        Some(later) => (0..500)
            .find_map(|_| {
                let body = later();
                if body.is_none() {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                body
            })
            .unwrap_or_default(),
    };
    let _ = conn.write_all(body.as_bytes());
}

/// A handler that accepts forms as they come and records what it saw.
#[derive(Default, Clone)]
pub(crate) struct Accepting(pub(crate) Arc<Mutex<Vec<Value>>>);

impl Handler for Accepting {
    fn elicit(&mut self, params: &Value) -> Value {
        self.0.lock().unwrap().push(params.clone());
        json!({"action": "accept", "content": {}})
    }
    fn sample(&mut self, _: &Value) -> Value {
        json!({"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "m"})
    }
}

/// A JSON-RPC result for request `seen`.
pub(crate) fn result(seen: &Seen, result: Value) -> Reply {
    Reply::json(
        200,
        json!({"jsonrpc": "2.0", "id": seen.body["id"], "result": result}),
    )
}
