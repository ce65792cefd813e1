//! Draining a tool's earlier versions (issue 44), natively through
//! `durable_mcp::testing`: `GET /admin/api/tools/versions` counts, per
//! tool and version, the unfinished calls every keeper holds (a durable
//! call's shard, a session, a task) by status; a version the code neither
//! runs nor keeps shows as `missing` and its pinned calls park; the deploy
//! check says which versions still hold paused calls and which kept one
//! can be removed.

use durable_mcp::http::HttpRequest;
use durable_mcp::replay::{check, versions, versions_table, Verdict};
use durable_mcp::testing::{TestReply, TestServer};
use durable_mcp::{form, text, CallToolResult, Cx, Registry, Tool, ToolError};
use serde_json::{json, Value};

const ADMIN: &str = "ops:admin-token-0123456789";
const TASKS: &str = "io.modelcontextprotocol/tasks";

async fn deploy(cx: &mut Cx, args: Value) -> Result<CallToolResult, ToolError> {
    let service = args["service"].as_str().unwrap_or("?").to_string();
    let schema = json!({"type": "object", "properties": {"reason": {"type": "string"}}});
    cx.elicit_with(
        "confirm",
        form(format!("Deploy {service}?"), schema.clone()),
    )
    .await?;
    cx.elicit_with("approve", form("Approve?", schema)).await?;
    Ok(text(format!("deployed {service}")))
}

/// `deploy` (durable) and `release` (tasks; a session's call without the
/// extension) at `version`, pinned, keeping `keeps`.
fn registry(version: &str, keeps: &[&str]) -> Registry {
    let tool = |name: &str| {
        let mut t = Tool::new(name, deploy).version(version).pinned();
        for k in keeps {
            t = t.keeps(*k, deploy);
        }
        t
    };
    let mut r = Registry::new();
    r.tool(tool("deploy").durable());
    r.tool(tool("release").task());
    r
}

fn admin(s: &mut TestServer, method: &str, path: &str, body: Option<Value>) -> TestReply {
    s.admin("admin-token-0123456789", method, path, body.as_ref())
}

fn accept() -> Value {
    json!({"action": "accept", "content": {"reason": "ok"}})
}

/// Starts a durable call of `deploy`; returns its requestState.
fn start_durable(s: &mut TestServer, service: &str) -> String {
    let r = s.call_tool("deploy", json!({"service": service}), json!({}));
    assert_eq!(
        r.json["result"]["resultType"], "input_required",
        "{}",
        r.json
    );
    r.json["result"]["requestState"]
        .as_str()
        .expect("a durable call's state")
        .to_string()
}

fn answer_durable(s: &mut TestServer, service: &str, state: &str, key: &str) -> TestReply {
    s.call_tool(
        "deploy",
        json!({"service": service}),
        json!({"requestState": state, "inputResponses": {key: accept()}}),
    )
}

/// Opens a session and starts a `release` call on it, paused on its
/// question.
fn start_session(s: &mut TestServer) {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "versions-test", "version": "1"}}});
    let r = s.post(&[], &init);
    let sid = r.header("mcp-session-id").expect("a session").to_string();
    let h = [
        ("mcp-session-id", sid.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    s.post(
        &h,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    let call = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "release", "arguments": {"service": "web"}}});
    let r = s.post(&h, &call);
    assert!(
        r.events.iter().any(|e| e["method"] == "elicitation/create"),
        "{:?}",
        r.events
    );
}

fn tasks_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":
            {"elicitation": {}, "extensions": {TASKS: {}}},
    })
}

/// Starts a `release` task, run to its first question; returns its id.
fn start_task(s: &mut TestServer) -> String {
    let r = s.call(
        "tools/call",
        json!({"name": "release", "arguments": {"service": "db"}, "_meta": tasks_meta()}),
    );
    assert_eq!(r.json["result"]["resultType"], "task", "{}", r.json);
    s.fire_alarms();
    r.json["result"]["taskId"]
        .as_str()
        .expect("a task id")
        .to_string()
}

