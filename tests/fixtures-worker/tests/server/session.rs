//! The 2025-11-25 session wire on the host: sessions, server→client requests
//! on a call's stream, resume by `Last-Event-ID`, resumable requests, TTLs.

use serde_json::{json, Value};

use crate::{assert_error, Harness, Reply};
use durable_mcp::http::HttpRequest;
use durable_mcp::testing::TestServer;

pub(crate) fn post(h: &mut TestServer, session: Option<&str>, body: Value) -> Reply {
    let mut headers = vec![
        ("host".to_string(), "localhost:8787".to_string()),
        ("content-type".to_string(), "application/json".to_string()),
        (
            "accept".to_string(),
            "application/json, text/event-stream".to_string(),
        ),
    ];
    if let Some(s) = session {
        headers.push(("mcp-session-id".into(), s.into()));
        headers.push(("mcp-protocol-version".into(), "2025-11-25".into()));
    }
    h.send(HttpRequest {
        method: "POST".into(),
        path: "/mcp".into(),
        headers,
        body: body.to_string().into_bytes(),
    })
}

pub(crate) fn get(h: &mut TestServer, session: &str, last_event_id: Option<&str>) -> Reply {
    let mut headers = vec![
        ("host".to_string(), "localhost:8787".to_string()),
        ("mcp-session-id".to_string(), session.to_string()),
        ("accept".to_string(), "text/event-stream".to_string()),
    ];
    if let Some(l) = last_event_id {
        headers.push(("last-event-id".into(), l.into()));
    }
    h.send(HttpRequest {
        method: "GET".into(),
        path: "/mcp".into(),
        headers,
        body: Vec::new(),
    })
}

pub(crate) fn initialize(h: &mut TestServer, caps: Value) -> String {
    let r = post(
        h,
        None,
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": caps,
            "clientInfo": {"name": "t", "version": "1"}}}),
    );
    assert_eq!(r.status, 200, "{}", r.json);
    assert_eq!(r.json["result"]["protocolVersion"], "2025-11-25");
    let id = r
        .headers
        .iter()
        .find(|(k, _)| k == "mcp-session-id")
        .map(|(_, v)| v.clone());
    let id = id.expect("session id header");
    assert!(id.len() >= 32 && id.bytes().all(|b| b.is_ascii_hexdigit()));
    id
}

/// A session whose `deploy` call is waiting on its first question: the
/// session id and that elicitation request.
fn deploy_asking(h: &mut TestServer) -> (String, Value) {
    let sid = initialize(h, json!({"elicitation": {}, "sampling": {}}));
    let call = post(h, Some(&sid), deploy_call());
    let asked = call
        .events
        .iter()
        .find(|m| m["method"] == "elicitation/create")
        .expect("asked")
        .clone();
    (sid, asked)
}

pub(crate) fn deploy_call() -> Value {
    json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "deploy", "arguments": {"service": "api"}}})
}

/// Sessions: created by initialize, required after, ended by DELETE.
#[test]
fn a_session_is_created_used_and_deleted() {
    let mut h = Harness::new();
    let sid = initialize(&mut h, json!({}));
    let r = post(
        &mut h,
        Some(&sid),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    assert_eq!(r.status, 202);
    let r = post(
        &mut h,
        Some(&sid),
        json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
    );
    assert_eq!(r.json["result"], json!({}));
    let r = post(
        &mut h,
        Some(&sid),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    );
    assert!(r.json["result"]["tools"].is_array());
    assert!(
        r.json["result"].get("resultType").is_none(),
        "2026 fields are not sent to 2025 clients"
    );
    let r = post(
        &mut h,
        Some(&sid),
        json!({"jsonrpc": "2.0", "id": 3, "method": "logging/setLevel", "params": {"level": "info"}}),
    );
    assert_eq!(r.json["result"], json!({}));
    let r = h.send(HttpRequest {
        method: "DELETE".into(),
        path: "/mcp".into(),
        headers: vec![
            ("host".into(), "localhost".into()),
            ("mcp-session-id".into(), sid.clone()),
        ],
        body: Vec::new(),
    });
    assert_eq!(r.status, 204);
    let r = post(
        &mut h,
        Some(&sid),
        json!({"jsonrpc": "2.0", "id": 4, "method": "ping"}),
    );
    assert_eq!(r.status, 404);
    let r = post(
        &mut h,
        Some("0123456789abcdef0123456789abcdef"),
        json!({"jsonrpc": "2.0", "id": 4, "method": "ping"}),
    );
    assert_eq!(r.status, 404, "unknown session");
    let r = post(
        &mut h,
        None,
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {}}),
    );
    assert_eq!(r.status, 400, "no session header");
}

