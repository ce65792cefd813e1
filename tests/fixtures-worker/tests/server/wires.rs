//! The seed wires: saga methods (seed 000) and the streamless sketch (seed 002),
//! with the exact message shapes of the seeds.

use serde_json::{json, Value};

use crate::{assert_error, Harness};
use durable_mcp::http::HttpRequest;
use durable_mcp::testing::TestServer;

fn seed_post(h: &mut TestServer, body: Value) -> crate::Reply {
    h.send(HttpRequest {
        method: "POST".into(),
        path: "/mcp".into(),
        headers: vec![
            ("host".into(), "localhost:8787".into()),
            ("content-type".into(), "application/json".into()),
        ],
        body: body.to_string().into_bytes(),
    })
}

/// The seed-000 story over `tools/callSaga` / `tools/resumeSaga`, with
/// `completedSteps` carrying every step so far.
#[test]
fn the_deploy_story_runs_over_saga_methods() {
    let mut h = Harness::new();
    let r = seed_post(
        &mut h,
        json!({"jsonrpc": "2.0", "id": "client-req-1", "method": "tools/callSaga",
        "params": {"name": "deploy", "arguments": {"service": "api"}}}),
    );
    let res = &r.json["result"];
    assert_eq!(res["state"], "suspended", "{}", r.json);
    assert_eq!(res["steps"][0]["type"], "elicitation");
    assert_eq!(res["steps"][0]["stepId"], "target");
    assert!(res["steps"][0]["params"]["requestedSchema"].is_object());
    let token1 = res["sagaToken"].as_str().expect("token").to_string();
    let elicited = json!({"stepId": "target", "result": {"action": "accept", "content": {"target": "production"}}});

    let r = seed_post(
        &mut h,
        json!({"jsonrpc": "2.0", "id": "client-req-2", "method": "tools/resumeSaga",
        "params": {"sagaToken": token1, "completedSteps": [elicited]}}),
    );
    let res = &r.json["result"];
    assert_eq!(res["state"], "suspended", "{}", r.json);
    assert_eq!(res["steps"][0]["type"], "sampling");
    let token2 = res["sagaToken"].as_str().expect("token").to_string();
    assert_ne!(token1, token2);

    let sampled = json!({"stepId": "safety", "result": {"role": "assistant",
        "content": {"type": "text", "text": "Yes, all systems are green."}, "model": "client-side-llm-v2"}});
    let r = seed_post(
        &mut h,
        json!({"jsonrpc": "2.0", "id": "client-req-3", "method": "tools/resumeSaga",
        "params": {"sagaToken": token2, "completedSteps": [elicited, sampled]}}),
    );
    assert_eq!(r.json["id"], "client-req-3");
    let text = r.json["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.starts_with("Deployed api to production (ticket CHG-"),
        "{}",
        r.json
    );
    assert!(r.json["result"].get("state").is_none());
}

/// A step that failed on the client reaches the tool as an error it handles.
#[test]
fn a_failed_saga_step_reaches_the_tool() {
    let mut h = Harness::new();
    let r = seed_post(
        &mut h,
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/callSaga",
        "params": {"name": "test_elicitation", "arguments": {"message": "hi"}}}),
    );
    let token = r.json["result"]["sagaToken"]
        .as_str()
        .expect("token")
        .to_string();
    let step = r.json["result"]["steps"][0]["stepId"]
        .as_str()
        .expect("step")
        .to_string();
    let r = seed_post(
        &mut h,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/resumeSaga",
        "params": {"sagaToken": token, "completedSteps": [{"stepId": step, "error": {"code": -1, "message": "user rejected"}}]}}),
    );
    let text = r.json["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("user rejected"), "{}", r.json);
}

/// Saga tokens are sealed like every other: tampering is -32602.
#[test]
fn a_tampered_saga_token_is_refused() {
    let mut h = Harness::new();
    let r = seed_post(
        &mut h,
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/callSaga",
        "params": {"name": "deploy", "arguments": {"service": "api"}}}),
    );
    let token = r.json["result"]["sagaToken"]
        .as_str()
        .expect("token")
        .to_string();
    let r = seed_post(
        &mut h,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/resumeSaga",
        "params": {"sagaToken": format!("{token}x"), "completedSteps": []}}),
    );
    assert_error(&r, 400, -32602);
    let r = seed_post(
        &mut h,
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/resumeSaga", "params": {}}),
    );
    assert_error(&r, 400, -32602);
}

