//! Durable mode on the host: each call's journal in its own store (as the
//! Worker keeps it in a Durable Object), accepted once per round.

use std::cell::Cell;
use std::rc::Rc;

use serde_json::{json, Value};

use crate::{assert_error, Harness};
use durable_mcp::engine::{form, Cx, ToolError};
use durable_mcp::kept::Status;
use durable_mcp::store::CallStore;
use durable_mcp::testing::TestServer;
use durable_mcp::token::KeyRing;
use durable_mcp::{text, CallToolResult, McpError, Tool};

/// A harness with a durable tool whose `once` effect is counted.
fn with_counter() -> (TestServer, Rc<Cell<u32>>) {
    let mut h = Harness::new();
    let effects = Rc::new(Cell::new(0));
    let counter = effects.clone();
    h.server.registry.tool(
        Tool::new(
            "book",
            async move |cx: &mut Cx, _: Value| -> Result<CallToolResult, ToolError> {
                let c = counter.clone();
                let booking: u32 = cx
                    .once("booking", async || {
                        c.set(c.get() + 1);
                        Ok(c.get())
                    })
                    .await?;
                let a = cx
                    .elicit_with(
                        "confirm",
                        form("Confirm?", json!({"type": "object", "properties": {}})),
                    )
                    .await?;
                Ok(text(format!("booking {booking} {}", a.action)))
            },
        )
        .description("books once")
        .durable(),
    );
    (h, effects)
}

fn first_round(h: &mut TestServer) -> String {
    let r = h.call("tools/call", json!({"name": "book", "arguments": {}}));
    assert_eq!(
        r.json["result"]["resultType"], "input_required",
        "{}",
        r.json
    );
    r.json["result"]["requestState"]
        .as_str()
        .expect("state")
        .to_string()
}

fn answer(h: &mut TestServer, state: &str) -> crate::Reply {
    h.call(
        "tools/call",
        json!({"name": "book", "arguments": {}, "requestState": state,
               "inputResponses": {"confirm": {"action": "accept", "content": {}}}}),
    )
}