/// The seed-000 story: requests go out on the call's stream, answers come
/// back as POSTs, and the result follows on the stream (polling: after a GET
/// with Last-Event-ID).
#[test]
fn a_call_asks_over_sse_and_resumes_by_last_event_id() {
    let mut h = Harness::new();
    let sid = initialize(&mut h, json!({"elicitation": {}, "sampling": {}}));
    let r = post(&mut h, Some(&sid), deploy_call());
    assert_eq!(r.status, 200);
    assert!(r
        .headers
        .iter()
        .any(|(k, v)| k == "content-type" && v == "text/event-stream"));
    let ask = &r.events[0];
    assert_eq!(ask["method"], "elicitation/create", "{:?}", r.events);
    let ask_id = ask["id"].clone();
    // Polling is the default: the stream closed after the request.
    assert!(h.live.is_none());

    let r = post(
        &mut h,
        Some(&sid),
        json!({"jsonrpc": "2.0", "id": ask_id,
        "result": {"action": "accept", "content": {"target": "staging"}}}),
    );
    assert_eq!(r.status, 202);
    // The client comes back for the rest of the stream.
    let r = get(&mut h, &sid, Some("c1:1"));
    assert_eq!(r.events.len(), 1, "{:?}", r.events);
    assert_eq!(r.events[0]["method"], "sampling/createMessage");
    let sample_id = r.events[0]["id"].clone();

    // Nothing new yet: the GET is held open as a live view.
    let r = get(&mut h, &sid, Some("c1:2"));
    assert!(r.events.is_empty());
    assert_eq!(h.live.as_deref(), Some("c1"));
    let r = post(
        &mut h,
        Some(&sid),
        json!({"jsonrpc": "2.0", "id": sample_id,
        "result": {"role": "assistant", "content": {"type": "text", "text": "yes"}, "model": "m"}}),
    );
    assert_eq!(r.status, 202);
    let pushed = h.pushes.last().expect("pushed to the live stream");
    assert!(pushed.close);
    let result: Value = serde_json::from_str(&pushed.events[0].data).expect("json");
    assert_eq!(result["id"], 5);
    let text = result["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.starts_with("Deployed api to staging"), "{result}");

    // Replaying from the start gives every message once, in order.
    let r = get(&mut h, &sid, Some("c1:0"));
    let methods: Vec<Value> = r
        .events
        .iter()
        .map(|e| e.get("method").cloned().unwrap_or(e["id"].clone()))
        .collect();
    assert_eq!(
        methods,
        [
            json!("elicitation/create"),
            json!("sampling/createMessage"),
            json!(5)
        ]
    );
}

/// A late or duplicate answer is ignored; the call is not run twice.
#[test]
fn a_duplicate_answer_is_ignored() {
    let mut h = Harness::new();
    let sid = initialize(&mut h, json!({"elicitation": {}, "sampling": {}}));
    let r = post(&mut h, Some(&sid), deploy_call());
    let ask_id = r.events[0]["id"].clone();
    let answer = json!({"jsonrpc": "2.0", "id": ask_id, "result": {"action": "accept", "content": {"target": "staging"}}});
    post(&mut h, Some(&sid), answer.clone());
    let before = h.pushes.len();
    let r = post(&mut h, Some(&sid), answer);
    assert_eq!(r.status, 202);
    assert_eq!(h.pushes.len(), before);
    let r = get(&mut h, &sid, Some("c1:0"));
    assert_eq!(
        r.events.len(),
        2,
        "one elicitation, one sampling request: {:?}",
        r.events
    );
}

/// Without the capability the tool needs, the call fails with -32021 on its stream.
#[test]
fn an_undeclared_capability_fails_the_call() {
    let mut h = Harness::new();
    let sid = initialize(&mut h, json!({}));
    let r = post(&mut h, Some(&sid), deploy_call());
    assert_eq!(r.json["error"]["code"], -32021, "{}", r.json);
}

#[test]
fn a_task_only_tool_is_refused_and_a_task_tool_runs_as_a_call() {
    let mut h = Harness::new();
    let sid = initialize(&mut h, json!({}));
    let r = post(
        &mut h,
        Some(&sid),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
               "params": {"name": "failing_job", "arguments": {}}}),
    );
    assert_eq!(r.json["error"]["code"], -32021, "{}", r.json);
    assert_eq!(
        r.json["error"]["data"]["requiredCapabilities"]["extensions"]
            ["io.modelcontextprotocol/tasks"],
        json!({})
    );
    let r = post(
        &mut h,
        Some(&sid),
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
               "params": {"name": "slow_compute", "arguments": {"seconds": 0, "label": "s"}}}),
    );
    assert_eq!(
        r.json["result"]["content"][0]["text"], "Computed s after 0 second(s).",
        "{}",
        r.json
    );
}

