//! The operator surfaces tried as an attacker would (issue 43), natively
//! through `durable_mcp::testing`: an admin path without a credential is
//! an unknown path to the byte; a console sign-in link signs in once; an
//! operator removed from `ADMIN_TOKENS` loses the console and their links
//! at once; a task is named in round lines by its digest only; the deploy
//! check replays a paused URL elicitation as its shard would; odd call ids
//! name no object; the export seals effects' outputs and keeps no bare
//! digest of an answer; every answer varies on `Origin`; `/admin` holds
//! to `ALLOWED_HOSTS`.

use durable_mcp::http::HttpRequest;
use durable_mcp::replay::{check, PausedCall, Verdict};
use durable_mcp::testing::{TestReply, TestServer};
use durable_mcp::{form, text, CallToolResult, Cx, Registry, Tool, ToolError};
use serde_json::{json, Value};

const OPS: &str = "admin-token-0123456789";
const EVE: &str = "eve-token-9876543210";
const TASKS: &str = "io.modelcontextprotocol/tasks";
/// What a tool's effect returns: an operator must never read it.
const WEBHOOK_SAID: &str = "webhook-said-7f3c9a1d";

async fn deploy(cx: &mut Cx, args: Value) -> Result<CallToolResult, ToolError> {
    let service = args["service"].as_str().unwrap_or("?").to_string();
    let schema = json!({"type": "object", "properties": {"go": {"type": "boolean"}}});
    let yes = cx
        .elicit_with(
            "confirm",
            form(format!("Deploy {service}?"), schema.clone()),
        )
        .await?;
    let said: String = cx
        .once("webhook", async || Ok(WEBHOOK_SAID.to_string()))
        .await?;
    cx.elicit_with("approve", form(format!("Approve {said}?"), schema))
        .await?;
    Ok(text(format!("deployed {service}: {}", yes.accepted())))
}

async fn connect(cx: &mut Cx, _: Value) -> Result<CallToolResult, ToolError> {
    cx.elicit_url("approve", "Approve on our page", "/approve")
        .await?;
    Ok(text("connected"))
}

fn registry() -> Registry {
    let mut r = Registry::new();
    r.tool(Tool::new("deploy", deploy).durable());
    r.tool(Tool::new("release", deploy).task());
    r.tool(Tool::new("connect", connect).durable());
    r
}

fn server(tokens: &str) -> TestServer {
    let tokens = tokens.to_string();
    TestServer::with_config(registry(), move |c| {
        c.admin_tokens = durable_mcp::auth::parse_api_tokens(&tokens).unwrap_or_default();
    })
}

