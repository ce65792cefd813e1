//! Operating paused calls (issue 33), natively through
//! `durable_mcp::testing`: the admin API lists, shows, cancels, exports and
//! purges what the server keeps on every wire that keeps something
//! (durable MRTR, the session wire, tasks); a tool can be paused and
//! resumed; credentials decide who sees anything; the console signs in by
//! a link and refuses forged posts; every round writes a log line and a
//! span, one trace across a call's rounds.

use durable_mcp::http::HttpRequest;
use durable_mcp::replay::{check, PausedCall, Verdict};
use durable_mcp::session::SessionStore;
use durable_mcp::testing::{test_token, TestReply, TestServer};
use durable_mcp::{form, text, CallToolResult, Cx, Registry, Tool, ToolError};
use serde_json::{json, Value};

const ADMIN: &str = "ops:admin-token-0123456789";
const TASKS: &str = "io.modelcontextprotocol/tasks";

async fn deploy(cx: &mut Cx, args: Value) -> Result<CallToolResult, ToolError> {
    let service = args["service"].as_str().unwrap_or("?").to_string();
    let schema = json!({"type": "object", "properties": {"reason": {"type": "string"}}});
    let ok = cx
        .elicit_with(
            "confirm",
            form(format!("Deploy {service}?"), schema.clone()),
        )
        .await?;
    if !ok.accepted() {
        return Ok(text("not confirmed"));
    }
    let ticket: u64 = cx.once("ticket", async || Ok(7u64)).await?;
    let again = cx
        .elicit_with("approve", form(format!("Approve ticket {ticket}?"), schema))
        .await?;
    Ok(text(format!("deployed {service}: {}", again.accepted())))
}

fn registry() -> Registry {
    let mut r = Registry::new();
    r.tool(
        Tool::new("deploy", deploy)
            .durable()
            .admin_shows(&["approve"]),
    );
    r.tool(Tool::new("release", deploy).task());
    r.tool(Tool::new("chat", deploy));
    r
}

fn server() -> TestServer {
    TestServer::with_config(registry(), |c| {
        c.admin_tokens = durable_mcp::auth::parse_api_tokens(ADMIN).expect("as the test set it up");
    })
}

fn admin(s: &mut TestServer, method: &str, path: &str, body: Option<Value>) -> TestReply {
    s.admin("admin-token-0123456789", method, path, body.as_ref())
}

fn tasks_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":
            {"elicitation": {}, "extensions": {TASKS: {}}},
    })
}

fn accept() -> Value {
    json!({"action": "accept", "content": {"reason": "hunter2-secret-answer"}})
}

/// Starts a durable MRTR call; returns its requestState.
fn start_durable(s: &mut TestServer, service: &str) -> String {
    let r = s.call_tool("deploy", json!({"service": service}), json!({}));
    assert_eq!(
        r.json["result"]["resultType"], "input_required",
        "{}",
        r.json
    );
    r.json["result"]["requestState"]
        .as_str()
        .expect("as the test set it up")
        .to_string()
}

fn answer_durable(s: &mut TestServer, service: &str, state: &str, key: &str) -> TestReply {
    s.call_tool(
        "deploy",
        json!({"service": service}),
        json!({"requestState": state, "inputResponses": {key: accept()}}),
    )
}

fn post(s: &mut TestServer, headers: &[(&str, &str)], body: &Value) -> TestReply {
    s.post(headers, body)
}

/// Opens a session and starts a `chat` call on it; returns the session id.
fn start_session(s: &mut TestServer) -> String {
    let r = post(
        s,
        &[],
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "admin-test", "version": "1"}}}),
    );
    let sid = r.header("mcp-session-id").expect("a session").to_string();
    let h = [
        ("mcp-session-id", sid.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    post(
        s,
        &h,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    let r = post(
        s,
        &h,
        &json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                "params": {"name": "chat", "arguments": {"service": "web"}}}),
    );
    assert!(
        r.events.iter().any(|e| e["method"] == "elicitation/create"),
        "{:?}",
        r.events
    );
    sid
}

fn start_task(s: &mut TestServer) -> String {
    let r = s.call(
        "tools/call",
        json!({"name": "release", "arguments": {"service": "db"}, "_meta": tasks_meta()}),
    );
    assert_eq!(r.json["result"]["resultType"], "task", "{}", r.json);
    let id = r.json["result"]["taskId"]
        .as_str()
        .expect("as the test set it up")
        .to_string();
    s.fire_alarms();
    id
}