/// Resumable requests: the policy comes first; getStatus reports the state;
/// resume delivers what was not confirmed; maxWait cancels.
#[test]
fn resumable_requests_report_resume_and_expire() {
    let mut h = Harness::new();
    let sid = initialize(
        &mut h,
        json!({"elicitation": {}, "sampling": {}, "resumableRequests": {}}),
    );
    let r = post(&mut h, Some(&sid), deploy_call());
    assert_eq!(r.events[0]["method"], "notifications/requests/resumePolicy");
    let token = r.events[0]["params"]["resumeToken"]
        .as_str()
        .expect("token")
        .to_string();
    assert_eq!(r.events[0]["params"]["requestId"], 5);
    assert_eq!(r.events[1]["method"], "elicitation/create");

    let status = |h: &mut TestServer| {
        post(
            h,
            Some(&sid),
            json!({"jsonrpc": "2.0", "id": 9, "method": "requests/getStatus",
            "params": {"requestId": 5, "resumeToken": token}}),
        )
    };
    let r = status(&mut h);
    assert_eq!(r.json["result"]["status"], "awaiting_elicit", "{}", r.json);
    assert_eq!(r.json["result"]["undeliveredMessages"], 2);

    let r = post(
        &mut h,
        Some(&sid),
        json!({"jsonrpc": "2.0", "id": 5, "method": "requests/resume",
        "params": {"resumeToken": token}}),
    );
    assert_eq!(
        r.events.len(),
        2,
        "undelivered messages first: {:?}",
        r.events
    );
    let r = post(
        &mut h,
        Some(&sid),
        json!({"jsonrpc": "2.0", "id": 5, "method": "requests/resume",
        "params": {"resumeToken": "wrong"}}),
    );
    assert_error(&r, 200, -32602);

    // Silence past maxWait: the alarm cancels the call.
    h.now_ms += h.server.config.resume_max_wait_ms + 1;
    h.fire_alarms();
    let r = status(&mut h);
    assert_eq!(r.json["result"]["status"], "cancelled", "{}", r.json);
    let r = post(
        &mut h,
        Some(&sid),
        json!({"jsonrpc": "2.0", "id": 5, "method": "requests/resume",
        "params": {"resumeToken": token}}),
    );
    assert_error(&r, 200, -32602);
}