fn request(method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> HttpRequest {
    let mut h = vec![("host".to_string(), "localhost:8787".to_string())];
    h.extend(headers.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    HttpRequest {
        method: method.into(),
        path: path.into(),
        headers: h,
        body: body.as_bytes().to_vec(),
    }
}

fn admin(s: &mut TestServer, token: &str, method: &str, path: &str, body: Value) -> TestReply {
    s.admin(token, method, path, Some(&body).filter(|b| !b.is_null()))
}

/// What an answer is, as a scanner compares two: its status, content
/// type, body (with `path` written as `/nowhere`) and header names.
fn shape(r: &TestReply, path: &str) -> (u16, Option<String>, String, Vec<String>) {
    let bare = path.split('?').next().unwrap_or(path);
    let mut names: Vec<String> = r.headers.iter().map(|(k, _)| k.to_lowercase()).collect();
    names.sort();
    let body = if r.text.is_empty() {
        r.json.to_string()
    } else {
        r.text.clone()
    };
    (
        r.status,
        r.header("content-type").map(str::to_string),
        body.replace(bare, "/nowhere"),
        names,
    )
}

/// A sign-in link of the operator holding `token`.
fn link(s: &mut TestServer, token: &str) -> String {
    let r = admin(s, token, "POST", "/admin/api/console", Value::Null);
    assert_eq!(r.status, 200, "{}", r.text);
    r.json["link"].as_str().expect("a link").to_string()
}

/// Opens `path` as a browser would (with `cookie`, if any).
fn browse(s: &mut TestServer, path: &str, cookie: Option<&str>) -> TestReply {
    let headers: Vec<(&str, &str)> = cookie.map(|c| ("cookie", c)).into_iter().collect();
    s.send(request("GET", path, &headers, ""))
}

fn cookie_of(r: &TestReply) -> String {
    let set = r.header("set-cookie").expect("a cookie is set");
    set.split(';').next().expect("name=value").to_string()
}

fn accept() -> Value {
    json!({"action": "accept", "content": {"go": true}})
}

#[test]
fn an_admin_path_without_a_credential_is_an_unknown_path_to_the_byte() {
    let paths = [
        "/admin",
        "/admin/",
        "/admin/enter",
        "/admin/calls/d.x",
        "/admin/calls/d.x/cancel",
        "/admin/tools/deploy/pause",
        "/admin/api/calls",
        "/admin/api/calls/cancel",
        "/admin/api/calls/d.x",
        "/admin/api/tools",
        "/admin/api/tools/deploy/pause",
        "/admin/api/export",
        "/admin/api/purge",
        "/admin/api/console",
        "/admin/whatever",
    ];
    let methods = ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"];
    let queries = ["", "?x", "?access_token=leaked-1234&pass=junk"];
    let cookies = [
        None,
        Some("dmcp-admin=junk"),
        Some("dmcp-admin=a.b.c; other=1"),
    ];
    // Operators configured, and not at all: the same answers.
    for mut s in [server(&format!("ops:{OPS}")), server("")] {
        for path in paths {
            for method in methods {
                for query in queries {
                    for cookie in cookies {
                        let mut headers = vec![("content-type", "application/json")];
                        if let Some(c) = cookie {
                            headers.push(("cookie", c));
                        }
                        let body = if method == "POST" { "{}" } else { "" };
                        let at = format!("{path}{query}");
                        let got = s.send(request(method, &at, &headers, body));
                        let unknown =
                            s.send(request(method, &format!("/nowhere{query}"), &headers, body));
                        let what = format!("{method} {at} {cookie:?}");
                        assert_eq!(got.status, 404, "{what}: {}", got.text);
                        assert_eq!(shape(&got, path), shape(&unknown, "/nowhere"), "{what}");
                        assert!(!got.text.contains("leaked-1234"), "{what}: {}", got.text);
                        assert!(!unknown.text.contains("leaked"), "{}", unknown.text);
                    }
                }
            }
        }
    }
}

#[test]
fn a_sign_in_link_signs_in_once_and_only_for_a_current_operator() {
    let mut s = server(&format!("ops:{OPS},eve:{EVE}"));
    let l = link(&mut s, OPS);
    let first = browse(&mut s, &l, None);
    assert_eq!(first.status, 303, "{}", first.text);
    let cookie = cookie_of(&first);
    assert_eq!(browse(&mut s, "/admin", Some(&cookie)).status, 200);
    // Opened again, from this browser or another: the unknown path.
    let unknown = browse(&mut s, "/nowhere", None);
    for c in [None, Some(cookie.as_str())] {
        let again = browse(&mut s, &l, c);
        assert_eq!(
            shape(&again, "/admin/enter"),
            shape(&unknown, "/nowhere"),
            "{c:?}"
        );
    }
    // Another link of the same operator is its own, good once too.
    let l2 = link(&mut s, OPS);
    assert_eq!(browse(&mut s, &l2, None).status, 303);
    assert_eq!(browse(&mut s, &l2, None).status, 404);

    // eve signs in, and holds a link she has not used.
    let eve_link = link(&mut s, EVE);
    let eve_signs_in = link(&mut s, EVE);
    let eve_cookie = cookie_of(&browse(&mut s, &eve_signs_in, None));
    assert_eq!(browse(&mut s, "/admin", Some(&eve_cookie)).status, 200);
    // Removed from ADMIN_TOKENS (the same STATE_KEYS): her cookie and her
    // link are nothing at once; ops is still signed in.
    s.server.config.admin_tokens =
        durable_mcp::auth::parse_api_tokens(&format!("ops:{OPS}")).expect("tokens");
    let r = browse(&mut s, "/admin", Some(&eve_cookie));
    assert_eq!(shape(&r, "/admin"), shape(&unknown, "/nowhere"));
    assert_eq!(browse(&mut s, &eve_link, None).status, 404);
    assert_eq!(browse(&mut s, "/admin", Some(&cookie)).status, 200);
    // Her name kept with another token (a rotated token): still nothing.
    s.server.config.admin_tokens =
        durable_mcp::auth::parse_api_tokens(&format!("ops:{OPS},eve:eve-new-token-000"))
            .expect("tokens");
    assert_eq!(browse(&mut s, "/admin", Some(&eve_cookie)).status, 404);
    // A post to the link path with any cookie, junk or real: not there.
    for c in ["dmcp-admin=junk", cookie.as_str()] {
        let r = s.send(request(
            "POST",
            "/admin/enter",
            &[("cookie", c), ("origin", "http://localhost:8787")],
            "",
        ));
        assert!(r.status == 404 || c == cookie, "{c}: {}", r.text);
    }
}

#[test]
fn a_task_is_named_in_round_lines_and_spans_by_its_digest() {
    let mut s = server(&format!("ops:{OPS}"));
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "extensions": {TASKS: {}}},
    });
    let r = s.call(
        "tools/call",
        json!({"name": "release", "arguments": {"service": "db"}, "_meta": meta}),
    );
    assert_eq!(r.json["result"]["resultType"], "task", "{}", r.json);
    let task_id = r.json["result"]["taskId"]
        .as_str()
        .expect("a task")
        .to_string();
    s.fire_alarms();
    let r = s.call(
        "tasks/update",
        json!({"taskId": task_id, "inputResponses": {"confirm": accept()}, "_meta": meta}),
    );
    assert!(r.json.get("error").is_none(), "{}", r.json);
    s.fire_alarms();
    let task_lines: Vec<String> = s
        .logs
        .iter()
        .filter(|l| l.contains("\"task\""))
        .cloned()
        .collect();
    assert!(task_lines.len() >= 2, "{:?}", s.logs);
    for l in &s.logs {
        assert!(!l.contains(&task_id), "a task id in {l}");
    }
    let listed = admin(&mut s, OPS, "GET", "/admin/api/calls", Value::Null).json;
    let handle = listed["calls"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["kind"] == "task"))
        .and_then(|c| c["id"].as_str())
        .expect("the task listed")
        .to_string();
    for l in task_lines {
        let v: Value = serde_json::from_str(&l).expect("a JSON line");
        assert_eq!(v["callId"], handle, "{l}");
    }
}

