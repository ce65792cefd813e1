//! Sessions against the test server: a server without session ids, the
//! version `initialize` chose, `retry:` before reconnecting, a request
//! that comes on the `GET` stream while a call waits.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{result, serve, Accepting, Reply, Seen};
use crate::{Client, Error, Wire};

fn initialize(seen: &Seen, version: &str) -> Reply {
    result(
        seen,
        json!({"protocolVersion": version, "capabilities": {},
                        "serverInfo": {"name": "t", "version": "1"}}),
    )
}

#[test]
fn a_sessionless_server_is_reconnected_to_after_its_retry() {
    let (url, log) = serve(
        |seen, _| match (seen.method.as_str(), seen.body["method"].as_str()) {
            ("POST", Some("initialize")) => initialize(seen, "2025-06-18"),
            ("POST", Some("tools/call")) => Reply::sse("id: e1\nretry: 300\ndata: \n\n"),
            ("GET", _) => Reply::sse(&format!(
                "id: e2\ndata: {}\n\n",
                json!({"jsonrpc": "2.0", "id": 2, "result": {"content": []}})
            )),
            _ => Reply::accepted(),
        },
    );
    let mut c = Client::new(&url, Accepting::default())
        .with_wire(Wire::Session)
        .with_client_info("tester", "9");
    let started = Instant::now();
    assert!(c.call_tool("slow", json!({})).is_ok());
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(c.protocol_version(), "2025-06-18");
    let log = log.lock().unwrap();
    assert_eq!(log[0].body["params"]["clientInfo"]["name"], "tester");
    let get = &log[3];
    assert_eq!(get.method, "GET");
    assert_eq!(get.headers["last-event-id"], "e1");
    assert_eq!(get.headers["mcp-protocol-version"], "2025-06-18");
    assert!(log
        .iter()
        .all(|s| !s.headers.contains_key("mcp-session-id")));
    // Initialized once, not before every request.
    let inits = log
        .iter()
        .filter(|s| s.body["method"] == "initialize")
        .count();
    assert_eq!(inits, 1);
}

#[test]
fn a_version_this_client_does_not_speak_is_refused() {
    let (url, _) = serve(|seen, _| initialize(seen, "2024-01-01"));
    let mut c = Client::new(&url, Accepting::default()).with_wire(Wire::Session);
    assert!(matches!(
        c.call_tool("t", json!({})),
        Err(Error::Protocol(_))
    ));
}

#[test]
fn a_request_on_the_get_stream_is_answered_while_a_call_waits() {
    let form = json!({"message": "name?", "requestedSchema": {"type": "object",
        "properties": {"name": {"type": "string", "default": "John Doe"}}}});
    let ask =
        json!({"jsonrpc": "2.0", "id": "e-1", "method": "elicitation/create", "params": form});
    // The form's answer, once the client has POSTed it.
    let answer: Arc<Mutex<Option<Value>>> = Arc::default();
    let slot = answer.clone();
    let (url, log) =
        serve(
            move |seen, _| match (seen.method.as_str(), seen.body["method"].as_str()) {
                ("POST", Some("initialize")) => {
                    initialize(seen, "2025-11-25").with("mcp-session-id", "s1")
                }
                ("GET", _) => Reply::sse(&format!("data: {ask}\n\n")),
                ("POST", Some("tools/call")) => {
                    // The call ends only once the form is answered: a client that
                    // does not read the GET stream never gets its result.
                    let (slot, id) = (slot.clone(), seen.body["id"].clone());
                    Reply::sse_later(move || {
                        let content = slot.lock().unwrap().clone()?;
                        let reply = json!({"jsonrpc": "2.0", "id": id,
                    "result": {"content": [{"type": "text", "text": content.to_string()}]}});
                        Some(format!("data: {reply}\n\n"))
                    })
                }
                ("POST", None) if seen.body["id"] == "e-1" => {
                    *slot.lock().unwrap() = Some(seen.body["result"]["content"].clone());
                    Reply::accepted()
                }
                _ => Reply::accepted(),
            },
        );
    let mut c = Client::new(&url, Accepting::default())
        .with_wire(Wire::Session)
        .with_listen_stream(true);
    let out = c.call_tool("asks", json!({}));
    let text = out
        .map(|r| r["content"][0]["text"].clone())
        .unwrap_or_default();
    assert_eq!(text, json!({"name": "John Doe"}).to_string());
    assert!(answer.lock().unwrap().is_some());
    let log = log.lock().unwrap();
    let get = log.iter().find(|s| s.method == "GET");
    assert_eq!(
        get.map(|g| g.headers["mcp-session-id"].as_str()),
        Some("s1")
    );
}