/// notifications/cancelled cancels a call and getStatus says so.
#[test]
fn a_cancelled_call_says_so() {
    let mut h = Harness::new();
    let sid = initialize(
        &mut h,
        json!({"elicitation": {}, "sampling": {}, "resumableRequests": {}}),
    );
    let r = post(&mut h, Some(&sid), deploy_call());
    let token = r.events[0]["params"]["resumeToken"]
        .as_str()
        .expect("token")
        .to_string();
    let r = post(
        &mut h,
        Some(&sid),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}}),
    );
    assert_eq!(r.status, 202);
    let r = post(
        &mut h,
        Some(&sid),
        json!({"jsonrpc": "2.0", "id": 9, "method": "requests/getStatus",
        "params": {"requestId": 5, "resumeToken": token}}),
    );
    assert_eq!(r.json["result"]["status"], "cancelled");
}

/// An idle session is deleted when its alarm fires after the TTL.
#[test]
fn an_idle_session_is_deleted_after_its_ttl() {
    let mut h = Harness::new();
    let sid = initialize(&mut h, json!({"elicitation": {}}));
    post(&mut h, Some(&sid), deploy_call());
    let store_events = |h: &TestServer| {
        h.objects
            .values()
            .map(|o| o.session.event_count())
            .sum::<usize>()
    };
    assert!(store_events(&h) > 0);
    let name = format!("session:{sid}");
    let alarm = h.objects[&name]
        .alarm_at
        .expect("the session armed its alarm");
    // The TTL after the last request, plus the slack its stored time may
    // lag by (a tenth of the TTL, at most a minute).
    let ttl = h.server.config.session_ttl_ms;
    assert_eq!(alarm, h.now_ms + ttl + (ttl / 10).min(60_000));
    // Not due yet: nothing happens.
    h.now_ms = alarm - 1;
    h.fire_alarms();
    assert!(h.objects.contains_key(&name));
    h.now_ms = alarm;
    h.fire_alarms();
    assert!(
        !h.objects.contains_key(&name),
        "the object's storage is deleted"
    );
    assert_eq!(store_events(&h), 0, "storage gone");
    let r = post(
        &mut h,
        Some(&sid),
        json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
    );
    assert_eq!(r.status, 404);
}

/// Progress and log messages of a call go out on its stream.
#[test]
fn progress_and_logs_go_on_the_call_stream() {
    let mut h = Harness::new();
    let sid = initialize(&mut h, json!({}));
    post(
        &mut h,
        Some(&sid),
        json!({"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": {"level": "debug"}}),
    );
    let r = post(
        &mut h,
        Some(&sid),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "test_tool_with_logging", "arguments": {}}}),
    );
    let logs = r
        .events
        .iter()
        .filter(|e| e["method"] == "notifications/message")
        .count();
    assert_eq!(logs, 3, "{:?}", r.events);
    let r = post(
        &mut h,
        Some(&sid),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "test_tool_with_progress", "arguments": {}, "_meta": {"progressToken": "p"}}}),
    );
    let progress = r
        .events
        .iter()
        .filter(|e| e["method"] == "notifications/progress")
        .count();
    assert_eq!(progress, 3);
    assert_eq!(r.json["result"]["content"][0]["text"], "p");
}

