//! URL-mode elicitation (SEP-1036) on the host: `connect` sends the user to
//! `/connect`; the page's POST completes the elicitation against the
//! paused call (a durable call's object, a session); the call goes on.
//! Forged ids, other callers' and replays are refused without touching
//! anything; the page's secret is sealed where it is stored.

use serde_json::{json, Value};

use crate::session::{get, initialize, post};
use crate::{assert_error, Harness, Reply};
use durable_mcp::http::HttpRequest;
use durable_mcp::testing::TestServer;

const URL_CAPS: &str = r#"{"elicitation": {"form": {}, "url": {}}}"#;

fn caps(v: &str) -> Value {
    serde_json::from_str(v).expect("json")
}

fn meta(c: &str) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps(c),
    })
}

fn connect(h: &mut TestServer, bearer: Option<&str>, extra: Value) -> Reply {
    let mut params =
        json!({"name": "connect", "arguments": {"service": "github"}, "_meta": meta(URL_CAPS)});
    if let (Some(p), Value::Object(e)) = (params.as_object_mut(), extra) {
        p.extend(e);
    }
    let bearer = bearer.map(|b| format!("Bearer {b}"));
    h.request("tools/call", params, |hs| {
        crate::set(hs, "authorization", bearer.as_deref())
    })
}

/// A page request: `GET path` or a form `POST` of `form`.
fn page(
    h: &mut TestServer,
    method: &str,
    path: &str,
    form: &[(&str, &str)],
    bearer: Option<&str>,
) -> Reply {
    let mut headers = vec![
        ("host".to_string(), "127.0.0.1:8787".to_string()),
        ("origin".to_string(), "http://127.0.0.1:8787".to_string()),
    ];
    if let Some(b) = bearer {
        headers.push(("authorization".into(), format!("Bearer {b}")));
    }
    let mut body = Vec::new();
    if method == "POST" {
        headers.push((
            "content-type".into(),
            "application/x-www-form-urlencoded".into(),
        ));
        body = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form)
            .finish()
            .into_bytes();
    }
    h.send(HttpRequest {
        method: method.into(),
        path: path.into(),
        headers,
        body,
    })
}

/// The elicitation a reply asks (MRTR), and its state.
fn asked(r: &Reply) -> (Value, String) {
    assert_eq!(
        r.json["result"]["resultType"], "input_required",
        "{}",
        r.json
    );
    let req = r.json["result"]["inputRequests"]["approve"].clone();
    assert_eq!(req["method"], "elicitation/create", "{}", r.json);
    let state = r.json["result"]["requestState"]
        .as_str()
        .expect("state")
        .to_string();
    (req["params"].clone(), state)
}

fn approve(h: &mut TestServer, id: &str, token: &str, bearer: Option<&str>) -> Reply {
    page(
        h,
        "POST",
        "/connect",
        &[
            ("elicitationId", id),
            ("decision", "approve"),
            ("token", token),
        ],
        bearer,
    )
}

fn two_callers() -> TestServer {
    let mut h = Harness::new();
    h.server.config.sign_in = durable_mcp::auth::SignIn::ApiTokens(vec![
        ("tok-a".into(), "alice".into()),
        ("tok-b".into(), "bob".into()),
    ]);
    h
}

