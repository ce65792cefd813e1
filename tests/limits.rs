//! Limits per principal and per tool (issue 45), natively through
//! `durable_mcp::testing`, with two API-token principals: each kind trips
//! exactly at its number with `-32013`, 429 and `Retry-After`, before
//! anything runs or is stored; the other principal is never refused; a
//! paused call still completes; a task over a limit waits `working` and
//! runs later; every count is back to zero when the calls end.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use durable_mcp::auth::SignIn;
use durable_mcp::limits::Limits;
use durable_mcp::testing::{TestReply, TestServer};
use durable_mcp::{form, text, CallToolResult, Cx, Registry, Tool, ToolError};
use serde_json::{json, Value};

const ADA: &str = "tok-ada-0123456789abcdef";
const BOB: &str = "tok-bob-0123456789abcdef";
const TASKS: &str = "io.modelcontextprotocol/tasks";

thread_local! {
    /// How many times a body ran its effect.
    static RAN: Rc<Cell<u32>> = Rc::new(Cell::new(0));
}

fn ran() -> u32 {
    RAN.with(|r| r.get())
}

async fn ping(_: &mut Cx, _: Value) -> Result<String, ToolError> {
    RAN.with(|r| r.set(r.get() + 1));
    Ok("pong".into())
}

async fn ask(cx: &mut Cx, _: Value) -> Result<CallToolResult, ToolError> {
    let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}});
    cx.elicit_with("confirm", form("Go?", schema)).await?;
    RAN.with(|r| r.set(r.get() + 1));
    Ok(text("done"))
}

fn server(limits: &str) -> TestServer {
    server_with(limits, Limits::new())
}

/// A server whose `ping` has `ping_limits` in code, `limits` the var's.
fn server_with(limits: &str, ping_limits: Limits) -> TestServer {
    let mut r = Registry::new();
    r.tool(Tool::new("ping", ping).limits(ping_limits));
    r.tool(Tool::new("ask", ask).durable());
    r.tool(Tool::new("job", ask).task());
    let limits = limits.to_string();
    TestServer::with_config(r, move |c| {
        let tokens = format!("ada:{ADA},bob:{BOB}");
        c.sign_in = SignIn::from_lookup(|k| (k == "API_TOKENS").then(|| tokens.clone()))
            .expect("as the test set it up");
        c.limits =
            Some(durable_mcp::limits::Policy::parse(&limits).expect("as the test set it up"));
        c.admin_tokens = durable_mcp::auth::parse_api_tokens(&format!("ops:{ADMIN_TOKEN}"))
            .expect("as the test set it up");
    })
}

fn call(s: &mut TestServer, who: &str, tool: &str, extra: Value) -> TestReply {
    let mut params = json!({"name": tool, "arguments": {}});
    if let Some(m) = extra.as_object() {
        for (k, v) in m {
            params[k] = v.clone();
        }
    }
    let bearer = format!("Bearer {who}");
    s.request("tools/call", params, |h| {
        h.push(("authorization".into(), bearer));
    })
}

fn refused(r: &TestReply, limit: &str, max: u64) {
    assert_eq!(r.status, 429, "{}", r.json);
    assert_eq!(r.json["error"]["code"], -32013, "{}", r.json);
    assert_eq!(r.json["error"]["data"]["limit"], limit, "{}", r.json);
    assert_eq!(r.json["error"]["data"]["max"], max, "{}", r.json);
    let after = r.header("retry-after").expect("Retry-After");
    assert_eq!(
        Some(after),
        r.json["error"]["data"]["retryAfter"]
            .to_string()
            .as_str()
            .into()
    );
}

fn objects_written(s: &TestServer) -> usize {
    s.objects
        .iter()
        .filter(|(n, o)| !n.starts_with("meter:") && o.writes() > 0)
        .count()
}