/// SEP-1699: a checkpoint closes the call's stream with a retry hint and the
/// call goes on when the client comes back with Last-Event-ID.
#[test]
fn a_checkpoint_closes_the_stream_and_the_get_continues_the_call() {
    let mut h = Harness::new();
    let sid = initialize(&mut h, json!({}));
    let r = post(
        &mut h,
        Some(&sid),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "test_reconnection", "arguments": {}}}),
    );
    assert!(
        r.events.is_empty(),
        "only the priming event: {:?}",
        r.events
    );
    assert!(h.live.is_none(), "closed");
    let r = get(&mut h, &sid, Some("c1:0"));
    assert_eq!(r.json["id"], 1);
    assert!(r.json["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .starts_with("Reconnection test completed"));
}

/// A session belongs to the principal that opened it: to anyone else it is
/// not found, for every kind of request.
#[test]
fn a_session_is_bound_to_its_principal() {
    let mut h = Harness::with_config(|c| {
        c.sign_in = durable_mcp::auth::SignIn::ApiTokens(vec![
            ("tok-alice".into(), "alice".into()),
            ("tok-bob".into(), "bob".into()),
        ])
    });
    let as_user =
        |h: &mut TestServer, token: &str, sid: Option<&str>, method: &str, body: Value| {
            let mut headers = vec![
                ("host".to_string(), "localhost:8787".to_string()),
                ("content-type".to_string(), "application/json".to_string()),
                (
                    "accept".to_string(),
                    "application/json, text/event-stream".to_string(),
                ),
                ("authorization".to_string(), format!("Bearer {token}")),
            ];
            if let Some(s) = sid {
                headers.push(("mcp-session-id".into(), s.into()));
            }
            h.send(HttpRequest {
                method: method.into(),
                path: "/mcp".into(),
                headers,
                body: if method == "POST" {
                    body.to_string().into_bytes()
                } else {
                    Vec::new()
                },
            })
        };
    let init = as_user(
        &mut h,
        "tok-alice",
        None,
        "POST",
        json!({"jsonrpc": "2.0", "id": 0,
        "method": "initialize", "params": {"protocolVersion": "2025-11-25",
        "capabilities": {"elicitation": {}, "sampling": {}}, "clientInfo": {"name": "a", "version": "1"}}}),
    );
    let sid = init.header("mcp-session-id").expect("session").to_string();
    let call = as_user(&mut h, "tok-alice", Some(&sid), "POST", deploy_call());
    let asked = call
        .events
        .iter()
        .find(|m| m["method"] == "elicitation/create")
        .expect("asked")
        .clone();

    // Bob cannot ping it, read its stream, answer its question or delete it.
    let ping = as_user(
        &mut h,
        "tok-bob",
        Some(&sid),
        "POST",
        json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
    );
    assert_error(&ping, 404, -32001);
    let read = as_user(&mut h, "tok-bob", Some(&sid), "GET", Value::Null);
    assert_eq!(read.status, 404, "{}", read.json);
    let answer = as_user(
        &mut h,
        "tok-bob",
        Some(&sid),
        "POST",
        json!({"jsonrpc": "2.0", "id": asked["id"],
        "result": {"action": "accept", "content": {"target": "production"}}}),
    );
    assert_error(&answer, 404, -32001);
    let delete = as_user(&mut h, "tok-bob", Some(&sid), "DELETE", Value::Null);
    assert_eq!(delete.status, 404);

    // Alice's call is untouched: her own answer is the one that counts.
    let pushed = h.pushes.len();
    let mine = as_user(
        &mut h,
        "tok-alice",
        Some(&sid),
        "POST",
        json!({"jsonrpc": "2.0", "id": asked["id"],
        "result": {"action": "accept", "content": {"target": "staging"}}}),
    );
    assert_eq!(mine.status, 202);
    let next = h.pushes[pushed..]
        .iter()
        .flat_map(|p| &p.events)
        .filter_map(|e| serde_json::from_str::<Value>(&e.data).ok())
        .find(|m| m["method"] == "sampling/createMessage")
        .expect("the next question went out");
    assert!(next["params"].to_string().contains("staging"), "{next}");
}

/// A duplicate of the answer that completes a round, arriving while that
/// round runs (a client retrying after a timeout), does not run it again;
/// once the claim is older than the claim timeout, a retry takes over.
#[test]
fn a_duplicate_answer_does_not_run_a_claimed_round_again() {
    let mut h = Harness::new();
    let (sid, asked) = deploy_asking(&mut h);
    let answer = json!({"jsonrpc": "2.0", "id": asked["id"],
        "result": {"action": "accept", "content": {"target": "staging"}}});
    // Another copy of this answer claimed the round a moment ago and is
    // still running it (awaiting a webhook, say).
    let name = format!("session:{sid}");
    {
        use durable_mcp::session::SessionStore;
        let store = &h.objects[&name].session;
        let mut c = store.call("c1").expect("load").expect("the call");
        c.journal.accept_answers([(
            "target".to_string(),
            Ok(json!({"action": "accept", "content": {"target": "staging"}})),
        )]);
        c.claimed_at_ms = h.now_ms;
        store.put_call(&c).expect("save");
    }
    let pushed = h.pushes.len();
    let dup = post(&mut h, Some(&sid), answer.clone());
    assert_eq!(dup.status, 202);
    assert_eq!(
        h.pushes.len(),
        pushed,
        "the duplicate ran nothing and sent nothing"
    );
    // The claim dies with its isolate: after the timeout a retry runs the round.
    h.now_ms += h.server.config.claim_timeout_ms;
    let retry = post(&mut h, Some(&sid), answer);
    assert_eq!(retry.status, 202);
    let sent: Vec<Value> = h.pushes[pushed..]
        .iter()
        .flat_map(|p| &p.events)
        .filter_map(|e| serde_json::from_str(&e.data).ok())
        .collect();
    assert!(
        sent.iter().any(|m| m["method"] == "sampling/createMessage"),
        "{sent:?}"
    );
}

/// On the session wire too, a wrong-shaped answer is refused (400, -32602)
/// and the question stays open: a corrected answer continues the call.
#[test]
fn a_wrong_shaped_session_answer_is_refused_and_a_corrected_one_continues() {
    let mut h = Harness::new();
    let (sid, asked) = deploy_asking(&mut h);
    let wrong = post(
        &mut h,
        Some(&sid),
        json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"content": 5}}),
    );
    assert_error(&wrong, 400, -32602);
    // Right keys, wrong types: a value the form does not offer, a number
    // for a string. Each refused naming the key; the form stays open.
    for content in [json!({"target": "mars"}), json!({"target": 5})] {
        let wrong = post(
            &mut h,
            Some(&sid),
            json!({"jsonrpc": "2.0", "id": asked["id"],
            "result": {"action": "accept", "content": content}}),
        );
        assert_error(&wrong, 400, -32602);
        let message = wrong.json["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("\"target\""), "{message}");
    }
    let pushed = h.pushes.len();
    let fixed = post(
        &mut h,
        Some(&sid),
        json!({"jsonrpc": "2.0", "id": asked["id"],
        "result": {"action": "accept", "content": {"target": "staging"}}}),
    );
    assert_eq!(fixed.status, 202);
    assert!(h.pushes[pushed..]
        .iter()
        .flat_map(|p| &p.events)
        .any(|e| e.data.contains("sampling/createMessage")));
}