/// A round is accepted once. An exact retry (same state, same answers: the
/// client lost the reply) gets the same reply again without running
/// anything; a retry with other answers is refused.
#[test]
fn an_exact_retry_gets_the_same_reply_and_other_answers_are_refused() {
    let (mut h, effects) = with_counter();
    let state = first_round(&mut h);
    let first = answer(&mut h, &state);
    assert_eq!(
        first.json["result"]["content"][0]["text"], "booking 1 accept",
        "{}",
        first.json
    );
    let again = answer(&mut h, &state);
    assert_eq!(again.status, 200, "{}", again.json);
    assert_eq!(again.json, first.json, "the same reply, byte for byte");
    let other = h.call(
        "tools/call",
        json!({"name": "book", "arguments": {}, "requestState": state,
               "inputResponses": {"confirm": {"action": "decline"}}}),
    );
    assert_error(&other, 400, -32602);
    assert!(other.json["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .contains("already used"));
    assert_eq!(effects.get(), 1);
}

/// A lost `input_required` reply is recoverable too: the retry gets the
/// same requests and the same next state, which still continues the call.
#[test]
fn an_exact_retry_of_a_paused_round_gets_the_same_next_state() {
    let mut h = Harness::new();
    let args = json!({"service": "api"});
    let r1 = h.call_tool("deploy", args.clone(), json!({}));
    let s1 = r1.json["result"]["requestState"].clone();
    let target = json!({"requestState": s1,
        "inputResponses": {"target": {"action": "accept", "content": {"target": "staging"}}}});
    let r2 = h.call_tool("deploy", args.clone(), target.clone());
    assert_eq!(
        r2.json["result"]["resultType"], "input_required",
        "{}",
        r2.json
    );
    let again = h.call_tool("deploy", args.clone(), target);
    assert_eq!(again.json, r2.json);
    let s2 = again.json["result"]["requestState"].clone();
    let done = h.call_tool(
        "deploy",
        args,
        json!({"requestState": s2, "inputResponses":
            {"safety": {"role": "assistant", "content": {"type": "text", "text": "yes"}}}}),
    );
    assert_eq!(
        done.json["result"]["resultType"], "complete",
        "{}",
        done.json
    );
}

/// `cx.once` in a stateless tool is refused: its requestState could be
/// replayed until it expires and run the effect again.
#[test]
fn once_in_a_stateless_tool_is_refused() {
    let mut h = Harness::new();
    h.server.registry.tool(Tool::new(
        "stateless_once",
        async |cx: &mut Cx, _: Value| -> Result<CallToolResult, ToolError> {
            let n: u32 = cx.once("n", async || Ok(1)).await?;
            Ok(text(n.to_string()))
        },
    ));
    let r = h.call_tool("stateless_once", json!({}), json!({}));
    assert_error(&r, 500, -32603);
    assert!(r.json["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .contains("needs a durable tool"));
}

/// The idempotency key of an effect is the same on every round and retry
/// of a call, and differs between calls.
#[test]
fn idempotency_keys_are_stable_per_call() {
    let mut h = Harness::new();
    h.server.registry.tool(
        Tool::new(
            "keys",
            async |cx: &mut Cx, _: Value| -> Result<CallToolResult, ToolError> {
                let before = cx.idempotency_key("fx");
                cx.elicit_with(
                    "go",
                    form("Go?", json!({"type": "object", "properties": {}})),
                )
                .await?;
                Ok(text(format!("{before} {}", cx.idempotency_key("fx"))))
            },
        )
        .durable(),
    );
    let mut keys = Vec::new();
    for _ in 0..2 {
        let r = h.call_tool("keys", json!({}), json!({}));
        let state = r.json["result"]["requestState"].clone();
        let r = h.call_tool(
            "keys",
            json!({}),
            json!({"requestState": state, "inputResponses": {"go": {"action": "accept", "content": {}}}}),
        );
        let text = r.json["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let (a, b) = text.split_once(' ').expect("two keys");
        assert_eq!(a, b, "the same key in both rounds");
        assert!(a.ends_with(":fx"), "{a}");
        keys.push(a.to_string());
    }
    assert_ne!(keys[0], keys[1], "another call, another key");
}

/// A retry while the same round is running is a conflict, not a second run.
#[test]
fn a_concurrent_retry_of_a_running_round_conflicts() {
    let (mut h, effects) = with_counter();
    let state = first_round(&mut h);
    // Another isolate claimed this round a moment ago.
    for object in h.objects.values() {
        for id in object.call.ids() {
            let mut call = object.call.load(&id).expect("load").expect("stored");
            call.status = Status::Working;
            call.claimed_at_ms = h.now_ms;
            object.call.save(&id, &call).expect("save");
        }
    }
    let r = answer(&mut h, &state);
    assert_error(&r, 409, -32010);
    // A claim older than the timeout is taken to have died and is taken over.
    h.now_ms += 120_000;
    let r = answer(&mut h, &state);
    assert_eq!(
        r.json["result"]["content"][0]["text"], "booking 1 accept",
        "{}",
        r.json
    );
    assert_eq!(effects.get(), 1);
}

/// Resolves on its second poll, as a fetch does in the Worker.
struct WaitOnce(bool);

impl std::future::Future for WaitOnce {
    type Output = ();
    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        task: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        if self.0 {
            return std::task::Poll::Ready(());
        }
        self.0 = true;
        task.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}

/// A durable round writes the claim that keeps a concurrent retry out only
/// when its body has to wait (until then no other request can run in the
/// object): a round that waits writes the claim, then its outcome; one that
/// runs through writes its outcome alone. Likewise only a written claim is
/// released when the round fails.
#[test]
fn a_round_that_waits_writes_its_claim_first() {
    let rows_for = |wait: bool, fail: bool| {
        let mut h = Harness::new();
        h.server.registry.tool(
            Tool::new(
                "step",
                async move |cx: &mut Cx, _: Value| -> Result<CallToolResult, ToolError> {
                    let a = cx
                        .elicit_with(
                            "go",
                            form("Go?", json!({"type": "object", "properties": {}})),
                        )
                        .await?;
                    if wait {
                        WaitOnce(false).await;
                    }
                    if fail {
                        return Err(ToolError::Protocol(McpError::invalid_params("refused")));
                    }
                    Ok(text(a.action))
                },
            )
            .durable(),
        );
        let r = h.call("tools/call", json!({"name": "step", "arguments": {}}));
        let state = r.json["result"]["requestState"].clone();
        let r = h.call(
            "tools/call",
            json!({"name": "step", "arguments": {}, "requestState": state,
                   "inputResponses": {"go": {"action": "accept", "content": {}}}}),
        );
        if fail {
            assert_eq!(r.json["error"]["code"], -32602, "{}", r.json);
        } else {
            assert_eq!(
                r.json["result"]["content"][0]["text"], "accept",
                "{}",
                r.json
            );
        }
        h.cost().rows_written
    };
    // The pause, then the completed call (with its reply, for a lost one).
    assert_eq!(rows_for(false, false), 2);
    // The same, and the claim between them.
    assert_eq!(rows_for(true, false), 3);
    // A failed round that ran through leaves the pause as it was; one that
    // waited releases its claim.
    assert_eq!(rows_for(false, true), 1);
    assert_eq!(rows_for(true, true), 3);
}

/// A call whose stored state is gone is rebuilt from the token.
#[test]
fn lost_storage_is_rebuilt_from_the_token() {
    let (mut h, effects) = with_counter();
    let state = first_round(&mut h);
    h.objects.clear();
    let r = answer(&mut h, &state);
    assert_eq!(
        r.json["result"]["content"][0]["text"], "booking 1 accept",
        "{}",
        r.json
    );
    assert_eq!(
        effects.get(),
        1,
        "the memoized effect came back with the journal"
    );
}

/// A token signed with the previous key of the ring still completes its call.
#[test]
fn a_token_from_the_previous_key_completes_after_rotation() {
    let (mut h, _) = with_counter();
    h.server.config.keys = KeyRing::parse("old:old-key-0123456789abcdef").expect("ring");
    let state = first_round(&mut h);
    h.server.config.keys =
        KeyRing::parse("new:new-key-0123456789abcdef,old:old-key-0123456789abcdef").expect("ring");
    let r = answer(&mut h, &state);
    assert_eq!(
        r.json["result"]["content"][0]["text"], "booking 1 accept",
        "{}",
        r.json
    );
    h.server.config.keys = KeyRing::parse("new:new-key-0123456789abcdef").expect("ring");
    let state = first_round(&mut h);
    assert!(state.starts_with("v1."));
}

/// State issued to one principal does not continue for another.
#[test]
fn state_is_bound_to_the_principal() {
    let (mut h, _) = with_counter();
    h.server.config.sign_in = durable_mcp::auth::SignIn::ApiTokens(vec![
        ("tok-a".into(), "alice".into()),
        ("tok-b".into(), "bob".into()),
    ]);
    let auth = |t: &'static str| {
        move |hs: &mut Vec<(String, String)>| super::set(hs, "authorization", Some(t))
    };
    let r = h.request(
        "tools/call",
        json!({"name": "book", "arguments": {}}),
        auth("Bearer tok-a"),
    );
    let state = r.json["result"]["requestState"]
        .as_str()
        .expect("state")
        .to_string();
    let params = json!({"name": "book", "arguments": {}, "requestState": state,
        "inputResponses": {"confirm": {"action": "accept", "content": {}}}});
    let r = h.request("tools/call", params.clone(), auth("Bearer tok-b"));
    assert_error(&r, 400, -32602);
    assert!(r.json["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .contains("principal"));
    let r = h.request("tools/call", params, auth("Bearer tok-a"));
    assert_eq!(r.json["result"]["resultType"], "complete", "{}", r.json);
}

/// A durable call is checked (Origin, Host, auth) before it is routed to
/// its object, which trusts the Worker's checks.
#[test]
fn a_durable_call_from_a_foreign_origin_is_refused() {
    let (mut h, effects) = with_counter();
    let r = h.request(
        "tools/call",
        json!({"name": "book", "arguments": {}}),
        |hs| super::set(hs, "origin", Some("http://evil.example")),
    );
    assert_error(&r, 403, -32600);
    assert!(h.objects.is_empty(), "nothing was routed to an object");
    assert_eq!(effects.get(), 0);
}

/// A call's object arms its idle alarm once, when the call is stored; when
/// it fires while the call was touched since, it moves to the new idle
/// deadline, and only a call idle for the whole TTL is deleted.
#[test]
fn an_idle_call_object_is_deleted_only_after_a_whole_idle_ttl() {
    let (mut h, _) = with_counter();
    let ttl = h.server.config.state_ttl_ms;
    let state = first_round(&mut h);
    let name = h.objects.keys().next().expect("the call's object").clone();
    let armed = h.objects[&name].alarm_at.expect("armed when stored");
    assert_eq!(armed, h.now_ms + ttl);
    // Touched half-way: no re-arming on the way…
    h.now_ms += ttl / 2;
    let r = h.call(
        "tools/call",
        json!({"name": "book", "arguments": {}, "requestState": state,
               "inputResponses": {"confirm": {"action": "decline"}}}),
    );
    assert_eq!(r.status, 200, "{}", r.json);
    assert_eq!(h.objects[&name].alarm_at, Some(armed));
    // …so the first alarm finds it touched and moves on.
    h.now_ms = armed;
    h.fire_alarms();
    assert_eq!(h.objects[&name].alarm_at, Some(armed + ttl / 2));
    h.now_ms = armed + ttl / 2;
    h.fire_alarms();
    assert!(
        !h.objects.contains_key(&name),
        "idle for a whole TTL: deleted"
    );
}

/// Sharded (the default), calls share their shard's object: it arms one
/// alarm for the first call it stores, not one per call; when it fires it
/// deletes only the calls idle a whole TTL and moves to the oldest left;
/// with none left the object goes.
#[test]
fn calls_share_their_shards_object_and_its_alarm() {
    let (mut h, effects) = with_counter();
    h.server.config.call_shards = 1;
    let ttl = h.server.config.state_ttl_ms;
    let t0 = h.now_ms;
    let early = first_round(&mut h);
    h.now_ms += ttl / 2;
    let late = first_round(&mut h);
    let names: Vec<&String> = h.objects.keys().collect();
    assert_eq!(names, ["calls:0"], "both calls in shard 0's object");
    let shard = &h.objects["calls:0"];
    assert_eq!(shard.call.len(), 2);
    assert_eq!(shard.alarm_at, Some(t0 + ttl), "armed by the first call");
    assert_eq!(h.cost().alarms_armed, 1, "the second call found it armed");

    // The first call idles out; the second stays, and the alarm follows it.
    h.now_ms = t0 + ttl;
    h.fire_alarms();
    let shard = &h.objects["calls:0"];
    assert_eq!(shard.call.len(), 1, "only the idle call went");
    assert_eq!(shard.alarm_at, Some(t0 + ttl / 2 + ttl));
    let r = answer(&mut h, &late);
    assert_eq!(r.json["result"]["content"][0]["text"], "booking 2 accept");
    // The one that went had idled out with its state: refused.
    let r = answer(&mut h, &early);
    assert_error(&r, 400, -32602);
    assert_eq!(effects.get(), 2);

    h.now_ms += 2 * ttl;
    h.fire_alarms();
    assert!(h.objects.is_empty(), "no calls left: the object went");
}

/// `CALL_SHARDS=0`: each call has an object of its own.
#[test]
fn unsharded_calls_each_have_their_own_object() {
    let (mut h, _) = with_counter();
    h.server.config.call_shards = 0;
    first_round(&mut h);
    first_round(&mut h);
    assert_eq!(h.objects.len(), 2);
    for (name, object) in &h.objects {
        let id = name.strip_prefix("call:").expect("named by its call");
        assert_eq!(object.call.ids(), [id]);
    }
}

/// A call's id names its shard, so changing `CALL_SHARDS` moves only new
/// calls: a paused one is still answered from the object that holds it.
#[test]
fn a_paused_call_stays_in_its_shard_when_the_shard_count_changes() {
    let (mut h, effects) = with_counter();
    h.server.config.call_shards = 16;
    let state = first_round(&mut h);
    let name = h.objects.keys().next().expect("an object").clone();
    assert!(name.starts_with("calls:"), "{name}");
    h.server.config.call_shards = 3;
    let r = answer(&mut h, &state);
    assert_eq!(r.json["result"]["content"][0]["text"], "booking 1 accept");
    assert_eq!(h.objects.keys().collect::<Vec<_>>(), [&name]);
    assert_eq!(h.objects[&name].call.len(), 1);
    h.server.config.call_shards = 0;
    assert_eq!(
        answer(&mut h, &state).json,
        r.json,
        "an exact retry, same object"
    );
    assert_eq!(h.objects.len(), 1);
    assert_eq!(effects.get(), 1);
}

/// In a busy shard the next call is due a moment after the one the alarm
/// deleted: the alarm moves at least a 64th of the TTL ahead, not a moment.
#[test]
fn a_shards_alarm_batches_calls_due_close_together() {
    let (mut h, _) = with_counter();
    h.server.config.call_shards = 1;
    let ttl = h.server.config.state_ttl_ms;
    let t0 = h.now_ms;
    first_round(&mut h);
    h.now_ms += 1;
    first_round(&mut h);
    h.now_ms = t0 + ttl;
    h.fire_alarms();
    let shard = &h.objects["calls:0"];
    assert_eq!(shard.call.len(), 1);
    assert_eq!(shard.alarm_at, Some(t0 + ttl + ttl / 64));
    h.now_ms = t0 + ttl + ttl / 64;
    h.fire_alarms();
    assert!(h.objects.is_empty());
}