#[test]
fn a_rate_trips_at_its_number_for_one_principal_only() {
    // Set in code; a var that sets nothing for it leaves it so.
    let code = Limits::new().rate(3, Duration::from_secs(60));
    let mut s = server_with(r#"{"tools": {"ask": {"held": 9}}}"#, code);
    s.now_ms = 1_000_000 * 60_000;
    let before = ran();
    for _ in 0..3 {
        let r = call(&mut s, ADA, "ping", json!({}));
        assert_eq!(r.status, 200, "{}", r.json);
    }
    let r = call(&mut s, ADA, "ping", json!({}));
    refused(&r, "rate", 3);
    assert_eq!(r.json["error"]["data"]["scope"], "tool");
    assert_eq!(r.header("retry-after"), Some("60"));
    assert_eq!(ran() - before, 3, "the refused call ran nothing");
    // The other principal has its own count: ada's refusals cost it nothing.
    for _ in 0..3 {
        assert_eq!(call(&mut s, BOB, "ping", json!({})).status, 200);
    }
    // A refusal writes a line naming the limit.
    assert!(s
        .logs
        .iter()
        .any(|l| l.contains("\"limited\"") && l.contains("\"rate\"")));
    // The next window takes calls again.
    s.now_ms += 60_000;
    assert_eq!(call(&mut s, ADA, "ping", json!({})).status, 200);
    // A daily quota the same way.
    let mut s = server(r#"{"all": {"daily": 2}}"#);
    assert_eq!(call(&mut s, ADA, "ping", json!({})).status, 200);
    assert_eq!(call(&mut s, ADA, "ask", json!({})).status, 200);
    let r = call(&mut s, ADA, "ping", json!({}));
    refused(&r, "daily", 2);
    assert_eq!(r.json["error"]["data"]["scope"], "principal");
}

#[test]
fn paused_calls_held_trip_and_still_complete() {
    let mut s = server(r#"{"all": {"held": 2}}"#);
    let mut states = Vec::new();
    for _ in 0..2 {
        let r = call(&mut s, ADA, "ask", json!({}));
        assert_eq!(
            r.json["result"]["resultType"], "input_required",
            "{}",
            r.json
        );
        states.push(
            r.json["result"]["requestState"]
                .as_str()
                .expect("as the test set it up")
                .to_string(),
        );
    }
    let stored = objects_written(&s);
    let r = call(&mut s, ADA, "ask", json!({}));
    refused(&r, "held", 2);
    assert_eq!(objects_written(&s), stored, "a refused call stores nothing");
    assert_eq!(call(&mut s, BOB, "ask", json!({})).status, 200);
    // The held calls go on, and their places free up as they end.
    let before = ran();
    for st in &states {
        let answer = json!({"requestState": st,
            "inputResponses": {"confirm": {"action": "accept", "content": {"ok": true}}}});
        let r = call(&mut s, ADA, "ask", answer);
        assert_eq!(r.json["result"]["content"][0]["text"], "done", "{}", r.json);
    }
    assert_eq!(ran() - before, 2);
    let r = call(&mut s, ADA, "ask", json!({}));
    assert_eq!(
        r.json["result"]["resultType"], "input_required",
        "{}",
        r.json
    );
    // What an operator reads: one held, nothing running.
    let u = usage(&mut s, "ada");
    assert_eq!(u["all"]["held"], 1, "{u}");
    assert_eq!(u["all"]["active"], 0, "{u}");
}

#[test]
fn a_task_over_a_limit_waits_then_runs() {
    let mut s = server(r#"{"tools": {"job": {"rate": "1/60s"}}}"#);
    s.now_ms = 1_000_000 * 60_000;
    let meta = json!({"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "extensions": {TASKS: {}}}}});
    let first = call(&mut s, ADA, "job", meta.clone());
    assert_eq!(first.json["result"]["resultType"], "task", "{}", first.json);
    let second = call(&mut s, ADA, "job", meta.clone());
    assert_eq!(second.status, 200, "a task is not refused: {}", second.json);
    assert_eq!(
        second.json["result"]["status"], "working",
        "{}",
        second.json
    );
    let msg = second.json["result"]["statusMessage"]
        .as_str()
        .unwrap_or("");
    assert!(msg.contains("Waiting for a limit"), "{msg}");
    let u = usage(&mut s, "ada");
    assert_eq!(u["waiting"].as_array().map(Vec::len), Some(1), "{u}");
    assert_eq!(u["all"]["waiting"], 1, "{u}");
    let id = second.json["result"]["taskId"]
        .as_str()
        .expect("as the test set it up")
        .to_string();
    // Before its window opens its alarm asks again and it still waits.
    s.fire_alarms();
    let task = |s: &mut TestServer| {
        let bearer = format!("Bearer {ADA}");
        let mut params = meta.clone();
        params["taskId"] = json!(id);
        s.request("tasks/get", params, |h| {
            h.push(("authorization".into(), bearer));
        })
    };
    let r = task(&mut s);
    assert_eq!(r.json["result"]["status"], "working", "{}", r.json);
    s.now_ms += 60_000;
    s.fire_alarms();
    s.fire_alarms();
    let r = task(&mut s);
    assert_eq!(
        r.json["result"]["status"], "input_required",
        "it ran: {}",
        r.json
    );
}

/// An operator's view of `who`'s usage (`GET /admin/api/limits/<who>`).
fn usage(s: &mut TestServer, who: &str) -> Value {
    let r = s.admin(
        ADMIN_TOKEN,
        "GET",
        &format!("/admin/api/limits/{who}"),
        None,
    );
    assert_eq!(r.status, 200, "{}", r.json);
    r.json["principals"][0].clone()
}

const ADMIN_TOKEN: &str = "admin-token-0123456789";

#[test]
fn a_window_only_limit_asks_its_meter_once_per_batch() {
    let mut s = server(r#"{"all": {"rate": "100000000/60s"}}"#);
    let before = s.cost().object_requests;
    for _ in 0..200 {
        assert_eq!(call(&mut s, ADA, "ping", json!({})).status, 200);
    }
    let asked = s.cost().object_requests - before;
    // 1,024 admitted per request to the meter.
    assert_eq!(asked, 1, "requests to the meter for 200 calls");
}

#[test]
fn a_window_s_refusals_are_logged_once_it_is_over_under_their_own_principal() {
    let mut s = server(r#"{"all": {"rate": "1/60s"}}"#);
    s.now_ms = 1_000_000 * 60_000;
    assert_eq!(call(&mut s, ADA, "ping", json!({})).status, 200);
    // The first refusal asks the meter and is logged; the next two are
    // answered from the isolate and only counted.
    for _ in 0..3 {
        refused(&call(&mut s, ADA, "ping", json!({})), "rate", 1);
    }
    let limited = |s: &TestServer| -> Vec<Value> {
        s.logs
            .iter()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|l| l["event"] == "limited")
            .collect()
    };
    let ada = durable_mcp::trace::principal_digest("ada");
    let lines = limited(&s);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["refused"], 1);
    assert_eq!(lines[0]["principal"], ada.as_str());
    // Ada's window is over; bob's call is the next to look: the count is
    // written then, under ada's name, not the caller's.
    s.now_ms += 60_000;
    assert_eq!(call(&mut s, BOB, "ping", json!({})).status, 200);
    let lines = limited(&s);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[1]["refused"], 2);
    assert_eq!(lines[1]["principal"], ada.as_str());
}

#[test]
fn a_call_ended_without_a_round_frees_its_place() {
    let mut s = server(r#"{"all": {"held": 5}}"#);
    // A durable call, paused, then cancelled by an operator.
    let r = call(&mut s, ADA, "ask", json!({}));
    assert_eq!(
        r.json["result"]["resultType"], "input_required",
        "{}",
        r.json
    );
    assert_eq!(usage(&mut s, "ada")["all"]["held"], 1);
    let listed = s.admin(ADMIN_TOKEN, "GET", "/admin/api/calls", None);
    let id = listed.json["calls"][0]["id"]
        .as_str()
        .expect("a listed call")
        .to_string();
    let body = json!({"ids": [id]});
    let r = s.admin(ADMIN_TOKEN, "POST", "/admin/api/calls/cancel", Some(&body));
    assert_eq!(r.status, 200, "{}", r.json);
    assert_eq!(
        usage(&mut s, "ada")["all"]["held"],
        0,
        "an operator's cancel"
    );
    // A session's call, paused, then cancelled by its client; another
    // paused, then the session deleted.
    let bearer = format!("Bearer {ADA}");
    let auth = ("authorization", bearer.as_str());
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "limits-test", "version": "1"}}});
    let r = s.post(&[auth], &init);
    let sid = r.header("mcp-session-id").expect("a session").to_string();
    let h = [
        auth,
        ("mcp-session-id", sid.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    s.post(
        &h,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    for id in [11, 12] {
        let c = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "ask", "arguments": {}}});
        s.post(&h, &c);
    }
    assert_eq!(usage(&mut s, "ada")["all"]["held"], 2);
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 11}});
    s.post(&h, &cancel);
    assert_eq!(
        usage(&mut s, "ada")["all"]["held"],
        1,
        "its client's cancel"
    );
    let mut del = durable_mcp::http::HttpRequest::post("/mcp", &h, "");
    del.method = "DELETE".into();
    del.headers.push(("host".into(), "127.0.0.1:8787".into()));
    assert_eq!(s.send(del).status, 204);
    assert_eq!(
        usage(&mut s, "ada")["all"]["held"],
        0,
        "its session deleted"
    );
}