/// A session arms its alarm when it starts and re-arms it only when it must
/// fire earlier (a call's maxWait); when it fires on a session that was used
/// since, it moves to the new idle deadline instead of deleting it.
#[test]
fn a_session_re_arms_its_alarm_only_when_it_must_fire_earlier() {
    let mut h = Harness::new();
    let ttl = h.server.config.session_ttl_ms;
    // The stored last-seen time may lag by this much (it is not written on
    // every request); the alarm allows for it.
    let slack = (ttl / 10).min(60_000);
    let t0 = h.now_ms;
    let sid = initialize(&mut h, json!({"elicitation": {}, "sampling": {}}));
    let name = format!("session:{sid}");
    let armed = h.objects[&name].alarm_at.expect("armed at initialize");
    assert_eq!(armed, t0 + ttl + slack);
    h.now_ms += slack + 1000;
    let ping = post(
        &mut h,
        Some(&sid),
        json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
    );
    assert_eq!(ping.status, 200);
    assert_eq!(
        h.objects[&name].alarm_at,
        Some(armed),
        "a ping re-arms nothing"
    );
    // The alarm fires on a session used since: it moves on, the session stays.
    h.now_ms = armed;
    h.fire_alarms();
    assert!(h.objects.contains_key(&name));
    assert_eq!(
        h.objects[&name].alarm_at,
        Some(t0 + slack + 1000 + ttl + slack)
    );
}
