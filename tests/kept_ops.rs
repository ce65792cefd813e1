//! Operations on one kept call (issue 42, part 4), natively through
//! `durable_mcp::testing`, on each keeper: an operator answers the
//! question a call waits on, on its client's behalf (the tool sees who
//! answered: `Cx::answered_by`), and asks a call again from one of its
//! questions (its answer and every later one dropped; refused past an
//! effect that ran on them). Both are noted in the call's trail, and
//! neither runs an effect twice.

use std::sync::atomic::{AtomicUsize, Ordering};

use durable_mcp::testing::{TestReply, TestServer};
use durable_mcp::{form, text, CallToolResult, Cx, Registry, Tool, ToolError};
use serde_json::{json, Value};

const OPS: &str = "admin-token-0123456789";

/// Effect runs, per test.
static RUNS: [AtomicUsize; 4] = [const { AtomicUsize::new(0) }; 4];

/// Asks `first`, runs `prep` if `args.prep`, asks `approve`, ships once,
/// and says who approved.
async fn approve(cx: &mut Cx, args: Value) -> Result<CallToolResult, ToolError> {
    let slot = args["slot"].as_u64().unwrap_or(0) as usize;
    let schema = json!({"type": "object", "properties": {"note": {"type": "string"}}});
    cx.elicit_with("first", form("What for?", schema.clone()))
        .await?;
    if args["prep"] == true {
        cx.once("prep", async || Ok(1u8)).await?;
    }
    let yes = cx.elicit_with("approve", form("Ship it?", schema)).await?;
    let who = cx
        .answered_by("approve")
        .unwrap_or_else(|| "the client".into());
    if !yes.accepted() {
        return Ok(text(format!("declined by {who}")));
    }
    let n: usize = cx
        .once("ship", async || {
            Ok(RUNS[slot].fetch_add(1, Ordering::SeqCst) + 1)
        })
        .await?;
    Ok(text(format!("approved by {who}, effect run {n}")))
}

fn server() -> TestServer {
    let mut r = Registry::new();
    r.tool(Tool::new("approve", approve).durable());
    r.tool(Tool::new("approve_task", approve).task());
    TestServer::with_config(r, |c| {
        c.admin_tokens =
            durable_mcp::auth::parse_api_tokens(&format!("ops:{OPS}")).expect("tokens");
    })
}

fn admin(s: &mut TestServer, method: &str, path: &str, body: Value) -> TestReply {
    s.admin(OPS, method, path, Some(&body).filter(|b| !b.is_null()))
}

fn accept() -> Value {
    json!({"action": "accept", "content": {"note": "ok"}})
}

/// The operator answers `key` of call `id`.
fn answer_for(s: &mut TestServer, id: &str, key: &str) -> TestReply {
    let body = json!({"id": id, "key": key, "answer": accept()});
    admin(s, "POST", "/admin/api/calls/answer", body)
}

fn rewind(s: &mut TestServer, id: &str, key: &str) -> TestReply {
    let body = json!({"id": id, "key": key});
    admin(s, "POST", "/admin/api/calls/rewind", body)
}

/// The one call of `kind` the server keeps: its admin id.
fn the_call(s: &mut TestServer, kind: &str) -> String {
    admin(s, "GET", "/admin/api/calls?limit=500", Value::Null).json["calls"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["kind"] == kind))
        .and_then(|c| c["id"].as_str())
        .expect("the call")
        .to_string()
}

fn shown(s: &mut TestServer, id: &str) -> Value {
    admin(s, "GET", &format!("/admin/api/calls/{id}"), Value::Null).json
}

/// A durable round: `(result, requestState)`.
fn round(s: &mut TestServer, args: &Value, state: Option<&str>, answers: Value) -> Value {
    let mut extra = json!({"inputResponses": answers});
    if let Some(st) = state {
        extra["requestState"] = json!(st);
    }
    s.call_tool("approve", args.clone(), extra).json["result"].clone()
}

