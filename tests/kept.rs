//! A kept call's promises (issue 42's first part), natively through
//! `durable_mcp::testing`: purge takes only finished calls (400 for any
//! other status, nothing purged); a purged call — or one past its
//! retention — leaves a tombstone, so a client's token still naming it
//! gets the call's end (its final reply, or `-32800` for a cancelled one)
//! and never a rebuild that would run its effect again; purge and cancel
//! are idempotent; a cancel of a finished call is refused with why.

use std::sync::atomic::{AtomicUsize, Ordering};

use durable_mcp::testing::{TestReply, TestServer};
use durable_mcp::{form, text, CallToolResult, Cx, Registry, Tool, ToolError};
use serde_json::{json, Value};

const OPS: &str = "admin-token-0123456789";

/// How many times `ship`'s effect ran, per test (each test its own tool
/// name would do too; the counters are keyed by service).
static RUNS: [AtomicUsize; 8] = [const { AtomicUsize::new(0) }; 8];

async fn ship(cx: &mut Cx, args: Value) -> Result<CallToolResult, ToolError> {
    let slot = args["slot"].as_u64().unwrap_or(0) as usize;
    let schema = json!({"type": "object", "properties": {"go": {"type": "boolean"}}});
    cx.elicit_with("go", form("Ship it?", schema)).await?;
    let n: usize = cx
        .once("ship", async || {
            Ok(RUNS[slot].fetch_add(1, Ordering::SeqCst) + 1)
        })
        .await?;
    Ok(text(format!("shipped (effect run {n})")))
}

fn server(f: impl FnOnce(&mut durable_mcp::server::Config)) -> TestServer {
    let mut r = Registry::new();
    r.tool(Tool::new("ship", ship).durable());
    TestServer::with_config(r, |c| {
        c.admin_tokens =
            durable_mcp::auth::parse_api_tokens(&format!("ops:{OPS}")).expect("tokens");
        f(c);
    })
}

fn admin(s: &mut TestServer, method: &str, path: &str, body: Value) -> TestReply {
    s.admin(OPS, method, path, Some(&body).filter(|b| !b.is_null()))
}

fn go() -> Value {
    json!({"go": {"action": "accept", "content": {"go": true}}})
}

/// A `ship` call paused at its question: its first state.
fn start(s: &mut TestServer, slot: usize) -> String {
    let r = s.call_tool("ship", json!({"slot": slot}), json!({}));
    assert_eq!(
        r.json["result"]["resultType"], "input_required",
        "{}",
        r.json
    );
    r.json["result"]["requestState"]
        .as_str()
        .expect("a state")
        .to_string()
}

fn answer(s: &mut TestServer, slot: usize, state: &str) -> TestReply {
    s.call_tool(
        "ship",
        json!({"slot": slot}),
        json!({"requestState": state, "inputResponses": go()}),
    )
}

fn listed(s: &mut TestServer) -> Value {
    admin(s, "GET", "/admin/api/calls?limit=500", Value::Null).json
}

