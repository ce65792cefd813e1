//! The client against a running durable-mcp fixtures worker (`wrangler
//! dev`), on every wire. Run by tests/e2e/client.test.mjs, which starts the
//! server and sets DMCP_URL; ignored otherwise.

use durable_mcp_client::{ChainError, Client, Error, Handler, Wire};
use serde_json::{json, Value};

/// Answers like a user and a model would, and remembers what it was asked.
#[derive(Default)]
struct Scripted {
    asked: std::rc::Rc<std::cell::RefCell<Vec<String>>>,
}

impl Handler for Scripted {
    fn elicit(&mut self, params: &Value) -> Value {
        let message = params["message"].as_str().unwrap_or_default().to_string();
        self.asked.borrow_mut().push(message.clone());
        let props = params["requestedSchema"]["properties"].clone();
        let mut content = serde_json::Map::new();
        for (k, schema) in props.as_object().into_iter().flatten() {
            let v = match (k.as_str(), schema["type"].as_str()) {
                ("target", _) => json!("staging"),
                (_, Some("boolean")) => json!(true),
                (_, _) => json!("Ada"),
            };
            content.insert(k.clone(), v);
        }
        json!({"action": "accept", "content": content})
    }

    fn sample(&mut self, _: &Value) -> Value {
        self.asked.borrow_mut().push("sampling".into());
        json!({"role": "assistant", "content": {"type": "text", "text": "yes"}, "model": "live-test"})
    }
}

fn url() -> String {
    std::env::var("DMCP_URL").unwrap_or_else(|_| "http://127.0.0.1:8787/mcp".into())
}

fn client(wire: Wire) -> (Client, std::rc::Rc<std::cell::RefCell<Vec<String>>>) {
    let h = Scripted::default();
    let asked = h.asked.clone();
    (Client::new(&url(), h).with_wire(wire), asked)
}

fn text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
#[ignore = "needs a server: run by tests/e2e/client.test.mjs"]
fn deploy_on_every_wire_asks_the_user_and_the_model() {
    for wire in [
        Wire::Modern,
        Wire::Session,
        Wire::Saga,
        Wire::Sketch,
        Wire::Auto,
    ] {
        let (mut c, asked) = client(wire);
        let r = c
            .call_tool("deploy", json!({"service": "api"}))
            .expect("deploy");
        assert!(
            text(&r).starts_with("Deployed api to staging"),
            "{wire:?}: {r}"
        );
        assert_eq!(
            *asked.borrow(),
            vec![
                "Where should api be deployed?".to_string(),
                "sampling".into()
            ],
            "{wire:?}"
        );
    }
}

#[test]
#[ignore = "needs a server: run by tests/e2e/client.test.mjs"]
fn a_session_call_is_picked_up_with_requests_resume() {
    struct Seen(std::rc::Rc<std::cell::RefCell<Vec<String>>>);
    impl Handler for Seen {
        fn elicit(&mut self, _: &Value) -> Value {
            json!({"action": "accept", "content": {"target": "staging"}})
        }
        fn sample(&mut self, _: &Value) -> Value {
            json!({"role": "assistant", "content": {"type": "text", "text": "yes"}, "model": "m"})
        }
        fn notify(&mut self, m: &Value) {
            self.0
                .borrow_mut()
                .push(m["method"].as_str().unwrap_or_default().to_string());
        }
    }
    let seen = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let mut c = Client::new(&url(), Seen(seen.clone()))
        .with_wire(Wire::Session)
        .with_resumable_requests(true);
    let r = c
        .call_tool("deploy", json!({"service": "api"}))
        .expect("deploy");
    assert!(text(&r).starts_with("Deployed api to staging"), "{r}");
    assert!(
        seen.borrow()
            .iter()
            .any(|m| m == "notifications/requests/resumePolicy"),
        "the server gave a resume policy: {:?}",
        seen.borrow()
    );
}