/// The client's consent is not the answer; the page's POST is. The call
/// then completes with what the page recorded, the secret used but never
/// shown, and sealed where it is stored.
#[test]
fn a_durable_call_waits_for_its_page_and_goes_on() {
    let mut h = two_callers();
    let (params, state) = asked(&connect(&mut h, Some("tok-a"), json!({})));
    assert_eq!(params["mode"], "url");
    // 2026-07-28 dropped the field: the id travels in the URL only.
    assert!(params.get("elicitationId").is_none(), "{params}");
    let url = params["url"].as_str().expect("url").to_string();
    let id = url
        .strip_prefix("http://127.0.0.1:8787/connect?elicitationId=")
        .expect("this worker's page")
        .to_string();

    // Consent only: asked again, same id.
    let consent =
        json!({"requestState": state, "inputResponses": {"approve": {"action": "accept"}}});
    let (again, state) = asked(&connect(&mut h, Some("tok-a"), consent));
    assert_eq!(again["url"], url);

    // The page: its form, then the POST that completes it.
    let path = format!("/connect?elicitationId={id}");
    let form = page(&mut h, "GET", &path, &[], Some("tok-a"));
    assert_eq!(form.status, 200, "{}", form.text);
    assert!(form.text.contains(&id));
    // Bob (another caller) and a forged id: the same refusal, nothing changed.
    assert_eq!(approve(&mut h, &id, "gho_x", Some("tok-b")).status, 404);
    let mut forged = id.clone();
    forged.replace_range(forged.len() - 3.., "AAA");
    assert_eq!(approve(&mut h, &forged, "gho_x", Some("tok-a")).status, 404);
    let done = approve(&mut h, &id, "gho_secret_123", Some("tok-a"));
    assert_eq!(done.status, 200, "{}", done.text);
    assert!(done.text.contains("Approved"));
    // Replayed: nothing waits for it any more.
    assert_eq!(approve(&mut h, &id, "gho_other", Some("tok-a")).status, 404);
    let stored: Vec<String> = h
        .objects
        .values()
        .map(|o| format!("{:?} {:?} {:?}", o.call, o.session, o.task))
        .collect();
    assert!(
        stored.iter().any(|s| s.contains("sealed")),
        "the answer is stored"
    );
    assert!(
        !stored.iter().any(|s| s.contains("gho_secret_123")),
        "the secret is sealed at rest"
    );

    let consent =
        json!({"requestState": state, "inputResponses": {"approve": {"action": "accept"}}});
    let r = connect(&mut h, Some("tok-a"), consent);
    assert_eq!(r.json["result"]["resultType"], "complete", "{}", r.json);
    let text = r.json["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(
        text,
        "Connected github (approved by alice; a token of 14 characters kept)"
    );
    assert!(!r.json.to_string().contains("gho_secret_123"));
}

/// Declining in the client is the answer; no page needed.
#[test]
fn a_decline_in_the_client_ends_the_wait() {
    let mut h = Harness::new();
    let (_, state) = asked(&connect(&mut h, None, json!({})));
    let decline =
        json!({"requestState": state, "inputResponses": {"approve": {"action": "decline"}}});
    let r = connect(&mut h, None, decline);
    assert_eq!(
        r.json["result"]["content"][0]["text"], "github not connected: declined.",
        "{}",
        r.json
    );
}