fn statuses(listing: &Value) -> Vec<(String, String, String)> {
    let mut v: Vec<(String, String, String)> = listing["calls"]
        .as_array()
        .expect("as the test set it up")
        .iter()
        .map(|c| {
            (
                c["kind"]
                    .as_str()
                    .expect("as the test set it up")
                    .to_string(),
                c["tool"]
                    .as_str()
                    .expect("as the test set it up")
                    .to_string(),
                c["status"]
                    .as_str()
                    .expect("as the test set it up")
                    .to_string(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn without_a_credential_the_admin_paths_are_not_there() {
    // No admin configured at all.
    let mut open = TestServer::new(registry());
    let r = admin(&mut open, "GET", "/admin/api/calls", None);
    assert_eq!(r.status, 404);
    // Configured: no token, a wrong token, an MCP token.
    let mut s = server();
    let unknown = s.raw("GET", &[], "");
    for (path, auth) in [
        ("/admin/api/calls", None),
        ("/admin/api/calls", Some("Bearer nope")),
        ("/admin", None),
        ("/admin/calls/d.x", None),
        ("/admin/api/export", Some("Bearer admin-token-01234567")),
    ] {
        let mut headers = vec![("host".to_string(), "localhost:8787".to_string())];
        if let Some(a) = auth {
            headers.push(("authorization".into(), a.into()));
        }
        let r = s.send(HttpRequest {
            method: "GET".into(),
            path: path.into(),
            headers,
            body: Vec::new(),
        });
        assert_eq!(r.status, 404, "{path}: {}", r.text);
        assert_eq!(r.json["error"]["code"], json!(-32600), "{path}: {}", r.json);
        assert!(r.json["error"]["message"]
            .as_str()
            .expect("as the test set it up")
            .starts_with("Not found"));
    }
    // The same answer an unknown path gets.
    let r = s.send(HttpRequest {
        method: "GET".into(),
        path: "/nowhere".into(),
        headers: vec![("host".into(), "localhost:8787".into())],
        body: Vec::new(),
    });
    assert_eq!(r.status, 404);
    let _ = unknown;
}

#[test]
fn the_listing_counts_every_kept_call_on_every_wire_and_filters_them() {
    let mut s = server();
    let mut states = Vec::new();
    for i in 0..3 {
        states.push(start_durable(&mut s, &format!("svc{i}")));
    }
    // One answered once: it waits on its second question, an effect done.
    let r = answer_durable(&mut s, "svc0", &states[0], "confirm");
    assert_eq!(
        r.json["result"]["resultType"], "input_required",
        "{}",
        r.json
    );
    start_session(&mut s);
    start_session(&mut s);
    start_task(&mut s);
    s.now_ms += 120_000;
    let r = admin(&mut s, "GET", "/admin/api/calls", None);
    assert_eq!(r.status, 200, "{}", r.json);
    let l = &r.json;
    assert_eq!(l["counts"]["total"], 6, "{l}");
    assert_eq!(l["counts"]["byStatus"]["waiting"], 6, "{l}");
    assert_eq!(l["counts"]["byTool"]["deploy"], 3);
    assert_eq!(l["counts"]["byTool"]["chat"], 2);
    assert_eq!(l["counts"]["byTool"]["release"], 1);
    assert_eq!(l["counts"]["pausedByAge"]["<1h"], 6, "{l}");
    let sum: u64 = l["counts"]["byStatus"]
        .as_object()
        .expect("as the test set it up")
        .values()
        .map(|v| v.as_u64().expect("as the test set it up"))
        .sum();
    assert_eq!(sum, 6, "the counts add up");
    assert_eq!(
        statuses(l),
        vec![
            ("durable".into(), "deploy".into(), "waiting".into()),
            ("durable".into(), "deploy".into(), "waiting".into()),
            ("durable".into(), "deploy".into(), "waiting".into()),
            ("session".into(), "chat".into(), "waiting".into()),
            ("session".into(), "chat".into(), "waiting".into()),
            ("task".into(), "release".into(), "waiting".into()),
        ]
    );
    for c in l["calls"].as_array().expect("as the test set it up") {
        assert_eq!(c["waitingOn"], json!(["elicitation/create"]), "{c}");
        assert!(c["createdMs"].as_u64().expect("as the test set it up") > 0);
        assert_eq!(
            s.now_ms - c["updatedMs"].as_u64().expect("as the test set it up"),
            120_000,
            "{c}"
        );
    }
    // No capability is shown: task and session ids appear only as digests.
    let text = r.json.to_string();
    for o in s.objects.keys() {
        if let Some(id) = o.strip_prefix("task:").or(o.strip_prefix("session:")) {
            assert!(!text.contains(id), "{id} leaked");
        }
    }
    // Filters and pages.
    let r = admin(&mut s, "GET", "/admin/api/calls?tool=chat", None);
    assert_eq!(r.json["matched"], 2);
    assert_eq!(r.json["counts"]["total"], 6, "counts ignore the filter");
    let r = admin(&mut s, "GET", "/admin/api/calls?kind=task", None);
    assert_eq!(r.json["matched"], 1);
    let r = admin(&mut s, "GET", "/admin/api/calls?olderThan=3m", None);
    assert_eq!(r.json["matched"], 0);
    let r = admin(&mut s, "GET", "/admin/api/calls?limit=4", None);
    assert_eq!(
        r.json["calls"]
            .as_array()
            .expect("as the test set it up")
            .len(),
        4
    );
    let cursor = r.json["nextCursor"]
        .as_str()
        .expect("as the test set it up")
        .to_string();
    let r = admin(
        &mut s,
        "GET",
        &format!("/admin/api/calls?limit=4&cursor={cursor}"),
        None,
    );
    assert_eq!(
        r.json["calls"]
            .as_array()
            .expect("as the test set it up")
            .len(),
        2
    );
    assert!(r.json.get("nextCursor").is_none());
    let r = admin(&mut s, "GET", "/admin/api/calls?status=sleepy", None);
    assert_eq!(r.status, 400);
}

#[test]
fn show_gives_the_history_with_values_hidden_unless_the_tool_shows_them() {
    let mut s = server();
    let state = start_durable(&mut s, "api");
    s.now_ms += 5_000;
    let r = answer_durable(&mut s, "api", &state, "confirm");
    let state = r.json["result"]["requestState"]
        .as_str()
        .expect("as the test set it up")
        .to_string();
    let l = admin(&mut s, "GET", "/admin/api/calls", None).json;
    let id = l["calls"][0]["id"]
        .as_str()
        .expect("as the test set it up")
        .to_string();
    assert!(id.starts_with("d."));
    let d = admin(&mut s, "GET", &format!("/admin/api/calls/{id}"), None).json;
    assert_eq!(d["tool"], "deploy");
    assert_eq!(d["arguments"], json!({"service": "api"}));
    assert_eq!(d["round"], 2, "{d}");
    let rounds = d["rounds"].as_array().expect("as the test set it up");
    assert_eq!(rounds.len(), 2, "{d}");
    assert_eq!(rounds[0]["end"], "paused");
    assert_eq!(rounds[0]["asked"][0]["message"], "Deploy api?");
    assert_eq!(rounds[1]["asked"][0]["key"], "approve");
    assert_eq!(d["pending"][0]["message"], "Approve ticket 7?");
    assert_eq!(d["answers"][0]["key"], "confirm");
    assert_eq!(d["answers"][0]["value"], "[hidden]");
    assert_eq!(d["answers"][0]["outcome"], "accepted");
    assert_eq!(d["effects"][0]["key"], "ticket");
    assert_eq!(d["waitedMs"], 5_000);
    assert!(!d.to_string().contains("hunter2"), "{d}");
    // The tool shows `approve`: after it is answered, its value is there.
    s.now_ms += 1_000;
    let r = answer_durable(&mut s, "api", &state, "approve");
    assert_eq!(r.json["result"]["resultType"], "complete", "{}", r.json);
    let d = admin(&mut s, "GET", &format!("/admin/api/calls/{id}"), None).json;
    assert_eq!(d["status"], "completed", "{d}");
    let approve = d["answers"]
        .as_array()
        .expect("as the test set it up")
        .iter()
        .find(|a| a["key"] == "approve")
        .expect("as the test set it up")
        .clone();
    assert_eq!(
        approve["value"]["content"]["reason"],
        "hunter2-secret-answer"
    );
    let confirm = d["answers"]
        .as_array()
        .expect("as the test set it up")
        .iter()
        .find(|a| a["key"] == "confirm")
        .expect("as the test set it up");
    assert_eq!(confirm["value"], "[hidden]");
    let r = admin(&mut s, "GET", "/admin/api/calls/d.nope", None);
    assert_eq!(r.status, 404);
}

#[test]
fn cancelling_gives_each_client_a_clear_error_and_a_task_becomes_cancelled() {
    let mut s = server();
    let state = start_durable(&mut s, "api");
    let sid = start_session(&mut s);
    let task = start_task(&mut s);
    let l = admin(&mut s, "GET", "/admin/api/calls", None).json;
    let ids: Vec<String> = l["calls"]
        .as_array()
        .expect("as the test set it up")
        .iter()
        .map(|c| c["id"].as_str().expect("as the test set it up").to_string())
        .collect();
    assert_eq!(ids.len(), 3);
    let r = admin(
        &mut s,
        "POST",
        "/admin/api/calls/cancel",
        Some(json!({"ids": ids})),
    );
    assert_eq!(r.status, 200, "{}", r.json);
    assert_eq!(
        r.json["done"]
            .as_array()
            .expect("as the test set it up")
            .len(),
        3,
        "{}",
        r.json
    );
    // The durable call's client: -32800 when it comes back.
    let r = answer_durable(&mut s, "api", &state, "confirm");
    assert_eq!(r.json["error"]["code"], -32800, "{}", r.json);
    assert!(r.json["error"]["message"]
        .as_str()
        .expect("as the test set it up")
        .contains("operator"));
    // The session's call: the error is on its stream.
    let store = &s.objects[&format!("session:{sid}")].session;
    let call = &store.calls().expect("as the test set it up")[0];
    assert_eq!(call.state, durable_mcp::kept::Status::Cancelled);
    let events = store
        .events_after(&call.stream, 0)
        .expect("as the test set it up");
    let last = &events.last().expect("the stream has the error").1;
    assert_eq!(last["id"], 5, "the call's own request: {last}");
    assert_eq!(last["error"]["code"], -32800, "{last}");
    // The task.
    let r = s.call("tasks/get", json!({"taskId": task, "_meta": tasks_meta()}));
    assert_eq!(r.json["result"]["status"], "cancelled", "{}", r.json);
    let l = admin(&mut s, "GET", "/admin/api/calls", None).json;
    assert_eq!(l["counts"]["byStatus"]["cancelled"], 3, "{l}");
    // Cancelling again skips them; a filter with nothing to match is fine.
    let r = admin(
        &mut s,
        "POST",
        "/admin/api/calls/cancel",
        Some(json!({"ids": ["d.gone"]})),
    );
    assert_eq!(r.json["skipped"]["d.gone"], "not found");
    let r = admin(&mut s, "POST", "/admin/api/calls/cancel", Some(json!({})));
    assert_eq!(r.status, 400, "an empty cancel is refused: {}", r.json);
}

#[test]
fn a_paused_tool_refuses_new_calls_and_keeps_paused_ones_until_resumed() {
    let mut s = server();
    let state = start_durable(&mut s, "api");
    let r = admin(&mut s, "POST", "/admin/api/tools/deploy/pause", None);
    assert_eq!(r.json["paused"], true, "{}", r.json);
    // New calls: 503, retryable, naming the tool.
    let r = s.call_tool("deploy", json!({"service": "web"}), json!({}));
    assert_eq!(r.status, 503, "{}", r.json);
    assert_eq!(r.header("retry-after"), Some("30"));
    assert!(r.json["error"]["message"]
        .as_str()
        .expect("as the test set it up")
        .contains("\"deploy\" is paused"));
    // Other tools go on.
    let r = s.call_tool("chat", json!({"service": "web"}), json!({}));
    assert_eq!(r.json["result"]["resultType"], "input_required");
    // The paused call's next round: 503 too, and it is kept (parked).
    let r = answer_durable(&mut s, "api", &state, "confirm");
    assert_eq!(r.status, 503, "{}", r.json);
    let l = admin(&mut s, "GET", "/admin/api/calls", None).json;
    assert_eq!(l["calls"][0]["status"], "parked", "{l}");
    assert_eq!(l["pausedTools"], json!(["deploy"]));
    let r = admin(&mut s, "GET", "/admin/api/tools", None);
    assert!(r.json["tools"]
        .as_array()
        .expect("as the test set it up")
        .contains(&json!({"name": "deploy", "paused": true})));
    // Resumed: the same retry goes on.
    admin(&mut s, "POST", "/admin/api/tools/deploy/resume", None);
    let r = answer_durable(&mut s, "api", &state, "confirm");
    assert_eq!(
        r.json["result"]["resultType"], "input_required",
        "{}",
        r.json
    );
    let r = admin(&mut s, "POST", "/admin/api/tools/nosuch/pause", None);
    assert_eq!(r.status, 400);
}

#[test]
fn a_pause_reaches_another_isolate_within_the_refresh() {
    // Two isolates over the same objects: the second learns of the pause
    // when its copy is due.
    let mut s = server();
    start_durable(&mut s, "warm");
    admin(&mut s, "POST", "/admin/api/tools/deploy/pause", None);
    // An isolate that never heard of it: a fresh copy of the paused set.
    s.server.paused.set(Vec::new(), s.now_ms);
    let r = s.call_tool("deploy", json!({"service": "x"}), json!({}));
    assert_eq!(r.status, 200, "not yet known here");
    s.now_ms += durable_mcp::index::PAUSED_REFRESH_MS;
    let r = s.call_tool("deploy", json!({"service": "x"}), json!({}));
    assert_eq!(r.status, 503, "{}", r.json);
}

#[test]
fn export_feeds_the_deploy_check_and_purge_forgets_finished_calls() {
    let mut s = server();
    let state = start_durable(&mut s, "api");
    // Paused after an answer: the export carries it, sealed.
    let r = answer_durable(&mut s, "api", &state, "confirm");
    assert_eq!(r.json["result"]["resultType"], "input_required");
    let done = start_durable(&mut s, "old");
    let r = answer_durable(&mut s, "old", &done, "confirm");
    let st = r.json["result"]["requestState"]
        .as_str()
        .expect("as the test set it up")
        .to_string();
    answer_durable(&mut s, "old", &st, "approve");
    start_task(&mut s);
    let r = admin(&mut s, "GET", "/admin/api/export", None);
    assert!(
        !r.text.contains("hunter2"),
        "answers are sealed: {}",
        r.text
    );
    let paused: Vec<PausedCall> = serde_json::from_value(r.json.clone()).expect("paused calls");
    assert_eq!(paused.len(), 2, "{}", r.json);
    assert!(paused.iter().any(|c| c.sealed_answers.is_some()));
    // The check opens them with the Worker's keys: everything continues.
    let verdicts = check(&s.server, &paused);
    for v in &verdicts {
        assert!(matches!(v.verdict, Verdict::Continues { .. }), "{v:?}");
    }
    // Not with other keys.
    let other = TestServer::with_config(registry(), |c| {
        c.keys = durable_mcp::token::KeyRing::parse("other:ffffffffffffffffffffffffffffffff")
            .expect("a key ring");
    });
    let fails = check(&other.server, &paused)
        .into_iter()
        .filter(|v| matches!(v.verdict, Verdict::Fails { .. }))
        .count();
    assert_eq!(
        fails, 2,
        "calls whose answers or questions are sealed cannot be checked"
    );
    // Purge: the completed call goes; paused ones stay.
    let r = admin(&mut s, "POST", "/admin/api/purge", Some(json!({})));
    assert_eq!(
        r.json["done"]
            .as_array()
            .expect("as the test set it up")
            .len(),
        1,
        "{}",
        r.json
    );
    let l = admin(&mut s, "GET", "/admin/api/calls", None).json;
    assert_eq!(l["counts"]["total"], 2, "{l}");
    assert_eq!(l["counts"]["byStatus"]["completed"], 0);
}

#[test]
fn with_oauth_only_a_token_with_the_admin_scope_is_an_operator() {
    let mut s = TestServer::with_config(registry(), |c| {
        c.sign_in = durable_mcp::auth::SignIn::from(durable_mcp::auth::OAuthConfig {
            issuer: "https://id.example".into(),
            ..Default::default()
        });
    });
    let now = s.now_ms / 1000;
    let token = |scope: &str| {
        let claims = json!({"iss": "https://id.example", "sub": "ada",
            "aud": "http://localhost:8787/mcp", "exp": now + 300, "scope": scope});
        format!("Bearer {}", test_token("test-key", &claims))
    };
    let get = |s: &mut TestServer, auth: &str| {
        s.send(HttpRequest {
            method: "GET".into(),
            path: "/admin/api/calls".into(),
            headers: vec![
                ("host".into(), "localhost:8787".into()),
                ("authorization".into(), auth.into()),
            ],
            body: Vec::new(),
        })
    };
    assert_eq!(get(&mut s, &token("mcp:read")).status, 403);
    assert_eq!(get(&mut s, &token("mcp:read mcp:admin")).status, 200);
    assert_eq!(get(&mut s, "Bearer not-a-jwt").status, 404);
    let forged = token("mcp:admin").replace("Bearer ey", "Bearer ez");
    assert_eq!(get(&mut s, &forged).status, 404);
}

#[test]
fn each_round_writes_a_log_line_and_a_span_one_trace_per_call() {
    let mut s = server();
    let state = start_durable(&mut s, "api");
    let r = answer_durable(&mut s, "api", &state, "confirm");
    let state = r.json["result"]["requestState"]
        .as_str()
        .expect("as the test set it up")
        .to_string();
    answer_durable(&mut s, "api", &state, "approve");
    let lines: Vec<Value> = s
        .logs
        .iter()
        .map(|l| serde_json::from_str(l).expect("JSON lines"))
        .collect();
    let rounds: Vec<&Value> = lines.iter().filter(|l| l["event"] == "mcp.round").collect();
    assert_eq!(rounds.len(), 3, "one line a round: {lines:?}");
    assert_eq!(lines.len(), 3);
    let spans: Vec<&Value> = rounds
        .iter()
        .map(|l| &l["otlp"]["resourceSpans"][0]["scopeSpans"][0]["spans"][0])
        .collect();
    assert!(spans.iter().all(|s| s.is_object()), "each carries its span");
    let outcomes: Vec<&str> = rounds
        .iter()
        .map(|l| l["outcome"].as_str().expect("as the test set it up"))
        .collect();
    assert_eq!(outcomes, ["paused", "paused", "completed"]);
    assert!(rounds
        .iter()
        .all(|l| l["tool"] == "deploy" && l["wire"] == "mrtr"));
    let trace = rounds[0]["traceId"]
        .as_str()
        .expect("as the test set it up");
    assert_eq!(trace.len(), 32);
    assert!(rounds.iter().all(|l| l["traceId"] == trace), "one trace");
    let span = spans[0];
    assert_eq!(span["name"], "tools/call deploy");
    assert_eq!(span["traceId"], trace);
    assert!(
        s.logs.iter().all(|l| !l.contains("hunter2")),
        "no answer's value"
    );
    // A client's traceparent is the trace.
    let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    s.logs.clear();
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        "traceparent": tp,
    });
    let r = s.call_tool("deploy", json!({"service": "t"}), json!({"_meta": meta}));
    assert_eq!(
        r.json["result"]["resultType"], "input_required",
        "{}",
        r.json
    );
    let l: Value = serde_json::from_str(&s.logs[0]).expect("as the test set it up");
    assert_eq!(l["traceId"], "4bf92f3577b34da6a3ce929d0e0e4736", "{l}");
    assert_eq!(l["parentSpanId"], "00f067aa0ba902b7");
}

/// The console: a sign-in link from the API, a cookie, pages with their
/// headers, escaped values, and posts refused unless they come from the
/// console's own forms.
#[test]
fn the_console_signs_in_by_link_escapes_everything_and_refuses_forged_posts() {
    let mut s = server();
    s.call_tool(
        "deploy",
        json!({"service": "<script>alert(1)</script>"}),
        json!({}),
    );
    let r = admin(&mut s, "POST", "/admin/api/console", None);
    let link = r.json["link"]
        .as_str()
        .expect("as the test set it up")
        .to_string();
    let browse = |s: &mut TestServer,
                  method: &str,
                  path: &str,
                  cookie: Option<&str>,
                  extra: &[(&str, &str)],
                  body: &str| {
        let mut headers = vec![("host".to_string(), "localhost:8787".to_string())];
        if let Some(c) = cookie {
            headers.push(("cookie".into(), c.into()));
        }
        headers.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        s.send(HttpRequest {
            method: method.into(),
            path: path.into(),
            headers,
            body: body.as_bytes().to_vec(),
        })
    };
    let r = browse(&mut s, "GET", &link, None, &[], "");
    assert_eq!(r.status, 303);
    assert_eq!(r.header("location"), Some("/admin"));
    let set = r
        .header("set-cookie")
        .expect("as the test set it up")
        .to_string();
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Strict") && set.contains("Path=/admin")
    );
    let cookie = set
        .split(';')
        .next()
        .expect("as the test set it up")
        .to_string();
    // A link that was tampered with, or expired, is nothing.
    let r = browse(&mut s, "GET", &format!("{link}x"), None, &[], "");
    assert_eq!(r.status, 404);
    let r = browse(&mut s, "GET", "/admin", Some(&cookie), &[], "");
    assert_eq!(r.status, 200, "{}", r.text);
    for (h, v) in [
        ("x-frame-options", "DENY"),
        ("referrer-policy", "no-referrer"),
        ("x-content-type-options", "nosniff"),
        ("cache-control", "no-store"),
    ] {
        assert_eq!(r.header(h), Some(v), "{h}");
    }
    assert!(r
        .header("content-security-policy")
        .expect("as the test set it up")
        .contains("frame-ancestors 'none'"));
    assert!(r.text.contains("deploy"));
    let l = admin(&mut s, "GET", "/admin/api/calls", None).json;
    let id = l["calls"][0]["id"]
        .as_str()
        .expect("as the test set it up")
        .to_string();
    let r = browse(
        &mut s,
        "GET",
        &format!("/admin/calls/{id}"),
        Some(&cookie),
        &[],
        "",
    );
    assert_eq!(r.status, 200);
    assert!(!r.text.contains("<script>alert(1)"), "escaped");
    assert!(r.text.contains("&lt;script&gt;"), "{}", r.text);
    // The form token the page carries.
    let token = r
        .text
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|t| t.split('"').next())
        .expect("as the test set it up")
        .to_string();
    let path = format!("/admin/calls/{id}/cancel");
    let form = [("content-type", "application/x-www-form-urlencoded")];
    // Forged: from another site, or without the token.
    let cross = [form[0], ("origin", "https://evil.example")];
    let r = browse(
        &mut s,
        "POST",
        &path,
        Some(&cookie),
        &cross,
        &format!("csrf={token}"),
    );
    assert_eq!(r.status, 403);
    let same = [form[0], ("origin", "http://localhost:8787")];
    let r = browse(&mut s, "POST", &path, Some(&cookie), &same, "csrf=0000");
    assert_eq!(r.status, 403);
    // A bearer token is for the API, never the console's forms.
    let l = admin(&mut s, "GET", "/admin/api/calls", None).json;
    assert_eq!(l["counts"]["byStatus"]["waiting"], 1);
    // The real form.
    let r = browse(
        &mut s,
        "POST",
        &path,
        Some(&cookie),
        &same,
        &format!("csrf={token}"),
    );
    assert_eq!(r.status, 303, "{}", r.text);
    let l = admin(&mut s, "GET", "/admin/api/calls", None).json;
    assert_eq!(l["counts"]["byStatus"]["cancelled"], 1, "{l}");
    // Without the cookie the console is not there.
    let r = browse(&mut s, "GET", "/admin", None, &[], "");
    assert_eq!(r.status, 404);
}

#[test]
fn stateless_rounds_are_logged_only_when_asked_for() {
    let mut s = server();
    s.call_tool("chat", json!({"service": "x"}), json!({}));
    assert!(s.logs.is_empty(), "a stateless round: no line by default");
    let mut s = TestServer::with_config(registry(), |c| {
        c.round_logs = durable_mcp::server::RoundLogs::All;
    });
    s.call_tool("chat", json!({"service": "x"}), json!({}));
    assert_eq!(s.logs.len(), 1, "ROUND_LOGS=all: {:?}", s.logs);
    let line: Value = serde_json::from_str(&s.logs[0]).expect("JSON");
    assert_eq!(line["wire"], "mrtr");
    assert_eq!(line["outcome"], "paused");
    // Off: the span alone; off and no spans: nothing.
    let mut s = TestServer::with_config(registry(), |c| {
        c.round_logs = durable_mcp::server::RoundLogs::Off;
    });
    start_durable(&mut s, "api");
    let line: Value = serde_json::from_str(&s.logs[0]).expect("JSON");
    assert!(
        line.get("event").is_none() && line.get("resourceSpans").is_some(),
        "{line}"
    );
    let mut s = TestServer::with_config(registry(), |c| {
        c.round_logs = durable_mcp::server::RoundLogs::Off;
        c.round_spans = false;
    });
    start_durable(&mut s, "api");
    assert!(s.logs.is_empty());
}