fn asks(result: &Value) -> Vec<String> {
    result["inputRequests"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

#[test]
fn an_operator_asks_a_durable_call_again_then_approves_it_for_its_client() {
    let mut s = server();
    let args = json!({"slot": 0});
    let r = round(&mut s, &args, None, json!({}));
    assert_eq!(asks(&r), ["first"], "{r}");
    let state = r["requestState"].as_str().expect("a state").to_string();
    let r = round(&mut s, &args, Some(&state), json!({"first": accept()}));
    assert_eq!(asks(&r), ["approve"], "{r}");
    let state = r["requestState"].as_str().expect("a state").to_string();
    let id = the_call(&mut s, "durable");

    // The user changed their mind about `first`: asked again.
    let r = rewind(&mut s, &id, "first");
    assert_eq!(r.json["done"], json!([id]), "{}", r.json);
    let d = shown(&mut s, &id);
    assert_eq!(d["answers"], json!([]), "{d}");
    assert!(
        d["notes"][0]["what"]
            .as_str()
            .is_some_and(|n| n.contains("asked again from \"first\"")),
        "{d}"
    );
    // The client's next round (it answers `approve`) is asked `first`.
    let r = round(&mut s, &args, Some(&state), json!({"approve": accept()}));
    assert_eq!(asks(&r), ["first"], "{r}");
    let state = r["requestState"].as_str().expect("a state").to_string();
    let r = round(&mut s, &args, Some(&state), json!({"first": accept()}));
    assert_eq!(asks(&r), ["approve"], "{r}");
    let state = r["requestState"].as_str().expect("a state").to_string();

    // Only a question it waits on is answered for it, with an answer that fits.
    let r = answer_for(&mut s, &id, "first");
    assert_eq!(r.json["skipped"][&id], "not waiting for this question");
    let bad = json!({"id": id, "key": "approve", "answer": {"action": "maybe"}});
    let r = admin(&mut s, "POST", "/admin/api/calls/answer", bad);
    assert_eq!(
        r.json["skipped"][&id],
        "the answer does not fit the question"
    );
    let r = answer_for(&mut s, &id, "approve");
    assert_eq!(r.json["done"], json!([id]), "{}", r.json);
    let d = shown(&mut s, &id);
    let by = d["answers"]
        .as_array()
        .and_then(|a| a.iter().find(|a| a["key"] == "approve"))
        .map(|a| a["by"].clone());
    assert_eq!(by, Some(json!("operator:ops")), "{d}");

    // The client comes back (its own answer too late): the operator's
    // answer stands, the tool sees who gave it, the effect runs once.
    let r = round(&mut s, &args, Some(&state), json!({"approve": accept()}));
    let said = r["content"][0]["text"].as_str().unwrap_or_default();
    assert_eq!(said, "approved by operator:ops, effect run 1", "{r}");
    let r = round(&mut s, &args, Some(&state), json!({"approve": accept()}));
    let again = r["content"][0]["text"].as_str().unwrap_or_default();
    assert_eq!(again, said, "a retry is a replay: {r}");
    assert_eq!(RUNS[0].load(Ordering::SeqCst), 1);

    // Finished: neither answered nor asked again, and why.
    let r = answer_for(&mut s, &id, "approve");
    assert_eq!(r.json["skipped"][&id], "finished", "{}", r.json);
    let r = rewind(&mut s, &id, "first");
    assert_eq!(r.json["skipped"][&id], "finished", "{}", r.json);
    let r = rewind(&mut s, "d.nope", "first");
    assert_eq!(r.json["skipped"]["d.nope"], "not found", "{}", r.json);
    let r = admin(&mut s, "POST", "/admin/api/calls/rewind", json!({"id": id}));
    assert_eq!(r.status, 400, "no key: {}", r.json);
    let no_answer = json!({"id": id, "key": "approve"});
    let r = admin(&mut s, "POST", "/admin/api/calls/answer", no_answer);
    assert_eq!(r.status, 400, "no answer: {}", r.json);
}

#[test]
fn no_rewind_past_an_effect_that_ran_on_the_answer() {
    let mut s = server();
    let args = json!({"slot": 1, "prep": true});
    let r = round(&mut s, &args, None, json!({}));
    let state = r["requestState"].as_str().expect("a state").to_string();
    let r = round(&mut s, &args, Some(&state), json!({"first": accept()}));
    assert_eq!(asks(&r), ["approve"], "{r}");
    let id = the_call(&mut s, "durable");
    let r = rewind(&mut s, &id, "first");
    assert_eq!(
        r.json["skipped"][&id], "an effect ran on that answer",
        "{}",
        r.json
    );
    let d = shown(&mut s, &id);
    assert_eq!(d["answers"].as_array().map(Vec::len), Some(1), "{d}");
}

/// A 2026-07-28 client's `_meta` that declares the tasks extension.
fn task_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":
            {"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}},
    })
}

