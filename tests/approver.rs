//! An approval given by someone other than the caller
//! ([`Cx::elicit_url_from`]): the tool names an approver (a principal),
//! sends them the link out of band, and waits. Only the approver, signed
//! in, opens or completes the page; the caller's client gets the request
//! (it may withdraw it) but no link it could spend in the approver's
//! place; the tool learns who answered.

use std::cell::RefCell;

use serde_json::{json, Value};

use durable_mcp::http::HttpRequest;
use durable_mcp::testing::{TestReply, TestServer};
use durable_mcp::{
    text, CallToolResult, Cx, Page, PageReply, Registry, Tool, ToolError, UrlElicitation,
};

thread_local! {
    /// What the tool "sent" the approver (its chat message, in a test).
    static SENT: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

async fn ship(cx: &mut Cx, _: Value) -> Result<CallToolResult, ToolError> {
    let link = cx
        .elicitation_url("ok", "/approve", Some("bob"))
        .unwrap_or_default();
    // Sent once, however many rounds the call takes.
    cx.once("tell-bob", || async move {
        SENT.with(|s| s.borrow_mut().push(link));
        Ok(true)
    })
    .await?;
    let outcome = cx
        .elicit_url_from(
            "ok",
            "bob",
            ("Ship v2? Bob approves", "/approve"),
            Value::Null,
        )
        .await?;
    let who = cx.answered_by("ok").unwrap_or_default();
    Ok(text(match outcome {
        UrlElicitation::Completed(_) => format!("shipped (approved by {who})"),
        _ => "not shipped".to_string(),
    }))
}

fn approve_page(page: &Page) -> PageReply {
    if page.question().is_none() {
        return PageReply::html("<p>Nothing to approve here.</p>").status(404);
    }
    if page.method == "POST" {
        return PageReply::html("<p>Approved.</p>").complete([("ok", "yes")]);
    }
    PageReply::html("<form method=post><button>Approve</button></form>")
}

fn server() -> TestServer {
    let mut r = Registry::new();
    r.tool(Tool::new("ship", ship).durable());
    r.page("/approve", approve_page);
    let mut s = TestServer::new(r);
    s.server.config.sign_in = durable_mcp::auth::SignIn::ApiTokens(vec![
        ("tok-alice".into(), "alice".into()),
        ("tok-bob".into(), "bob".into()),
    ]);
    s
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"url": {}}},
    })
}

/// Alice calls `ship` (with `extra`: her state and answers).
fn call(s: &mut TestServer, extra: Value) -> TestReply {
    let mut params = json!({"name": "ship", "arguments": {}, "_meta": meta()});
    if let (Some(p), Value::Object(e)) = (params.as_object_mut(), extra) {
        p.extend(e);
    }
    s.request("tools/call", params, |hs| {
        hs.push(("authorization".into(), "Bearer tok-alice".into()));
    })
}

/// A page request to `path_and_query` as `token`'s principal.
fn page(s: &mut TestServer, method: &str, path: &str, token: &str) -> TestReply {
    let mut headers = vec![
        ("host".to_string(), "127.0.0.1:8787".to_string()),
        ("origin".to_string(), "http://127.0.0.1:8787".to_string()),
        ("authorization".to_string(), format!("Bearer {token}")),
    ];
    let body = if method == "POST" {
        headers.push((
            "content-type".into(),
            "application/x-www-form-urlencoded".into(),
        ));
        let id = path.split("elicitationId=").nth(1).unwrap_or_default();
        format!("elicitationId={id}").into_bytes()
    } else {
        Vec::new()
    };
    s.send(HttpRequest {
        method: method.into(),
        path: path.into(),
        headers,
        body,
    })
}

fn local(url: &str) -> String {
    url.strip_prefix("http://127.0.0.1:8787")
        .unwrap_or(url)
        .to_string()
}

#[test]
fn only_the_named_approver_completes_the_approval_and_the_tool_learns_who() {
    SENT.with(|s| s.borrow_mut().clear());
    let mut s = server();
    let r = call(&mut s, json!({}));
    assert_eq!(
        r.json["result"]["resultType"], "input_required",
        "{}",
        r.json
    );
    let asked = &r.json["result"]["inputRequests"]["ok"]["params"];
    let state = r.json["result"]["requestState"].clone();
    // The client is told whom the call waits for, never the approver's link.
    assert_eq!(
        asked["_meta"]["io.durable-mcp/approver"]["principal"],
        "bob"
    );
    let bobs = SENT.with(|s| s.borrow().clone());
    assert_eq!(bobs.len(), 1, "the link was sent to bob once");
    let bobs = local(&bobs[0]);
    let alices = local(asked["url"].as_str().expect("a url"));
    assert_ne!(bobs, alices);
    assert!(!r.text.contains(bobs.split('=').nth(1).unwrap_or("-")));

    // Alice cannot open or complete it: not with her own link, not with
    // bob's (it names bob); both answers are the unknown page's.
    let unknown = page(&mut s, "GET", "/approve?elicitationId=forged", "tok-alice");
    for path in [&alices, &bobs] {
        let r = page(&mut s, "POST", path, "tok-alice");
        assert_eq!(r.status, unknown.status, "{path}: {}", r.text);
        assert_eq!(r.text, unknown.text, "{path}");
    }
    // Bob sees the question and approves.
    let form = page(&mut s, "GET", &bobs, "tok-bob");
    assert_eq!(form.status, 200, "{}", form.text);
    let done = page(&mut s, "POST", &bobs, "tok-bob");
    assert_eq!(done.status, 200, "{}", done.text);

    // Alice's client comes back: the call goes on, approved by bob.
    let again = json!({"requestState": state,
        "inputResponses": {"ok": {"action": "accept"}}});
    let r = call(&mut s, again);
    assert_eq!(
        r.json["result"]["content"][0]["text"], "shipped (approved by approver:bob)",
        "{}",
        r.json
    );
    assert_eq!(SENT.with(|s| s.borrow().len()), 1, "sent once");
}

#[test]
fn the_caller_may_still_withdraw_the_request() {
    let mut s = server();
    let r = call(&mut s, json!({}));
    let state = r.json["result"]["requestState"].clone();
    let decline = json!({"requestState": state,
        "inputResponses": {"ok": {"action": "decline"}}});
    let r = call(&mut s, decline);
    assert_eq!(
        r.json["result"]["content"][0]["text"], "not shipped",
        "{}",
        r.json
    );
}