/// `GET /admin/api/tools/versions`, each tool's rows as
/// `(version, standing, waiting, working, parked)`.
fn rows(s: &mut TestServer, tool: &str) -> (Value, Vec<Row>) {
    let r = admin(s, "GET", "/admin/api/tools/versions", None);
    assert_eq!(r.status, 200, "{}", r.text);
    let t = r.json["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["tool"] == tool)
        .unwrap_or_else(|| panic!("{tool} in {}", r.json))
        .clone();
    let rows = t["versions"]
        .as_array()
        .expect("versions")
        .iter()
        .map(|v| {
            let n = |k: &str| v[k].as_u64().expect("a count");
            let s = |k: &str| v[k].as_str().expect("a string").to_string();
            (
                s("version"),
                s("standing"),
                n("waiting"),
                n("working"),
                n("parked"),
            )
        })
        .collect();
    (t, rows)
}

/// A version's row: `(version, standing, waiting, working, parked)`.
type Row = (String, String, u64, u64, u64);

fn row(v: &str, standing: &str, counts: [u64; 3]) -> Row {
    (v.into(), standing.into(), counts[0], counts[1], counts[2])
}

/// Three v1 calls of `deploy` (two paused, one held by an operator), a
/// session's and a task's of `release`.
fn v1_calls() -> (TestServer, String, String) {
    let mut s = TestServer::with_config(registry("1", &[]), |c| {
        c.admin_tokens = durable_mcp::auth::parse_api_tokens(ADMIN).expect("as set up");
    });
    // The one call listed yet is the one an operator holds.
    start_durable(&mut s, "db");
    let listing = admin(&mut s, "GET", "/admin/api/calls?tool=deploy", None);
    let calls = listing.json["calls"].as_array().expect("calls");
    assert_eq!(calls.len(), 1, "{}", listing.json);
    assert_eq!(calls[0]["version"], "1", "{}", listing.json);
    let db = calls[0]["id"].clone();
    let r = admin(
        &mut s,
        "POST",
        "/admin/api/calls/pause",
        Some(json!({"ids": [db]})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let state = start_durable(&mut s, "api");
    start_durable(&mut s, "web");
    start_session(&mut s);
    let task = start_task(&mut s);
    (s, state, task)
}

#[test]
fn the_versions_endpoint_counts_each_keepers_calls_per_version_and_status() {
    let (mut s, _, _) = v1_calls();
    let (t, r) = rows(&mut s, "deploy");
    assert_eq!(t["current"], "1");
    assert_eq!(t["policy"], "pinned");
    assert_eq!(r, vec![row("1", "current", [2, 0, 1])]);
    let (_, r) = rows(&mut s, "release");
    assert_eq!(r, vec![row("1", "current", [2, 0, 0])]);

    // v2 keeps v1's body: v1's calls run on it; a new call is on v2.
    s.server.registry = registry("2", &["1"]);
    let v2 = start_durable(&mut s, "v2");
    let (t, r) = rows(&mut s, "deploy");
    assert_eq!(t["keeps"], json!(["1"]));
    assert_eq!(
        r,
        vec![row("2", "current", [1, 0, 0]), row("1", "kept", [2, 0, 1])]
    );
    // Finished calls are not counted.
    let next = answer_durable(&mut s, "v2", &v2, "confirm");
    let next = next.json["result"]["requestState"]
        .as_str()
        .expect("a state")
        .to_string();
    let done = answer_durable(&mut s, "v2", &next, "approve");
    assert_eq!(
        done.json["result"]["content"][0]["text"], "deployed v2",
        "{}",
        done.json
    );
    let (_, r) = rows(&mut s, "deploy");
    assert_eq!(r[0], row("2", "current", [0, 0, 0]));
}

#[test]
fn a_version_the_code_no_longer_keeps_is_missing_and_its_calls_park() {
    let (mut s, state, task) = v1_calls();
    s.server.registry = registry("3", &[]);
    let (_, r) = rows(&mut s, "deploy");
    assert_eq!(
        r,
        vec![
            row("3", "current", [0, 0, 0]),
            row("1", "missing", [2, 0, 1])
        ]
    );
    let (_, r) = rows(&mut s, "release");
    assert_eq!(
        r,
        vec![
            row("3", "current", [0, 0, 0]),
            row("1", "missing", [2, 0, 0])
        ]
    );
    // Its pinned call parks, naming its version.
    let parked = answer_durable(&mut s, "api", &state, "confirm");
    assert_eq!(parked.json["error"]["code"], -32050, "{}", parked.json);
    assert_eq!(
        parked.json["error"]["data"]["pinnedTo"], "1",
        "{}",
        parked.json
    );
    let (_, r) = rows(&mut s, "deploy");
    assert_eq!(r[1], row("1", "missing", [1, 0, 2]));
    // So does its task, answered.
    let params = json!({"taskId": task, "inputResponses": {"confirm": accept()},
                        "_meta": tasks_meta()});
    let r = s.call("tasks/update", params);
    assert!(r.json["error"].is_null(), "{}", r.json);
    s.fire_alarms();
    let (_, r) = rows(&mut s, "release");
    assert_eq!(r[1], row("1", "missing", [1, 0, 1]));
    // The console's overview shows the same.
    let page = console(&mut s);
    let missing = "<td><code>1</code></td><td><span class=\"badge st-failed\">missing</span></td>\
                   <td class=\"num\">1</td><td class=\"num\">0</td><td class=\"num\">2</td>";
    assert!(page.contains("<h2>Tool versions</h2>"), "{page}");
    assert!(page.contains(missing), "{page}");
}

/// The console's overview, signed in by a link.
fn console(s: &mut TestServer) -> String {
    let r = admin(s, "POST", "/admin/api/console", None);
    let link = r.json["link"].as_str().expect("a link").to_string();
    let get = |s: &mut TestServer, path: &str, cookie: Option<&str>| {
        let mut headers = vec![("host".to_string(), "localhost:8787".to_string())];
        headers.extend(cookie.map(|c| ("cookie".to_string(), c.to_string())));
        s.send(HttpRequest {
            method: "GET".into(),
            path: path.into(),
            headers,
            body: Vec::new(),
        })
    };
    let r = get(s, &link, None);
    let set = r.header("set-cookie").expect("a cookie").to_string();
    let cookie = set.split(';').next().expect("a cookie").to_string();
    let r = get(s, "/admin", Some(&cookie));
    assert_eq!(r.status, 200, "{}", r.text);
    r.text
}

#[test]
fn the_deploy_check_says_which_versions_hold_calls_and_which_can_go() {
    let (mut s, _, _) = v1_calls();
    let paused = s.paused_calls();
    assert_eq!(paused.len(), 5, "{paused:?}");
    // v3 keeps v2 (no call is on it) and drops v1 (five are).
    s.server.registry = registry("3", &["2"]);
    let reports = check(&s.server, &paused);
    assert!(reports.iter().all(|r| r.version == "1"), "{reports:?}");
    assert!(
        reports
            .iter()
            .all(|r| matches!(&r.verdict, Verdict::Diverges { why, .. } if why.contains("\"1\""))),
        "{reports:?}"
    );
    let tools = versions(&s.server, &paused);
    let deploy = tools.iter().find(|t| t.tool == "deploy").expect("deploy");
    let v1 = deploy
        .versions
        .iter()
        .find(|v| v.version == "1")
        .expect("v1");
    assert_eq!(v1.calls(), 3);
    assert!(deploy
        .versions
        .iter()
        .any(|v| v.version == "2" && v.removable()));
    let table = versions_table(&tools);
    assert!(table.contains("PARK: -32050 pinnedTo \"1\""), "{table}");
    let line = |tool: &str, v: &str| {
        table
            .lines()
            .find(|l| l.split_whitespace().take(2).eq([tool, v]))
            .unwrap_or_else(|| panic!("{tool} {v} in\n{table}"))
            .split_whitespace()
            .collect::<Vec<_>>()
    };
    assert_eq!(line("deploy", "1")[2..4], ["missing", "3"]);
    assert_eq!(line("release", "1")[2..4], ["missing", "2"]);
    assert_eq!(line("deploy", "2")[2..4], ["kept", "0"]);
    assert!(table.contains("its kept body can be removed"), "{table}");
}