#[test]
fn an_operator_answers_a_task_and_its_alarm_finishes_it() {
    let mut s = server();
    let meta = task_meta();
    let r = s.call(
        "tools/call",
        json!({"name": "approve_task", "arguments": {"slot": 2}, "_meta": meta}),
    );
    let task_id = r.json["result"]["taskId"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(!task_id.is_empty(), "{}", r.json);
    s.fire_alarms();
    let r = s.call(
        "tasks/update",
        json!({"taskId": task_id, "_meta": meta, "inputResponses": {"first": accept()}}),
    );
    assert!(r.json.get("error").is_none(), "{}", r.json);
    s.fire_alarms();
    let r = s.call("tasks/get", json!({"taskId": task_id, "_meta": meta}));
    assert_eq!(r.json["result"]["status"], "input_required", "{}", r.json);
    let id = the_call(&mut s, "task");

    // Asked again from `first`: its alarm asks it at once.
    let r = rewind(&mut s, &id, "first");
    assert_eq!(r.json["done"], json!([id]), "{}", r.json);
    s.fire_alarms();
    let d = shown(&mut s, &id);
    let pending: Vec<&Value> = d["pending"].as_array().into_iter().flatten().collect();
    assert_eq!(pending.len(), 1, "{d}");
    assert_eq!(pending[0]["key"], "first", "{d}");
    let r = s.call(
        "tasks/update",
        json!({"taskId": task_id, "_meta": meta, "inputResponses": {"first": accept()}}),
    );
    assert!(r.json.get("error").is_none(), "{}", r.json);
    s.fire_alarms();

    // Approved by an operator: the alarm finishes it, the effect once.
    let r = answer_for(&mut s, &id, "approve");
    assert_eq!(r.json["done"], json!([id]), "{}", r.json);
    s.fire_alarms();
    let r = s.call("tasks/get", json!({"taskId": task_id, "_meta": meta}));
    assert_eq!(r.json["result"]["status"], "completed", "{}", r.json);
    let text = r.json.to_string();
    assert!(
        text.contains("approved by operator:ops, effect run 1"),
        "{text}"
    );
    for _ in 0..3 {
        s.now_ms += 60_000;
        s.fire_alarms();
    }
    assert_eq!(RUNS[2].load(Ordering::SeqCst), 1);
}

fn post(s: &mut TestServer, headers: &[(&str, &str)], body: &Value) -> TestReply {
    s.post(headers, body)
}

/// The id of the `elicitation/create` request among `events`.
fn asked_id(events: &[Value]) -> Value {
    events
        .iter()
        .find(|e| e["method"] == "elicitation/create")
        .map(|e| e["id"].clone())
        .expect("an elicitation")
}

#[test]
fn an_operator_answers_a_sessions_call_and_its_round_runs_at_once() {
    let mut s = server();
    let r = post(
        &mut s,
        &[],
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "ops-test", "version": "1"}}}),
    );
    let sid = r.header("mcp-session-id").expect("a session").to_string();
    let h = [
        ("mcp-session-id", sid.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    post(
        &mut s,
        &h,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    let r = post(
        &mut s,
        &h,
        &json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                "params": {"name": "approve", "arguments": {"slot": 3}}}),
    );
    let first = asked_id(&r.events);
    let r = post(
        &mut s,
        &h,
        &json!({"jsonrpc": "2.0", "id": first, "result": accept()}),
    );
    assert!(r.status < 300, "{}", r.text);
    let id = the_call(&mut s, "session");
    let d = shown(&mut s, &id);
    assert_eq!(d["pending"][0]["key"], "approve", "{d}");

    let r = answer_for(&mut s, &id, "approve");
    assert_eq!(r.json["done"], json!([id]), "{}", r.json);
    let d = shown(&mut s, &id);
    assert_eq!(d["status"], "completed", "its round ran: {d}");
    assert_eq!(RUNS[3].load(Ordering::SeqCst), 1);
    // The client's own answer, late, changes nothing.
    let late = post(
        &mut s,
        &h,
        &json!({"jsonrpc": "2.0", "id": "approve-late", "result": accept()}),
    );
    assert!(late.status < 500, "{}", late.text);
    assert_eq!(RUNS[3].load(Ordering::SeqCst), 1);
    assert!(
        d["notes"][0]["what"]
            .as_str()
            .is_some_and(|n| n.contains("answered \"approve\" (operator:ops)")),
        "{d}"
    );
}