/// A client that cannot be sent URL mode gets -32042 with the elicitation.
#[test]
fn a_client_without_url_mode_gets_url_elicitation_required() {
    let mut h = Harness::new();
    let params = json!({"name": "connect", "arguments": {"service": "github"},
        "_meta": meta(r#"{"elicitation": {}}"#)});
    let r = h.call("tools/call", params);
    assert_error(&r, 400, -32042);
    let e = &r.json["error"]["data"]["elicitations"][0];
    assert_eq!(e["mode"], "url");
    assert!(e["url"]
        .as_str()
        .unwrap_or_default()
        .contains("/connect?elicitationId="));
}

/// A page without an elicitation of this caller's is the page's own
/// business (404 here); the page does not exist for other paths.
#[test]
fn pages_without_an_elicitation_and_unknown_paths() {
    let mut h = Harness::new();
    assert_eq!(page(&mut h, "GET", "/connect", &[], None).status, 404);
    assert_eq!(
        page(&mut h, "GET", "/connect?elicitationId=e1.x.y", &[], None).status,
        404
    );
    assert_eq!(page(&mut h, "GET", "/elsewhere", &[], None).status, 404);
    assert_eq!(page(&mut h, "DELETE", "/connect", &[], None).status, 405);
}

/// On the session wire the page's completion runs the next round at once:
/// `notifications/elicitation/complete` and the result go to the call's stream.
#[test]
fn a_session_call_completes_from_its_page() {
    let mut h = Harness::new();
    let sid = initialize(&mut h, caps(URL_CAPS));
    let r = post(
        &mut h,
        Some(&sid),
        json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
               "params": {"name": "connect", "arguments": {"service": "gitlab"}}}),
    );
    let ask = r
        .events
        .iter()
        .find(|m| m["method"] == "elicitation/create")
        .expect("asked")
        .clone();
    assert_eq!(ask["params"]["mode"], "url");
    let id = ask["params"]["elicitationId"]
        .as_str()
        .expect("id")
        .to_string();
    // The client's consent: the call keeps waiting.
    let r = post(
        &mut h,
        Some(&sid),
        json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept"}}),
    );
    assert_eq!(r.status, 202);
    assert!(h.pushes.is_empty(), "nothing ran: {:?}", h.pushes);
    let done = approve(&mut h, &id, "glpat-abc", None);
    assert_eq!(done.status, 200, "{}", done.text);
    // The rest of the stream: the completion notice, then the result.
    let r = get(&mut h, &sid, Some("c1:1"));
    let methods: Vec<Value> = r
        .events
        .iter()
        .map(|e| e.get("method").cloned().unwrap_or(e["id"].clone()))
        .collect();
    assert_eq!(
        methods,
        [json!("notifications/elicitation/complete"), json!(9)],
        "{:?}",
        r.events
    );
    assert_eq!(r.events[0]["params"]["elicitationId"], id.as_str());
    assert_eq!(
        r.events[1]["result"]["content"][0]["text"],
        "Connected gitlab (approved by ; a token of 9 characters kept)",
        "{}",
        r.events[1]
    );
    assert_eq!(
        approve(&mut h, &id, "glpat-abc", None).status,
        404,
        "replayed"
    );
}

mod task {
    use super::*;
    use durable_mcp::UrlElicitation;
    use durable_mcp::{text, CallToolResult, Cx, Page, PageReply, Registry, Tool, ToolError};
    use schemars::JsonSchema;
    use serde::Deserialize;

    /// No arguments.
    #[derive(Deserialize, JsonSchema)]
    struct NoArgs {}

    async fn sign_off(cx: &mut Cx, _: NoArgs) -> Result<CallToolResult, ToolError> {
        Ok(text(match cx.elicit_url("ok", "Sign off", "/ok").await? {
            UrlElicitation::Completed(c) => {
                format!(
                    "signed off by {}",
                    c.field::<String>("by").unwrap_or_default()
                )
            }
            _ => "not signed off".into(),
        }))
    }

    fn ok_page(p: &Page) -> PageReply {
        match (p.elicitation(), p.method.as_str()) {
            (Some(_), "POST") => PageReply::text("ok").complete([("by", "the page")]),
            _ => PageReply::text("no").status(404),
        }
    }

    /// A task waiting on a page goes on (its alarm runs it) once the page
    /// completes it, with no client connected.
    #[test]
    fn a_task_waiting_on_a_page_runs_when_the_page_completes_it() {
        let mut r = Registry::new();
        r.tool(Tool::new("sign_off", sign_off).task())
            .page("/ok", ok_page);
        let mut h = TestServer::new(r);
        let caps = json!({"elicitation": {"url": {}}, "extensions": {"io.modelcontextprotocol/tasks": {}}});
        let m = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": caps});
        let r = h.call(
            "tools/call",
            json!({"name": "sign_off", "arguments": {}, "_meta": m}),
        );
        let task_id = r.json["result"]["taskId"]
            .as_str()
            .expect("a task")
            .to_string();
        let get = |h: &mut TestServer| {
            h.call("tasks/get", json!({"taskId": task_id, "_meta": m}))
                .json["result"]
                .clone()
        };
        let t = get(&mut h);
        assert_eq!(t["status"], "input_required", "{t}");
        let url = t["inputRequests"]["ok"]["params"]["url"]
            .as_str()
            .expect("url")
            .to_string();
        let id = url.split("elicitationId=").nth(1).expect("id").to_string();
        let done = page(&mut h, "POST", "/ok", &[("elicitationId", &id)], None);
        assert_eq!(done.status, 200, "{}", done.text);
        // The object's alarm is due now: it runs the rest.
        h.fire_alarms();
        let t = get(&mut h);
        assert_eq!(t["status"], "completed", "{t}");
        assert_eq!(t["result"]["content"][0]["text"], "signed off by the page");
        assert_eq!(
            page(&mut h, "POST", "/ok", &[("elicitationId", &id)], None).status,
            404
        );
    }
}