/// The streamless sketch: `dependent_requests` instead of a result, then a
/// retry with `dependent_responses`.
#[test]
fn the_streamless_sketch_round_trips() {
    let mut h = Harness::new();
    let call = json!({"name": "test_input_required_result_multiple_inputs", "arguments": {}});
    let r = seed_post(
        &mut h,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call,
        "dependent_responses": {}}),
    );
    assert!(r.json.get("result").is_none(), "{}", r.json);
    let deps = r.json["dependent_requests"]
        .as_object()
        .expect("dependent_requests")
        .clone();
    assert_eq!(deps["user_name"]["method"], "elicitation/create");
    assert_eq!(deps["greeting"]["method"], "sampling/createMessage");
    let state = r.json["requestState"].as_str().expect("state").to_string();
    let r = seed_post(
        &mut h,
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call,
        "requestState": state,
        "dependent_responses": {
            "user_name": {"result": {"action": "accept", "content": {"name": "octocat"}}},
            "greeting": {"result": {"role": "assistant", "content": {"type": "text", "text": "Hi!"}, "model": "m"}},
            "client_roots": {"result": {"roots": []}}
        }}),
    );
    assert_eq!(r.json["id"], 3);
    assert_eq!(
        r.json["result"]["content"][0]["text"], "Name: octocat; Greeting: Hi!; Roots: 0",
        "{}",
        r.json
    );
}

/// Without the opt-in, a request without 2026 `_meta` is held to the 2026 rules.
#[test]
fn without_opt_in_a_bare_call_is_refused() {
    let mut h = Harness::new();
    let r = seed_post(
        &mut h,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": 1, "b": 2}}}),
    );
    assert_error(&r, 400, -32602);
}

/// The saga and sketch wires hold answers to the same rule: right keys,
/// wrong types is `-32602`, and the corrected answer then goes on.
#[test]
fn wrong_typed_answers_on_the_seed_wires_are_refused_and_the_corrected_ones_go_on() {
    let mut h = Harness::new();
    let r = seed_post(
        &mut h,
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/callSaga",
        "params": {"name": "deploy", "arguments": {"service": "api"}}}),
    );
    let token = r.json["result"]["sagaToken"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let resume = |h: &mut TestServer, target: Value| {
        seed_post(
            h,
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/resumeSaga",
            "params": {"sagaToken": token, "completedSteps": [{"stepId": "target",
                "result": {"action": "accept", "content": {"target": target}}}]}}),
        )
    };
    assert_error(&resume(&mut h, json!("mars")), 400, -32602);
    assert_error(&resume(&mut h, json!(5)), 400, -32602);
    let ok = resume(&mut h, json!("staging"));
    assert_eq!(ok.json["result"]["state"], "suspended", "{}", ok.json);
    assert_eq!(ok.json["result"]["steps"][0]["type"], "sampling");

    let call = json!({"name": "test_input_required_result_multiple_inputs", "arguments": {}});
    let r = seed_post(
        &mut h,
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call,
        "dependent_responses": {}}),
    );
    let state = r.json["requestState"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let retry = |h: &mut TestServer, greeting: Value| {
        seed_post(
            h,
            json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": call,
            "requestState": state,
            "dependent_responses": {
                "user_name": {"result": {"action": "accept", "content": {"name": "octocat"}}},
                "greeting": {"result": greeting},
                "client_roots": {"result": {"roots": []}}
            }}),
        )
    };
    assert_error(
        &retry(&mut h, json!({"role": "assistant", "content": "Hi!"})),
        400,
        -32602,
    );
    let done = retry(
        &mut h,
        json!({"role": "assistant", "content": {"type": "text", "text": "Hi!"}}),
    );
    assert_eq!(
        done.json["result"]["content"][0]["text"], "Name: octocat; Greeting: Hi!; Roots: 0",
        "{}",
        done.json
    );
}
