//! The tasks extension (SEP-2663) on the host: a task is created in its own
//! object before the answer, its alarm runs it, `tasks/update` feeds it,
//! `tasks/cancel` stops it, and it goes after its TTL.

use serde_json::{json, Value};

use durable_mcp::task::TaskStore;
use durable_mcp::testing::TestServer;

use super::{assert_error, Harness, Reply};

const EXT: &str = "io.modelcontextprotocol/tasks";

/// `_meta` declaring the tasks extension (and elicitation).
fn meta(tasks: bool) -> Value {
    let mut caps = json!({"elicitation": {}});
    if tasks {
        caps["extensions"] = json!({ EXT: {} });
    }
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
    })
}

fn call(s: &mut TestServer, tool: &str, args: Value, tasks: bool) -> Reply {
    s.call(
        "tools/call",
        json!({"name": tool, "arguments": args, "_meta": meta(tasks)}),
    )
}

fn task_method(s: &mut TestServer, method: &str, task_id: &str, extra: Value) -> Reply {
    let mut params = json!({"taskId": task_id, "_meta": meta(true)});
    if let (Some(p), Value::Object(e)) = (params.as_object_mut(), extra) {
        p.extend(e);
    }
    s.call(method, params)
}

fn get(s: &mut TestServer, task_id: &str) -> Value {
    let r = task_method(s, "tasks/get", task_id, json!({}));
    assert_eq!(r.status, 200, "{}", r.json);
    r.json["result"].clone()
}

/// Moves the clock by `ms` and fires what is due, until nothing is.
fn advance(s: &mut TestServer, ms: u64) {
    s.now_ms += ms;
    for _ in 0..20 {
        let due = s
            .objects
            .values()
            .any(|o| o.alarm_at.is_some_and(|at| at <= s.now_ms));
        if !due {
            return;
        }
        s.fire_alarms();
    }
}

fn created(r: &Reply) -> String {
    assert_eq!(r.status, 200, "{}", r.json);
    let t = &r.json["result"];
    assert_eq!(t["resultType"], "task", "{t}");
    for absent in ["result", "error", "inputRequests", "requestState", "task"] {
        assert!(t.get(absent).is_none(), "{absent} on {t}");
    }
    assert!(t["ttlMs"].is_u64() && t["pollIntervalMs"].is_u64(), "{t}");
    t["taskId"].as_str().expect("taskId").to_string()
}

#[test]
fn a_task_is_readable_at_once_and_completes_when_its_timer_is_due() {
    let mut s = Harness::new();
    let id = created(&call(
        &mut s,
        "slow_compute",
        json!({"seconds": 2, "label": "x"}),
        true,
    ));
    let t = get(&mut s, &id);
    assert_eq!(t["status"], "working");
    assert_eq!(t["statusMessage"], "computing for 2 s");
    assert_eq!(t["resultType"], "complete");
    advance(&mut s, 1000);
    assert_eq!(get(&mut s, &id)["status"], "working");
    advance(&mut s, 1000);
    let t = get(&mut s, &id);
    assert_eq!(t["status"], "completed", "{t}");
    assert_eq!(
        t["result"]["content"][0]["text"],
        "Computed x after 2 second(s)."
    );
    assert!(t.get("inputRequests").is_none());
}

#[test]
fn without_the_extension_a_task_tool_runs_as_a_call_and_a_task_only_tool_is_refused() {
    let mut s = Harness::new();
    let r = call(&mut s, "slow_compute", json!({"seconds": 0}), false);
    assert_eq!(r.json["result"]["resultType"], "complete", "{}", r.json);
    let r = call(&mut s, "failing_job", json!({}), false);
    assert_error(&r, 400, -32021);
    assert_eq!(
        r.json["error"]["data"]["requiredCapabilities"]["extensions"][EXT],
        json!({})
    );
    // A body that finishes without pausing answers directly, even with it.
    let r = call(&mut s, "slow_compute", json!({"seconds": 0}), true);
    assert_eq!(r.json["result"]["resultType"], "complete", "{}", r.json);
    assert!(s
        .objects
        .values()
        .all(|o| o.task.load().ok().flatten().is_none()));
}