#[test]
#[ignore = "needs a server: run by tests/e2e/client.test.mjs"]
fn auto_picks_the_modern_wire_and_lists_tools() {
    let (mut c, _) = client(Wire::Auto);
    assert_eq!(c.wire().expect("wire"), Wire::Modern);
    let tools = c.list_tools().expect("tools");
    assert!(tools.iter().any(|t| t["name"] == "deploy"));
}

#[test]
#[ignore = "needs a server: run by tests/e2e/client.test.mjs"]
fn tasks_are_polled_to_their_end_and_their_questions_answered() {
    let (mut c, asked) = client(Wire::Modern);
    let r = c
        .call_tool("confirm_delete", json!({"filename": "a.txt"}))
        .expect("task");
    assert_eq!(text(&r), "Deleted a.txt.");
    assert_eq!(*asked.borrow(), vec!["Delete a.txt?".to_string()]);
    let r = c.call_tool("multi_input", json!({})).expect("task");
    assert_eq!(text(&r), "Got Ada and Ada.");
    let r = c
        .call_tool("slow_compute", json!({"seconds": 1, "label": "x"}))
        .expect("task");
    assert_eq!(text(&r), "Computed x after 1 second(s).");
    // A tool error is a completed task whose result says so.
    let r = c.call_tool("failing_job", json!({})).expect("task");
    assert_eq!(r["isError"], true);
    // A protocol error fails the task: the client reports it.
    match c.call_tool("protocol_error_job", json!({})) {
        Err(Error::Rpc { code, .. }) => assert_eq!(code, -32603),
        other => panic!("expected the task's error, got {other:?}"),
    }
    // A task started, then cancelled, ends cancelled.
    let started = c
        .start_tool("slow_compute", json!({"seconds": 60, "label": "c"}))
        .expect("start");
    let id = started.task_id().expect("a task").to_string();
    c.cancel_task(&id).expect("cancel");
    match c.wait_task(&id) {
        Err(Error::Task(why)) => assert!(why.contains("cancelled"), "{why}"),
        other => panic!("expected a cancelled task, got {other:?}"),
    }
    // Without the extension a task-only tool is refused.
    let (c2, _) = client(Wire::Modern);
    let mut c2 = c2.with_tasks(false);
    match c2.call_tool("failing_job", json!({})) {
        Err(Error::Rpc { code, .. }) => assert_eq!(code, -32021),
        other => panic!("expected -32021, got {other:?}"),
    }
}

#[test]
#[ignore = "needs a server: run by tests/e2e/client.test.mjs"]
fn chains_are_followed_checked_and_stopped() {
    let (mut c, _) = client(Wire::Modern);
    let mut seen = Vec::new();
    let steps = c
        .call_chain("chain_start", json!({"name": "Ada"}), |s| {
            seen.push(s.tool.clone())
        })
        .expect("a valid chain");
    assert_eq!(seen, ["chain_start", "greet"]);
    assert_eq!(text(&steps[1].result), "Hello, Ada!");

    match c.call_chain("chain_loop", json!({}), |_| {}) {
        Err(Error::Chain(ChainError::Cycle(t))) => assert_eq!(t, "chain_loop"),
        other => panic!("expected a cycle, got {other:?}"),
    }
    let mut n = 0;
    match c.call_chain("chain_step", json!({"n": 1}), |_| n += 1) {
        Err(Error::Chain(ChainError::TooDeep(t))) => assert_eq!(t, "chain_step"),
        other => panic!("expected too deep, got {other:?}"),
    }
    assert_eq!(n, 5, "five calls, then it stops");
    // The server refuses a chain to an unlisted tool or with bad arguments:
    // the call is a tool error, and there is nothing to follow.
    for tool in ["chain_to_unlisted", "chain_bad_arguments"] {
        let steps = c.call_chain(tool, json!({}), |_| {}).expect("a tool error");
        assert_eq!(steps.len(), 1);
        assert_eq!(steps[0].result["isError"], true, "{tool}");
    }
}