#[test]
fn purge_takes_only_finished_calls() {
    let mut s = server(|_| {});
    start(&mut s, 0);
    for status in [
        json!(["waiting"]),
        json!(["completed", "parked"]),
        json!(["working"]),
    ] {
        let r = admin(
            &mut s,
            "POST",
            "/admin/api/purge",
            json!({"status": status}),
        );
        assert_eq!(r.status, 400, "{status}: {}", r.text);
        assert_eq!(r.json["error"]["code"], -32602);
        assert!(r.json["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("only finished")));
    }
    assert_eq!(listed(&mut s)["counts"]["total"], 1, "nothing purged");
}

#[test]
fn a_purged_call_answers_its_tokens_with_its_end_and_never_runs_again() {
    let mut s = server(|_| {});
    // One call completed (its effect ran once), one cancelled by an operator.
    let done_state = start(&mut s, 1);
    let done = answer(&mut s, 1, &done_state);
    assert!(done.json["result"]["content"][0]["text"]
        .as_str()
        .is_some_and(|t| t.contains("effect run 1")));
    let cancelled_state = start(&mut s, 2);
    let l = listed(&mut s);
    let waiting = l["calls"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["status"] == "waiting"))
        .and_then(|c| c["id"].as_str())
        .expect("the waiting call")
        .to_string();
    let r = admin(
        &mut s,
        "POST",
        "/admin/api/calls/cancel",
        json!({"ids": [waiting]}),
    );
    assert_eq!(r.json["done"], json!([waiting]), "{}", r.json);
    // Cancelling it again: refused, saying why.
    let r = admin(
        &mut s,
        "POST",
        "/admin/api/calls/cancel",
        json!({"ids": [waiting]}),
    );
    assert_eq!(
        r.json["skipped"][&waiting], "already finished",
        "{}",
        r.json
    );

    let r = admin(&mut s, "POST", "/admin/api/purge", json!({}));
    assert_eq!(
        r.json["done"].as_array().map(Vec::len),
        Some(2),
        "{}",
        r.json
    );
    for id in r.json["done"].as_array().into_iter().flatten() {
        let id = id.as_str().unwrap_or_default();
        let shown = admin(
            &mut s,
            "GET",
            &format!("/admin/api/calls/{id}"),
            Value::Null,
        );
        assert_eq!(
            shown.status, 404,
            "a tombstone is not shown: {}",
            shown.text
        );
    }
    let l = listed(&mut s);
    assert_eq!(l["counts"]["total"], 0, "a tombstone is not listed: {l}");
    // Purge again: nothing left to purge, nothing refused.
    let r = admin(&mut s, "POST", "/admin/api/purge", json!({}));
    assert_eq!(r.status, 200);
    assert_eq!(r.json["done"], json!([]), "{}", r.json);

    // The completed call's client retries exactly: the same final answer,
    // its effect not run again.
    let again = answer(&mut s, 1, &done_state);
    assert_eq!(again.json["result"], done.json["result"], "{}", again.json);
    // Another answer to its round: refused, nothing run.
    let other = s.call_tool(
        "ship",
        json!({"slot": 1}),
        json!({"requestState": done_state,
               "inputResponses": {"go": {"action": "decline"}}}),
    );
    assert!(other.json.get("error").is_some(), "{}", other.json);
    assert_eq!(RUNS[1].load(Ordering::SeqCst), 1, "the effect ran once");
    // The cancelled call's client: -32800, then and on every retry.
    for _ in 0..2 {
        let r = answer(&mut s, 2, &cancelled_state);
        assert_eq!(r.json["error"]["code"], -32800, "{}", r.json);
    }
    assert_eq!(
        RUNS[2].load(Ordering::SeqCst),
        0,
        "a cancelled call never ran"
    );
    assert_eq!(listed(&mut s)["counts"]["total"], 0, "nothing came back");
}

#[test]
fn retention_leaves_a_tombstone_until_no_token_can_name_the_call() {
    use durable_mcp::kept::Status;
    use durable_mcp::store::{CallStore, MemoryStore};
    let mut s = server(|_| {});
    let state = start(&mut s, 3);
    let done = answer(&mut s, 3, &state);
    assert_eq!(RUNS[3].load(Ordering::SeqCst), 1);
    // The finished call as its shard keeps it, swept past its retention
    // (but not past the TTL): a tombstone, unlisted, its end kept.
    let (id, call) = s
        .objects
        .values()
        .flat_map(|o| o.call.list().unwrap_or_default())
        .next()
        .expect("the finished call");
    let store = MemoryStore::new();
    store.save(&id, &call).expect("saved");
    let hour = 60 * 60 * 1000;
    let due = store
        .sweep(call.updated_ms + 60_000, hour, 60_000)
        .expect("swept");
    assert_eq!(due, Some(call.updated_ms + hour), "due again at its TTL");
    let tomb = store.load(&id).expect("read").expect("kept as a tombstone");
    assert!(tomb.tomb);
    assert_eq!(tomb.status, Status::Completed, "where it ended");
    assert!(tomb.journal.once.is_empty() && tomb.journal.answers.is_empty());
    assert_eq!(tomb.last_reply, call.last_reply, "its end kept");
    assert!(store.list().expect("listed").is_empty(), "unlisted");
    // Past the TTL: gone.
    let due = store
        .sweep(call.updated_ms + hour, hour, 60_000)
        .expect("swept");
    assert_eq!(due, None, "nothing left");
    assert!(store.load(&id).expect("read").is_none());
    let _ = done;
}

/// How many times `hoard`'s effects ran, per slot.
static HOARDED: [AtomicUsize; 4] = [const { AtomicUsize::new(0) }; 4];

/// Asks to start, records five big effect outputs (300 KB each), then
/// asks again.
async fn hoard(cx: &mut Cx, args: Value) -> Result<CallToolResult, ToolError> {
    let slot = args["slot"].as_u64().unwrap_or(0) as usize;
    let schema = json!({"type": "object", "properties": {"go": {"type": "boolean"}}});
    cx.elicit_with("start", form("Start?", schema)).await?;
    for i in 0..5 {
        cx.once(&format!("blob-{i}"), async || {
            HOARDED[slot].fetch_add(1, Ordering::SeqCst);
            Ok("x".repeat(300_000))
        })
        .await?;
    }
    let schema = json!({"type": "object", "properties": {"go": {"type": "boolean"}}});
    cx.elicit_with("go", form("Go on?", schema)).await?;
    Ok(text("done"))
}

/// `hoard` as a task: it goes on in its object first (a task runs its
/// effects there, after its first pause).
async fn hoard_task(cx: &mut Cx, args: Value) -> Result<CallToolResult, ToolError> {
    cx.sleep("begin", std::time::Duration::from_millis(1))
        .await?;
    hoard(cx, args).await
}

fn hoarding(limit: usize) -> TestServer {
    let mut r = Registry::new();
    r.tool(Tool::new("hoard", hoard).durable());
    r.tool(Tool::new("hoard_task", hoard_task).task());
    let mut s = TestServer::new(r);
    s.row_limit = Some(limit);
    s
}

#[test]
fn a_round_whose_state_cannot_be_stored_fails_the_call_once_and_never_runs_again() {
    // Rows split at 1 MB fit any SQLite; a storage that refuses rows of
    // 400 KB stands for one that refuses the write at all.
    let mut s = hoarding(400_000);
    let r = s.call_tool("hoard", json!({"slot": 0}), json!({}));
    let state = r.json["result"]["requestState"]
        .as_str()
        .expect("paused")
        .to_string();
    let start = json!({"requestState": state,
        "inputResponses": {"start": {"action": "accept", "content": {"go": true}}}});
    let r = s.call_tool("hoard", json!({"slot": 0}), start.clone());
    assert_eq!(r.json["error"]["code"], -32603, "{}", r.json);
    let message = r.json["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("could not be stored"), "{message}");
    assert_eq!(HOARDED[0].load(Ordering::SeqCst), 5, "each effect ran once");
    let errors: Vec<&String> = s
        .logs
        .iter()
        .filter(|l| l.contains("\"level\":\"error\""))
        .collect();
    assert_eq!(errors.len(), 1, "one error line: {:?}", s.logs);
    assert!(
        errors[0].contains("\"outcome\":\"failed\""),
        "{}",
        errors[0]
    );
    // Its client comes back, again and again: the error, and nothing runs
    // again (a rebuild from its token would run every effect anew).
    for _ in 0..3 {
        let again = s.call_tool("hoard", json!({"slot": 0}), start.clone());
        assert_eq!(again.json["error"]["code"], -32603, "{}", again.json);
        let m = again.json["error"]["message"].as_str().unwrap_or_default();
        assert!(m.contains("could not be stored"), "{m}");
    }
    assert_eq!(HOARDED[0].load(Ordering::SeqCst), 5, "each effect ran once");
}

#[test]
fn a_task_whose_slice_cannot_be_stored_fails_once_and_its_alarm_stops() {
    let mut s = hoarding(400_000);
    let meta = task_meta();
    let r = s.call(
        "tools/call",
        json!({"name": "hoard_task", "arguments": {"slot": 1}, "_meta": meta}),
    );
    let task_id = r.json["result"]["taskId"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(!task_id.is_empty(), "{}", r.json);
    s.now_ms += 1_000;
    s.fire_alarms();
    let r = s.call(
        "tasks/update",
        json!({"taskId": task_id, "_meta": meta, "inputResponses":
            {"start": {"action": "accept", "content": {"go": true}}}}),
    );
    assert!(r.json.get("error").is_none(), "{}", r.json);
    // The alarm, and every poll, many times over: the effects ran once.
    for _ in 0..20 {
        s.now_ms += 60_000;
        s.fire_alarms();
        s.call("tasks/get", json!({"taskId": task_id, "_meta": meta}));
    }
    assert_eq!(HOARDED[1].load(Ordering::SeqCst), 5, "each effect ran once");
    let r = s.call("tasks/get", json!({"taskId": task_id, "_meta": meta}));
    assert_eq!(r.json["result"]["status"], "failed", "{}", r.json);
    let message = r.json["result"]["error"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(message.contains("could not be stored"), "{message}");
}

#[test]
fn a_sessions_call_whose_state_cannot_be_stored_fails_once_on_its_stream() {
    let mut s = hoarding(400_000);
    let r = s.post(
        &[],
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "kept-test", "version": "1"}}}),
    );
    let sid = r.header("mcp-session-id").expect("a session").to_string();
    let h = [
        ("mcp-session-id", sid.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    s.post(
        &h,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    let r = s.post(
        &h,
        &json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                "params": {"name": "hoard", "arguments": {"slot": 2}}}),
    );
    let asked = r
        .events
        .iter()
        .find(|e| e["method"] == "elicitation/create")
        .map(|e| e["id"].clone())
        .expect("asked to start");
    let answer = json!({"jsonrpc": "2.0", "id": asked,
        "result": {"action": "accept", "content": {"go": true}}});
    let r = s.post(&h, &answer);
    assert!(r.status < 500, "{} {}", r.status, r.text);
    assert_eq!(HOARDED[2].load(Ordering::SeqCst), 5, "each effect ran once");
    // The call's response, on its stream: the error, once.
    let stream = s.send(durable_mcp::http::HttpRequest {
        method: "GET".into(),
        path: "/mcp".into(),
        headers: vec![
            ("host".into(), "localhost:8787".into()),
            ("accept".into(), "text/event-stream".into()),
            ("mcp-session-id".into(), sid.clone()),
            ("mcp-protocol-version".into(), "2025-11-25".into()),
            ("last-event-id".into(), "c1:0".into()),
        ],
        body: Vec::new(),
    });
    let ended = stream
        .events
        .iter()
        .find(|e| e["id"] == 9)
        .unwrap_or_else(|| {
            panic!(
                "the call's response: {} {:?} {}",
                stream.status, stream.events, stream.text
            )
        });
    assert_eq!(ended["error"]["code"], -32603, "{ended}");
    let m = ended["error"]["message"].as_str().unwrap_or_default();
    assert!(m.contains("could not be stored"), "{m}");
    // Its answer sent again, its stream read again: nothing runs again.
    for _ in 0..3 {
        s.post(&h, &answer);
    }
    s.now_ms += 10 * 60_000;
    s.post(&h, &answer);
    assert_eq!(HOARDED[2].load(Ordering::SeqCst), 5, "each effect ran once");
    let errors = s
        .logs
        .iter()
        .filter(|l| l.contains("\"level\":\"error\""))
        .count();
    assert_eq!(errors, 1, "one error line: {:?}", s.logs);
}

/// A stateless tool that asks the same question again and again: its
/// answers travel in its `requestState`.
async fn chatty(cx: &mut Cx, _: Value) -> Result<CallToolResult, ToolError> {
    let schema = json!({"type": "object", "properties": {"note": {"type": "string"}}});
    for i in 0..200 {
        cx.elicit_with(&format!("q{i}"), form("Say more?", schema.clone()))
            .await?;
    }
    Ok(text("heard it all"))
}

#[test]
fn a_stateless_call_is_never_handed_a_state_it_could_not_send_back() {
    let mut r = Registry::new();
    r.tool(Tool::new("chatty", chatty));
    let mut s = TestServer::new(r);
    let limit = s.server.config.max_body_bytes / 2;
    let note = "n".repeat(20_000);
    let mut state: Option<String> = None;
    let mut rounds = 0;
    let ended = loop {
        let mut extra = json!({});
        if let Some(st) = &state {
            extra = json!({"requestState": st, "inputResponses":
                {format!("q{}", rounds - 1): {"action": "accept", "content": {"note": note}}}});
        }
        let r = s.call_tool("chatty", json!({}), extra);
        if let Some(e) = r.json.get("error") {
            break e.clone();
        }
        let st = r.json["result"]["requestState"].as_str().expect("a state");
        assert!(
            st.len() <= limit,
            "round {rounds}: a state of {} bytes",
            st.len()
        );
        state = Some(st.to_string());
        rounds += 1;
        assert!(rounds < 200, "the state never grew past the limit");
    };
    assert!(rounds > 5, "{rounds} rounds");
    assert_eq!(ended["code"], -32603, "{ended}");
    let m = ended["message"].as_str().unwrap_or_default();
    assert!(m.contains("make it durable") && m.contains("bytes"), "{m}");
}

/// Its one waiting call's admin id.
fn waiting_id(s: &mut TestServer) -> String {
    listed(s)["calls"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["status"] == "waiting"))
        .and_then(|c| c["id"].as_str())
        .expect("the waiting call")
        .to_string()
}

