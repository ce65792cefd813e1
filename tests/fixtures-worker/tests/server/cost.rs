//! What one paused call costs on each wire, in what Cloudflare bills:
//! Durable Object requests, SQLite rows written and alarms armed. Counted
//! by `TestServer`, which routes and applies effects as the Worker does;
//! pinned here so a change that costs more shows up as a failing test, and
//! printed for docs/PERFORMANCE.md (`cargo test -p fixtures-worker --test
//! server cost -- --nocapture`).

use serde_json::{json, Value};

use durable_mcp::testing::{Cost, TestServer};

use super::Harness;

const TARGET: &str = "target";

fn accept_target() -> Value {
    json!({TARGET: {"action": "accept", "content": {"target": "staging"}}})
}

fn yes() -> Value {
    json!({"safety": {"role": "assistant", "content": {"type": "text", "text": "yes"}}})
}

fn report(wire: &str, cost: Cost) {
    println!(
        "cost | {wire} | {} object requests | {} rows written | {} alarms armed",
        cost.object_requests, cost.rows_written, cost.alarms_armed
    );
}

#[test]
fn a_stateless_mrtr_call_costs_no_object_and_no_storage() {
    let mut s = Harness::new();
    let name = "test_input_required_result_elicitation";
    let r = s.call_tool(name, json!({}), json!({}));
    let state = r.json["result"]["requestState"].clone();
    let answers = json!({"user_name": {"action": "accept", "content": {"name": "a"}}});
    let r = s.call_tool(
        name,
        json!({}),
        json!({"requestState": state, "inputResponses": answers}),
    );
    assert_eq!(r.json["result"]["resultType"], "complete", "{}", r.json);
    report("MRTR, one question (2 requests)", s.cost());
    assert_eq!(s.cost(), Cost::default());
}

#[test]
fn a_durable_call_with_two_questions() {
    let mut s = Harness::new();
    let args = json!({"service": "api"});
    let r = s.call_tool("deploy", args.clone(), json!({}));
    let state = r.json["result"]["requestState"].clone();
    let r = s.call_tool(
        "deploy",
        args.clone(),
        json!({"requestState": state, "inputResponses": accept_target()}),
    );
    let state = r.json["result"]["requestState"].clone();
    let r = s.call_tool(
        "deploy",
        args,
        json!({"requestState": state, "inputResponses": yes()}),
    );
    assert_eq!(r.json["result"]["resultType"], "complete", "{}", r.json);
    report("durable MRTR, two questions (3 requests)", s.cost());
    // Each round stores its outcome once. Rounds 2 and 3 replay without
    // waiting on I/O (the ticket's webhook is not reached here), so they
    // write no claim first (`durable::a_round_that_waits_writes_its_claim_first`).
    assert_eq!(
        s.cost(),
        Cost {
            object_requests: 3,
            rows_written: 3,
            alarms_armed: 1
        }
    );
}

#[test]
fn a_task_that_asks_once() {
    let mut s = Harness::new();
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":
            {"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}},
    });
    let r = s.call(
        "tools/call",
        json!({"name": "confirm_delete", "arguments": {"filename": "f"}, "_meta": meta}),
    );
    let id = r.json["result"]["taskId"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let get = |s: &mut TestServer| s.call("tasks/get", json!({"taskId": id, "_meta": meta}));
    get(&mut s);
    s.call(
        "tasks/update",
        json!({"taskId": id, "_meta": meta,
               "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": true}}}}),
    );
    s.fire_alarms();
    let r = get(&mut s);
    assert_eq!(r.json["result"]["status"], "completed", "{}", r.json);
    report(
        "task, one question (call, 2 polls, update, 1 alarm)",
        s.cost(),
    );
    // Each write of the task also tells the listen hub (one request each).
    assert_eq!(
        s.cost(),
        Cost {
            object_requests: 8,
            rows_written: 3,
            alarms_armed: 3
        }
    );
}

#[test]
fn a_session_call_with_two_questions() {
    use super::session::{deploy_call, get, initialize, post};
    let mut h = Harness::new();
    let sid = initialize(&mut h, json!({"elicitation": {}, "sampling": {}}));
    let opened = h.cost();
    let r = post(&mut h, Some(&sid), deploy_call());
    let ask_id = r.events[0]["id"].clone();
    post(
        &mut h,
        Some(&sid),
        json!({"jsonrpc": "2.0", "id": ask_id,
               "result": {"action": "accept", "content": {"target": "staging"}}}),
    );
    let r = get(&mut h, &sid, Some("c1:1"));
    let sample_id = r.events[0]["id"].clone();
    post(
        &mut h,
        Some(&sid),
        json!({"jsonrpc": "2.0", "id": sample_id,
               "result": {"role": "assistant", "content": {"type": "text", "text": "yes"}, "model": "m"}}),
    );
    let r = get(&mut h, &sid, Some("c1:2"));
    assert!(r.events.iter().any(|e| e["id"] == 5), "{:?}", r.events);
    let total = h.cost();
    report("session: initialize", opened);
    let call = Cost {
        object_requests: total.object_requests - opened.object_requests,
        rows_written: total.rows_written - opened.rows_written,
        alarms_armed: total.alarms_armed - opened.alarms_armed,
    };
    report(
        "session: a call with two questions (call, 2 answers, 2 GETs)",
        call,
    );
    // The session once (its stream counter); every message logged before
    // it is sent (3); the call row when it starts, when each answer claims
    // its round and when the round ends (5); what each GET confirmed (2).
    assert_eq!(
        call,
        Cost {
            object_requests: 5,
            rows_written: 11,
            alarms_armed: 0
        }
    );
}

#[test]
fn a_session_call_that_answers_at_once_writes_nothing() {
    use super::session::{initialize, post};
    let mut h = Harness::new();
    let sid = initialize(&mut h, json!({"elicitation": {}, "sampling": {}}));
    let opened = h.cost();
    let add = |id: u32| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": "add", "arguments": {"a": 1, "b": 2}}})
    };
    let r = post(&mut h, Some(&sid), add(1));
    assert_eq!(
        r.json["result"]["structuredContent"]["sum"], 3.0,
        "{}",
        r.json
    );
    let total = h.cost();
    let call = Cost {
        object_requests: total.object_requests - opened.object_requests,
        rows_written: total.rows_written - opened.rows_written,
        alarms_armed: total.alarms_armed - opened.alarms_armed,
    };
    report("session: a call that answers at once", call);
    // One request to the session's object; no stream, no call row, nothing
    // logged: the answer is the plain JSON response.
    assert_eq!(
        call,
        Cost {
            object_requests: 1,
            rows_written: 0,
            alarms_armed: 0
        }
    );
    // The next call that needs a stream still gets the first one.
    let r = post(&mut h, Some(&sid), super::session::deploy_call());
    assert_eq!(r.events[0]["id"], "c1/1/target", "{:?}", r.events);
}