#[test]
fn tool_errors_complete_with_is_error_and_protocol_errors_fail() {
    let mut s = Harness::new();
    let failing = created(&call(&mut s, "failing_job", json!({}), true));
    let broken = created(&call(&mut s, "protocol_error_job", json!({}), true));
    advance(&mut s, 1000);
    let t = get(&mut s, &failing);
    assert_eq!(t["status"], "completed");
    assert_eq!(t["result"]["isError"], true);
    let t = get(&mut s, &broken);
    assert_eq!(t["status"], "failed");
    assert_eq!(t["error"]["code"], -32603);
    assert!(t.get("result").is_none());
}

#[test]
fn input_is_asked_on_tasks_get_and_answered_with_tasks_update_in_parts() {
    let mut s = Harness::new();
    let id = created(&call(&mut s, "multi_input", json!({}), true));
    let t = get(&mut s, &id);
    assert_eq!(t["status"], "input_required");
    let asks = t["inputRequests"]
        .as_object()
        .expect("inputRequests")
        .clone();
    assert_eq!(
        asks.keys().collect::<Vec<_>>(),
        vec!["first", "second"],
        "{t}"
    );
    assert_eq!(asks["first"]["method"], "elicitation/create");

    let accept =
        |name: &str| json!({"action": "accept", "content": {"name": name, "confirm": true}});
    // A wrong-shaped answer is refused and the question stays open.
    let r = task_method(
        &mut s,
        "tasks/update",
        &id,
        json!({"inputResponses": {"first": {"action": "maybe"}}}),
    );
    assert_error(&r, 400, -32602);
    // So is one of the right keys but the wrong types (a number for a
    // name, a string for a boolean).
    for content in [json!({"name": 5}), json!({"confirm": "yes"})] {
        let r = task_method(
            &mut s,
            "tasks/update",
            &id,
            json!({"inputResponses": {"first": {"action": "accept", "content": content}}}),
        );
        assert_error(&r, 400, -32602);
    }
    let r = task_method(
        &mut s,
        "tasks/update",
        &id,
        json!({"inputResponses": {"first": accept("Ada"), "nope": {"x": 1}}}),
    );
    assert_eq!(r.json["result"], json!({"resultType": "complete"}));
    let t = get(&mut s, &id);
    assert_eq!(t["status"], "input_required");
    assert_eq!(
        t["inputRequests"]
            .as_object()
            .map(|m| m.keys().cloned().collect::<Vec<_>>()),
        Some(vec!["second".to_string()])
    );
    task_method(
        &mut s,
        "tasks/update",
        &id,
        json!({"inputResponses": {"second": accept("Grace")}}),
    );
    advance(&mut s, 0);
    let t = get(&mut s, &id);
    assert_eq!(t["status"], "completed", "{t}");
    assert_eq!(t["result"]["content"][0]["text"], "Got Ada and Grace.");
}

#[test]
fn cancel_stops_a_working_task_and_is_an_idempotent_ack() {
    let mut s = Harness::new();
    let id = created(&call(&mut s, "slow_compute", json!({"seconds": 60}), true));
    let r = task_method(&mut s, "tasks/cancel", &id, json!({}));
    assert_eq!(r.json["result"], json!({"resultType": "complete"}));
    advance(&mut s, 61_000);
    assert_eq!(get(&mut s, &id)["status"], "cancelled");
    let r = task_method(&mut s, "tasks/cancel", &id, json!({}));
    assert_eq!(r.json["result"], json!({"resultType": "complete"}));
}

#[test]
fn unknown_ids_other_principals_and_missing_extension_are_refused() {
    let mut s = Harness::with_config(|c| {
        c.sign_in = durable_mcp::auth::SignIn::ApiTokens(vec![
            ("tok-a".into(), "alice".into()),
            ("tok-b".into(), "bob".into()),
        ]);
    });
    let bearer = |tok: &'static str| {
        move |h: &mut Vec<(String, String)>| {
            h.push(("authorization".into(), format!("Bearer {tok}")))
        }
    };
    let r = s.request(
        "tools/call",
        json!({"name": "slow_compute", "arguments": {"seconds": 5}, "_meta": meta(true)}),
        bearer("tok-a"),
    );
    let id = created(&r);
    let get_as = |s: &mut TestServer, tok: &'static str, task: &str| {
        s.request(
            "tasks/get",
            json!({"taskId": task, "_meta": meta(true)}),
            bearer(tok),
        )
    };
    assert_eq!(
        get_as(&mut s, "tok-a", &id).json["result"]["taskId"],
        id.as_str()
    );
    assert_error(&get_as(&mut s, "tok-b", &id), 400, -32602);
    assert_error(
        &get_as(&mut s, "tok-a", "tasks-conformance-nonexistent-12345"),
        400,
        -32602,
    );
    assert_error(&get_as(&mut s, "tok-a", &"0".repeat(32)), 400, -32602);
    let r = s.request(
        "tasks/get",
        json!({"taskId": id, "_meta": meta(false)}),
        bearer("tok-a"),
    );
    assert_error(&r, 400, -32021);
    // Removed methods are unknown.
    let r = s.request("tasks/list", json!({"_meta": meta(true)}), bearer("tok-a"));
    assert_eq!(r.json["error"]["code"], -32601);
}