#[test]
fn the_deploy_check_replays_a_paused_url_elicitation_as_its_shard_would() {
    let mut s = server(&format!("ops:{OPS}"));
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}, "url": {}}},
    });
    let r = s.call(
        "tools/call",
        json!({"name": "connect", "arguments": {}, "_meta": meta}),
    );
    assert_eq!(
        r.json["result"]["resultType"], "input_required",
        "{}",
        r.json
    );
    let r = admin(&mut s, OPS, "GET", "/admin/api/export", Value::Null);
    let paused: Vec<PausedCall> = serde_json::from_value(r.json.clone()).expect("an export");
    assert_eq!(paused.len(), 1, "{}", r.json);
    let verdicts = check(&s.server, &paused);
    assert!(
        matches!(&verdicts[0].verdict, Verdict::Continues { next } if next.contains("approve")),
        "{verdicts:?}"
    );
}

#[test]
fn odd_call_ids_name_no_object() {
    let mut s = server(&format!("ops:{OPS}"));
    let r = s.call_tool("deploy", json!({"service": "api"}), json!({}));
    assert_eq!(r.json["result"]["resultType"], "input_required");
    // A listing asks every shard and the hub (the test server makes an
    // object for each one asked; workerd stores nothing for a read).
    admin(&mut s, OPS, "GET", "/admin/api/calls", Value::Null);
    let objects = s.objects.len();
    let long = format!("d.{}", "a".repeat(10_000));
    let odd = [
        "d.s99999-0123456789abcdef0123456789abcdef",
        "d.s0-x",
        "d.S0-0123456789abcdef0123456789abcdef",
        "d.s-0123456789abcdef0123456789abcdef",
        "d.0123456789ABCDEF0123456789ABCDEF",
        "d.",
        long.as_str(),
    ];
    for id in odd {
        let r = admin(
            &mut s,
            OPS,
            "GET",
            &format!("/admin/api/calls/{id}"),
            Value::Null,
        );
        assert_eq!(r.status, 404, "{}", r.text);
    }
    let ids: Vec<&str> = odd.to_vec();
    let r = admin(
        &mut s,
        OPS,
        "POST",
        "/admin/api/calls/cancel",
        json!({"ids": ids}),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(
        r.json["done"].as_array().is_some_and(Vec::is_empty),
        "{}",
        r.json
    );
    assert_eq!(s.objects.len(), objects, "no object was made");
    // A well-formed id of a shard that exists is still looked up.
    let r = admin(
        &mut s,
        OPS,
        "GET",
        "/admin/api/calls/d.s0-0123456789abcdef0123456789abcdef",
        Value::Null,
    );
    assert_eq!(r.status, 404);
}

#[test]
fn the_export_seals_effects_outputs_and_keeps_no_bare_digest_of_an_answer() {
    let mut s = server(&format!("ops:{OPS}"));
    let r = s.call_tool("deploy", json!({"service": "api"}), json!({}));
    let state = r.json["result"]["requestState"]
        .as_str()
        .expect("a state")
        .to_string();
    let r = s.call_tool(
        "deploy",
        json!({"service": "api"}),
        json!({"requestState": state, "inputResponses": {"confirm": accept()}}),
    );
    assert_eq!(
        r.json["result"]["resultType"], "input_required",
        "{}",
        r.json
    );
    // What the server keeps: the effect's output, and a digest of the
    // answer it read.
    let kept = s.paused_calls();
    let digests: Vec<String> = kept[0]
        .journal
        .once_inputs
        .values()
        .flat_map(|m| m.values().cloned())
        .collect();
    assert!(!digests.is_empty(), "{:?}", kept[0].journal);
    let r = admin(&mut s, OPS, "GET", "/admin/api/export", Value::Null);
    assert!(!r.text.contains(WEBHOOK_SAID), "{}", r.text);
    for d in &digests {
        assert!(!r.text.contains(d.as_str()), "{d} in {}", r.text);
    }
    let paused: Vec<PausedCall> = serde_json::from_value(r.json.clone()).expect("an export");
    assert!(paused[0].journal.once.is_empty() && paused[0].journal.once_inputs.is_empty());
    // The check opens them, and the call continues (its effect not run
    // again: its output is there once opened).
    let verdicts = check(&s.server, &paused);
    assert!(
        matches!(&verdicts[0].verdict, Verdict::Continues { .. }),
        "{verdicts:?}"
    );
}

#[test]
fn every_answer_varies_on_origin() {
    let mut s = server(&format!("ops:{OPS}"));
    let varies = |r: &TestReply| {
        r.headers
            .iter()
            .any(|(k, v)| k.eq_ignore_ascii_case("vary") && v.contains("Origin"))
    };
    // A durable call (served in its shard), then what the Worker answers.
    let r = s.call_tool("deploy", json!({"service": "api"}), json!({}));
    assert!(varies(&r), "{:?}", r.headers);
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#;
    for (method, path, origin) in [
        ("POST", "/mcp", None),
        ("POST", "/mcp", Some("https://evil.example")),
        ("POST", "/mcp", Some("http://localhost:8787")),
        ("OPTIONS", "/mcp", Some("https://evil.example")),
        ("OPTIONS", "/mcp", Some("http://localhost:8787")),
        ("GET", "/nowhere", None),
        ("GET", "/admin/api/calls", None),
        ("GET", "/.well-known/oauth-protected-resource", None),
    ] {
        let mut headers = vec![("content-type", "application/json")];
        headers.extend(origin.map(|o| ("origin", o)));
        let r = s.send(request(method, path, &headers, body));
        assert!(varies(&r), "{method} {path} {origin:?}: {:?}", r.headers);
    }
}

#[test]
fn the_admin_paths_hold_to_the_allowed_hosts() {
    let mut s = server(&format!("ops:{OPS}"));
    let auth = format!("Bearer {OPS}");
    let r = s.send(HttpRequest {
        method: "GET".into(),
        path: "/admin/api/calls".into(),
        headers: vec![
            ("host".into(), "rebound.example".into()),
            ("authorization".into(), auth),
        ],
        body: Vec::new(),
    });
    assert_eq!(r.status, 403, "{}", r.text);
    // A link opened under another name: the unknown path, and not spent.
    let l = link(&mut s, OPS);
    let r = s.send(HttpRequest {
        method: "GET".into(),
        path: l.clone(),
        headers: vec![("host".into(), "rebound.example".into())],
        body: Vec::new(),
    });
    assert_eq!(r.status, 404, "{}", r.text);
    assert_eq!(browse(&mut s, &l, None).status, 303);
}