#[test]
fn an_operator_pauses_one_call_and_resumes_it() {
    let mut s = server(|_| {});
    let state = start(&mut s, 4);
    let id = waiting_id(&mut s);
    let pause = json!({"ids": [id]});
    let r = admin(&mut s, "POST", "/admin/api/calls/pause", pause.clone());
    assert_eq!(r.json["done"], json!([id]), "{}", r.json);
    // Paused again: done (idempotent).
    let r = admin(&mut s, "POST", "/admin/api/calls/pause", pause.clone());
    assert_eq!(r.json["done"], json!([id]), "{}", r.json);
    let shown = admin(
        &mut s,
        "GET",
        &format!("/admin/api/calls/{id}"),
        Value::Null,
    );
    assert_eq!(shown.json["status"], "parked", "{}", shown.json);
    assert!(shown.json["note"]
        .as_str()
        .is_some_and(|n| n.starts_with("paused by an operator (ops)")));
    // Its client answers: the call parks (503, as under a paused tool),
    // its answer kept, its effect not run.
    let r = answer(&mut s, 4, &state);
    assert_eq!(r.status, 503, "{}", r.json);
    assert_eq!(r.json["error"]["data"]["kept"], true, "{}", r.json);
    assert_eq!(RUNS[4].load(Ordering::SeqCst), 0);
    // Resumed (once: again, it is not paused), the same retry goes on.
    let resume = json!({"ids": [id]});
    let r = admin(&mut s, "POST", "/admin/api/calls/resume", resume.clone());
    assert_eq!(r.json["done"], json!([id]), "{}", r.json);
    let r = admin(&mut s, "POST", "/admin/api/calls/resume", resume);
    assert_eq!(r.json["skipped"][&id], "not paused", "{}", r.json);
    let r = answer(&mut s, 4, &state);
    assert!(
        r.json["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("effect run 1")),
        "{}",
        r.json
    );
    // Finished: neither paused nor resumed, and why.
    let r = admin(&mut s, "POST", "/admin/api/calls/pause", pause);
    assert_eq!(r.json["skipped"][&id], "finished", "{}", r.json);
    let r = admin(
        &mut s,
        "POST",
        "/admin/api/calls/pause",
        json!({"ids": ["d.nope"]}),
    );
    assert_eq!(r.json["skipped"]["d.nope"], "not found", "{}", r.json);
    let r = admin(&mut s, "POST", "/admin/api/calls/pause", json!({}));
    assert_eq!(r.status, 400, "{}", r.json);
}

/// Asks, then records one effect, as a task.
async fn ship_task(cx: &mut Cx, args: Value) -> Result<CallToolResult, ToolError> {
    cx.sleep("begin", std::time::Duration::from_millis(1))
        .await?;
    ship(cx, args).await
}

#[test]
fn a_paused_task_parks_until_resumed_then_its_alarm_finishes_it() {
    let mut r = Registry::new();
    r.tool(Tool::new("ship_task", ship_task).task());
    let mut s = TestServer::with_config(r, |c| {
        c.admin_tokens =
            durable_mcp::auth::parse_api_tokens(&format!("ops:{OPS}")).expect("tokens");
    });
    let meta = task_meta();
    let r = s.call(
        "tools/call",
        json!({"name": "ship_task", "arguments": {"slot": 5}, "_meta": meta}),
    );
    let task_id = r.json["result"]["taskId"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(!task_id.is_empty(), "{}", r.json);
    s.now_ms += 1_000;
    s.fire_alarms();
    let id = listed(&mut s)["calls"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["kind"] == "task"))
        .and_then(|c| c["id"].as_str())
        .expect("the task")
        .to_string();
    let r = admin(
        &mut s,
        "POST",
        "/admin/api/calls/pause",
        json!({"ids": [id]}),
    );
    assert_eq!(r.json["done"], json!([id]), "{}", r.json);
    let r = s.call(
        "tasks/update",
        json!({"taskId": task_id, "_meta": meta, "inputResponses": go()}),
    );
    assert!(r.json.get("error").is_none(), "{}", r.json);
    for _ in 0..5 {
        s.now_ms += 60_000;
        s.fire_alarms();
    }
    assert_eq!(
        RUNS[5].load(Ordering::SeqCst),
        0,
        "paused: its effect waits"
    );
    let r = s.call("tasks/get", json!({"taskId": task_id, "_meta": meta}));
    assert_eq!(r.json["result"]["status"], "working", "{}", r.json);
    let r = admin(
        &mut s,
        "POST",
        "/admin/api/calls/resume",
        json!({"ids": [id]}),
    );
    assert_eq!(r.json["done"], json!([id]), "{}", r.json);
    s.fire_alarms();
    let r = s.call("tasks/get", json!({"taskId": task_id, "_meta": meta}));
    assert_eq!(r.json["result"]["status"], "completed", "{}", r.json);
    assert_eq!(RUNS[5].load(Ordering::SeqCst), 1, "its effect ran once");
}

/// A 2026-07-28 client's `_meta` that declares the tasks extension.
fn task_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":
            {"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}},
    })
}