#[test]
fn a_task_after_mrtr_rounds_remembers_the_answers_and_expires_after_its_ttl() {
    let mut s = Harness::new();
    let r = call(&mut s, "test_tool_with_task", json!({}), true);
    let first = &r.json["result"];
    assert_eq!(first["resultType"], "input_required", "{first}");
    assert!(first.get("taskId").is_none());
    let state = first["requestState"].clone();
    let r = s.call(
        "tools/call",
        json!({"name": "test_tool_with_task", "arguments": {}, "_meta": meta(true),
               "requestState": state,
               "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Alice"}}}}),
    );
    let id = created(&r);
    advance(&mut s, 0);
    advance(&mut s, 300);
    let t = get(&mut s, &id);
    assert_eq!(t["status"], "completed", "{t}");
    assert_eq!(
        t["result"]["content"][0]["text"],
        "Hello, Alice, from a task."
    );
    // Gone after ttlMs: the alarm deletes the object's storage.
    let ttl = s.server.config.task_ttl_ms;
    advance(&mut s, ttl);
    assert!(!s.objects.contains_key(&format!("task:{id}")));
    assert_error(
        &task_method(&mut s, "tasks/get", &id, json!({})),
        400,
        -32602,
    );
}

#[test]
fn discover_advertises_the_extension() {
    let mut s = Harness::new();
    let r = s.call("server/discover", json!({}));
    assert_eq!(
        r.json["result"]["capabilities"]["extensions"][EXT],
        json!({})
    );
    assert!(r.json["result"]["capabilities"].get("tasks").is_none());
}

#[test]
fn listen_streams_that_name_a_task_hear_its_changes() {
    let mut s = Harness::new();
    let id = created(&call(
        &mut s,
        "slow_compute",
        json!({"seconds": 1, "label": "n"}),
        true,
    ));
    // Without the extension a stream may not ask for tasks.
    let r = s.call(
        "subscriptions/listen",
        json!({"notifications": {"taskIds": [id]}, "_meta": meta(false)}),
    );
    assert_error(&r, 400, -32021);
    let r = s.call(
        "subscriptions/listen",
        json!({"notifications": {"taskIds": [id, "not-a-task"]}, "_meta": meta(true)}),
    );
    assert_eq!(r.status, 200);
    assert_eq!(
        r.events[0]["params"]["notifications"]["taskIds"],
        json!([id]),
        "the ack names the tasks it will report"
    );
    advance(&mut s, 1000);
    let frames: Vec<&Value> = s
        .hub_frames
        .iter()
        .filter(|f| f["method"] == "notifications/tasks")
        .collect();
    let last = frames.last().expect("a notifications/tasks frame");
    assert_eq!(last["params"]["taskId"], id.as_str());
    assert_eq!(last["params"]["status"], "completed");
    assert_eq!(
        last["params"]["result"]["content"][0]["text"],
        "Computed n after 1 second(s)."
    );
    assert_eq!(
        last["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        7
    );
}

/// The requests the hubs received (`hub`, `hub:<n>`), by hub.
fn hub_requests(s: &TestServer) -> Vec<(String, u64)> {
    s.per_object
        .iter()
        .filter(|(name, _)| name.as_str() == "hub" || name.starts_with("hub:"))
        .map(|(name, n)| (name.clone(), *n))
        .collect()
}

#[test]
fn a_task_nobody_listens_for_costs_no_hub_a_request() {
    let mut s = Harness::new();
    let id = created(&call(
        &mut s,
        "slow_compute",
        json!({"seconds": 1, "label": "n"}),
        true,
    ));
    advance(&mut s, 1000);
    assert_eq!(get(&mut s, &id)["status"], "completed");
    assert_eq!(hub_requests(&s), vec![], "no hub hears of it");
    // Its entry in the operator's index went to one index shard.
    let index: Vec<_> = s
        .per_object
        .keys()
        .filter(|n| n.starts_with("index:"))
        .collect();
    assert_eq!(index.len(), 1, "{index:?}");
}

#[test]
fn a_task_change_reaches_only_the_hub_whose_stream_named_it() {
    let mut s = Harness::with_config(|c| c.listen_shards = 4);
    let id = created(&call(
        &mut s,
        "slow_compute",
        json!({"seconds": 1, "label": "n"}),
        true,
    ));
    let other = created(&call(
        &mut s,
        "slow_compute",
        json!({"seconds": 1, "label": "o"}),
        true,
    ));
    let r = s.call(
        "subscriptions/listen",
        json!({"notifications": {"taskIds": [id]}, "_meta": meta(true)}),
    );
    assert_eq!(r.status, 200);
    let listened = hub_requests(&s);
    assert_eq!(listened.len(), 1, "one hub holds the stream: {listened:?}");
    let hub = listened[0].0.clone();
    advance(&mut s, 1000);
    assert_eq!(get(&mut s, &other)["status"], "completed");
    let frames: Vec<&Value> = s
        .hub_frames
        .iter()
        .filter(|f| f["method"] == "notifications/tasks")
        .collect();
    assert!(frames.iter().all(|f| f["params"]["taskId"] == id.as_str()));
    assert_eq!(
        frames.last().map(|f| f["params"]["status"].clone()),
        Some(json!("completed"))
    );
    // Only that hub heard, and only of the task its stream named: the
    // stream's request, then one per change of that task.
    let heard = hub_requests(&s);
    assert_eq!(heard.len(), 1, "{heard:?}");
    assert_eq!(heard[0].0, hub);
    assert!(
        heard[0].1 >= 2 && heard[0].1 <= 1 + frames.len() as u64,
        "{heard:?}"
    );
}

#[test]
fn a_stream_names_a_bounded_number_of_tasks() {
    let mut s = Harness::new();
    let ids: Vec<String> = (0..65).map(|i| format!("{i:032x}")).collect();
    let r = s.call(
        "subscriptions/listen",
        json!({"notifications": {"taskIds": ids}, "_meta": meta(true)}),
    );
    assert_error(&r, 400, -32602);
    assert_eq!(hub_requests(&s).iter().map(|(_, n)| n).sum::<u64>(), 1);
    assert!(
        !s.per_object.keys().any(|n| n.starts_with("task:")),
        "no task was told"
    );
}

#[test]
fn a_stream_naming_an_unknown_task_writes_nothing_there() {
    let mut s = Harness::new();
    let absent = format!("{:032x}", 7);
    let r = s.call(
        "subscriptions/listen",
        json!({"notifications": {"taskIds": [absent]}, "_meta": meta(true)}),
    );
    assert_eq!(r.status, 200);
    let task = s.objects.get(&format!("task:{absent}")).expect("told");
    assert_eq!(task.task.writes(), 0, "an unknown task stores nothing");
    assert_eq!(
        task.task.watchers().unwrap_or_default(),
        Vec::<String>::new()
    );
}

#[test]
fn the_operators_index_hears_of_a_tasks_status_changes_not_each_slice() {
    let mut s = Harness::new();
    let id = created(&call(
        &mut s,
        "count_slowly",
        json!({"to": 5, "step_ms": 100}),
        true,
    ));
    for _ in 0..10 {
        advance(&mut s, 100);
    }
    assert_eq!(get(&mut s, &id)["status"], "completed");
    let task_writes = s.objects[&format!("task:{id}")].task.writes();
    let index: u64 = s
        .per_object
        .iter()
        .filter(|(n, _)| n.starts_with("index:"))
        .map(|(_, n)| n)
        .sum();
    // Working (at the first pause), then completed; never once per slice.
    assert_eq!(
        index, 2,
        "index requests; the task wrote {task_writes} times"
    );
    assert!(
        task_writes > index + 3,
        "the task ran slices: {task_writes}"
    );
}
